/// How Gatehouse authenticates to the token and revocation endpoints (`GATEHOUSE_CLIENT_AUTH_METHOD`,
/// names from the OAuth Dynamic Client Registration registry, RFC 7591 §2).
public enum ClientAuthMethod: String, Sendable, Equatable, CaseIterable {
    /// HTTP Basic with the form-urlencoded client id and secret (RFC 6749 §2.3.1).
    case clientSecretBasic = "client_secret_basic"
    /// `client_id` and `client_secret` in the form body (RFC 6749 §2.3.1, "NOT RECOMMENDED" but common).
    case clientSecretPost = "client_secret_post"
    /// No authentication: a public client that sends only `client_id`.
    case none = "none"
    /// A JWT signed with HMAC-SHA256 under the client secret (OIDC Core §9, RFC 7523); the secret
    /// itself never travels.
    case clientSecretJWT = "client_secret_jwt"
    /// A JWT signed with the client's private key (OIDC Core §9); the provider holds the public key.
    case privateKeyJWT = "private_key_jwt"

    public var requiresSecret: Bool { self != .none && self != .privateKeyJWT }
    /// Whether each request carries a signed client assertion (RFC 7523 §2.2) with its own `jti`.
    public var usesAssertion: Bool { self == .clientSecretJWT || self == .privateKeyJWT }
}
