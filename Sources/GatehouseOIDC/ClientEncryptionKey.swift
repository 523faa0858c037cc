import Crypto
import CryptoExtras
import FoundationEssentials
import GatehouseEncoding

/// The client's key for encrypted ID tokens and UserInfo (`GATEHOUSE_CLIENT_ENCRYPTION_KEY`): an
/// RSA key (2048 bits or more; RSA-OAEP, RSA-OAEP-256) or a P-256 key (ECDH-ES, ECDH-ES+A128KW,
/// ECDH-ES+A256KW). Its public half is published in `/.well-known/jwks.json` with `"use":"enc"`;
/// its `kid` is its RFC 7638 thumbprint, so a provider's JWE names which key it used.
public struct ClientEncryptionKey: Sendable, CustomStringConvertible {
    enum Material: Sendable {
        case rsa(SharedRSAKey<_RSA.Encryption.PrivateKey>)
        case p256(P256.KeyAgreement.PrivateKey)
    }

    let material: Material
    public let keyID: String
    /// The public JWK (`kty`, `use`, `kid`, and `n`/`e` or `crv`/`x`/`y`).
    public let publicJWK: [String: JSONValue]

    public var description: String { "ClientEncryptionKey(kid: \(keyID))" }

    /// - Throws: ``JWEError/unusableKey(_:)`` when the PEM holds neither kind of private key.
    public init(pem: String) throws(JWEError) {
        if let key = try? P256.KeyAgreement.PrivateKey(pemRepresentation: pem) {
            let point = Array(key.publicKey.x963Representation)  // 0x04 || x || y
            let x = Base64URL.encode(point[1..<33]), y = Base64URL.encode(point[33..<65])
            keyID = Self.thumbprint(#"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#)
            publicJWK = ["kty": .string("EC"), "crv": .string("P-256"), "x": .string(x), "y": .string(y),
                         "use": .string("enc"), "kid": .string(keyID)]
            material = .p256(key)
        } else if let key = try? _RSA.Encryption.PrivateKey(pemRepresentation: pem) {
            // Keys under 2048 bits never get here: swift-crypto refuses to read them.
            let components = try? _RSA.Signing.PublicKey(derRepresentation: key.publicKey.derRepresentation).getKeyPrimitives()
            guard let components else { throw .unusableKey("an RSA key whose modulus cannot be read") }
            let n = Base64URL.encode(Array(components.modulus)), e = Base64URL.encode(Array(components.publicExponent))
            keyID = Self.thumbprint(#"{"e":"\#(e)","kty":"RSA","n":"\#(n)"}"#)
            publicJWK = ["kty": .string("RSA"), "n": .string(n), "e": .string(e), "use": .string("enc"), "kid": .string(keyID)]
            material = .rsa(SharedRSAKey(key))
        } else {
            throw .unusableKey("no RSA (2048 bits or more) or P-256 private key in PEM")
        }
    }

    /// RFC 7638: the SHA-256 of the required members in lexicographic order, base64url.
    private static func thumbprint(_ canonical: String) -> String {
        Base64URL.encode(Array(SHA256.hash(data: Array(canonical.utf8))))
    }
}

/// An RSA key of swift-crypto's, which does not mark them `Sendable`: this one is never changed
/// after it is read, and BoringSSL's RSA operations read the key only, from any thread.
final class SharedRSAKey<Key>: @unchecked Sendable {
    let key: Key
    init(_ key: Key) { self.key = key }
}
