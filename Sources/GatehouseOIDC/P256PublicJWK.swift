import Crypto
import GatehouseEncoding

/// A P-256 public key as a JWK (RFC 7517) and its RFC 7638 thumbprint: what the identity
/// assertion's key publishes (`kid`) and what a DPoP proof carries (`jwk`, and the tokens' `cnf.jkt`).
struct P256PublicJWK: Sendable {
    /// `kty`, `crv`, `x`, `y`.
    let members: [String: JSONValue]
    let thumbprint: String

    init(_ key: P256.Signing.PublicKey) {
        let point = Array(key.x963Representation)  // 0x04 ‖ x ‖ y
        let x = Base64URL.encode(point[1..<33]), y = Base64URL.encode(point[33..<65])
        members = ["kty": .string("EC"), "crv": .string("P-256"), "x": .string(x), "y": .string(y)]
        // RFC 7638 §3.2: the required members only, lexicographic order, no whitespace.
        let canonical = "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"\(x)\",\"y\":\"\(y)\"}"
        thumbprint = Base64URL.encode(SHA256.hash(data: Array(canonical.utf8)))
    }
}
