import Crypto
import FoundationEssentials
import JWTKit
import GatehouseEncoding

/// The provider's ES256 signing key, created fresh for each provider instance (tokens of an
/// earlier run never verify), and its public half as a JWK Set (RFC 7517).
struct SigningKey: Sendable {
    /// RFC 7638 thumbprint of the public key, so the `kid` changes with the key.
    let keyID: String
    let jwks: PublicJWKS
    /// JWTKeyCollection is an actor, so the key is added in a task; signers await it.
    private let collection: Task<JWTKeyCollection, any Error>

    init() {
        // Not "compact representable" (swift-crypto's default): that draws keys until the public
        // key has an x-only form (draft-jivsov-ecc-compact), a random number of tries at start-up,
        // and a JWS key needs no such form.
        let privateKey = P256.Signing.PrivateKey(compactRepresentable: false)
        // The raw public key is the affine point `x || y`, 32 bytes each (RFC 7518 §6.2.1.2).
        let point = Array(privateKey.publicKey.rawRepresentation)
        let x = Base64URL.encode(point.prefix(32)), y = Base64URL.encode(point.suffix(32))
        let kid = Self.thumbprint(x: x, y: y)
        keyID = kid
        jwks = PublicJWKS(keys: [PublicJWK(x: x, y: y, kid: kid)])
        collection = Task {
            let keys = JWTKeyCollection()
            await keys.add(ecdsa: try ES256PrivateKey(backing: privateKey), kid: JWKIdentifier(string: kid))
            return keys
        }
    }

    func sign(_ claims: some JWTPayload, type: String = "JWT") async throws -> String {
        var header = JWTHeader()
        header.typ = type
        return try await collection.value.sign(claims, kid: JWKIdentifier(string: keyID), header: header)
    }

    /// Verifies a token this key signed; the payload's own `verify(using:)` decides about claims.
    func verify<Payload: JWTPayload>(_ token: String, as type: Payload.Type) async throws -> Payload {
        try await collection.value.verify(token, as: type)
    }

    /// RFC 7638 §3.2: SHA-256 over the required members in lexicographic order, no whitespace.
    private static func thumbprint(x: String, y: String) -> String {
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        return Base64URL.encode(SHA256.hash(data: Array(canonical.utf8)))
    }
}

/// A public JSON Web Key (RFC 7517 §4, RFC 7518 §6.2.1): the provider only ever publishes an ES256
/// signing key, so only the point and the key id vary.
struct PublicJWK: Codable, Equatable, Sendable {
    var kty = "EC"
    var crv = "P-256"
    var x: String
    var y: String
    var kid: String
    var alg = "ES256"
    var use = "sig"
}

struct PublicJWKS: Codable, Equatable, Sendable {
    var keys: [PublicJWK]
}
