import Crypto
import FoundationEssentials
import GatehouseEncoding

/// The client assertion of `client_secret_jwt` (OIDC Core §9, RFC 7523 §2.2): a JWT the client
/// signs with HMAC-SHA256 under its secret, proving it knows the secret without sending it.
///
/// For example: `let jwt = ClientAssertion.clientSecretJWT(clientID: id, secret: secret, audience: tokenEndpoint, now: Date())`.
public enum ClientAssertion {
    /// `client_assertion_type` (RFC 7523 §2.2).
    public static let type = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    /// How long an assertion is valid: short, it is used once, right away.
    static let lifetime: TimeInterval = 60

    /// An HS256 JWT with `iss` = `sub` = the client id, `aud` = the token endpoint (§9: "SHOULD be the
    /// URL of the Authorization Server's Token Endpoint"), a random `jti` (single use), `iat`, `exp`.
    /// The key is the UTF-8 octets of the client secret (§10.1).
    public static func clientSecretJWT(clientID: String, secret: String, audience: String, now: Date,
                                       random: RandomBytes = .system) -> String {
        let issuedAt = Int(now.timeIntervalSince1970)
        let claims: [String: JSONValue] = [
            "iss": .string(clientID), "sub": .string(clientID), "aud": .string(audience),
            "jti": .string(RandomToken.make(bytes: 32, random: random)),
            "iat": .number(Double(issuedAt)), "exp": .number(Double(issuedAt) + lifetime),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header = Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let payload = Base64URL.encode(Array((try? encoder.encode(claims)) ?? Data("{}".utf8)))
        let signingInput = header + "." + payload
        let mac = HMAC<SHA256>.authenticationCode(for: Array(signingInput.utf8), using: SymmetricKey(data: Array(secret.utf8)))
        return signingInput + "." + Base64URL.encode(Array(mac))
    }
}
