import Crypto
import GatehouseEncoding

/// The gateway's ES256 key for the identity assertions it sends upstreams (SPEC "Identity for your
/// own APIs"), derived from `GATEHOUSE_SECRET_KEY` with HKDF-SHA256: every instance with the same
/// secret key signs with the same key and publishes the same `kid`, and rotating the secret key
/// rotates this key with it (`GATEHOUSE_SECRET_KEY_PREVIOUS` keeps the old public half published).
///
/// Derived, not stored: there is no second secret to distribute, back up or forget to rotate. The
/// HKDF `info` names the purpose, so the sealing key and this one are independent even though they
/// come from the same bytes (RFC 5869 §3.2).
public struct AssertionSigningKey: Sendable {
    /// RFC 7638 JWK thumbprint (SHA-256, base64url) of the public key.
    public let keyID: String
    private let privateKey: P256.Signing.PrivateKey
    /// The public key as a JWK member list, sorted (as published in the JWKS).
    public let publicJWK: [String: JSONValue]

    static let info = Array("gatehouse identity assertion key v1".utf8)
    static let salt = Array("gatehouse-assertion".utf8)

    /// - Parameter secretKey: the 32 bytes of `GATEHOUSE_SECRET_KEY` (or `_PREVIOUS`).
    public init(secretKey: [UInt8]) {
        // A derived 32-byte string is a valid P-256 scalar unless it is 0 or ≥ n (chance ~2^-32): the
        // next counter value is tried then, deterministically.
        var counter: UInt8 = 0
        var key: P256.Signing.PrivateKey?
        while key == nil {
            let derived = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: secretKey), salt: Self.salt,
                                                 info: Self.info + [counter], outputByteCount: 32)
            key = derived.withUnsafeBytes { try? P256.Signing.PrivateKey(rawRepresentation: Array($0)) }
            counter &+= 1
        }
        privateKey = key!
        let jwk = P256PublicJWK(privateKey.publicKey)
        keyID = jwk.thumbprint
        publicJWK = jwk.members.merging(["kid": .string(keyID), "use": .string("sig"), "alg": .string("ES256")]) { first, _ in first }
    }

    /// A compact JWS (RFC 7515) of `claims` with header `{"alg":"ES256","kid":…,"typ":"JWT"}`.
    /// - Returns: nil only when the claims hold a number the writer leaves alone (a fraction).
    public func sign(_ claims: [String: JSONValue]) -> String? {
        guard let payload = JSONValueWriter.sortedKeys(claims) else { return nil }
        let header = "{\"alg\":\"ES256\",\"kid\":\"\(keyID)\",\"typ\":\"JWT\"}"
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(payload)
        guard let signature = try? privateKey.signature(for: Array(signingInput.utf8)) else { return nil }
        // JWS ES256 (RFC 7518 §3.4): R ‖ S, 32 bytes each, which is `rawRepresentation`.
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// `{"keys":[…]}` for `/.well-known/jwks.json`: `current` first, then `previous` unless it is
    /// the same key.
    /// - Parameter encryption: the client encryption keys' public JWKs (`"use":"enc"`), published beside.
    public static func keySet(current: AssertionSigningKey, previous: AssertionSigningKey?,
                              encryption: [[String: JSONValue]] = []) -> [UInt8] {
        var keys: [JSONValue] = [.object(current.publicJWK)]
        if let previous, previous.keyID != current.keyID { keys.append(.object(previous.publicJWK)) }
        keys += encryption.map(JSONValue.object)
        return JSONValueWriter.sortedKeys(["keys": .array(keys)]) ?? Array("{\"keys\":[]}".utf8)
    }
}
