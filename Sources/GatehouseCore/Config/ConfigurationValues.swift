/// How Gatehouse authenticates to the provider's token endpoint (RFC 6749 §2.3, OIDC Core §9).
public enum ClientAuthMethod: String, Sendable, Equatable, CaseIterable {
    case clientSecretBasic = "client_secret_basic"
    case clientSecretPost = "client_secret_post"
    case none
    /// An HMAC-SHA256 JWT under the client secret (OIDC Core §9).
    case clientSecretJWT = "client_secret_jwt"
    /// A JWT signed with the client's private key (`GATEHOUSE_CLIENT_PRIVATE_KEY`, OIDC Core §9).
    case privateKeyJWT = "private_key_jwt"
}

/// The `SameSite` attribute of the session cookie (RFC 6265bis §5.6.7).
public enum SameSitePolicy: String, Sendable, Equatable, CaseIterable {
    case strict = "Strict"
    case lax = "Lax"
}

/// Log line format (`GATEHOUSE_LOG_FORMAT`).
public enum LogFormat: String, Sendable, Equatable, CaseIterable {
    /// One JSON object a line.
    case json
    /// Human-readable single lines.
    case text
}

/// Whether the event loops are kept one per CPU (`GATEHOUSE_CPU_AFFINITY`).
public enum CPUAffinityPolicy: String, Sendable, Equatable, CaseIterable {
    /// Each loop on a CPU of its own when there is one loop per allowed CPU and more than one.
    case auto
    /// The scheduler places and moves the loops (a machine shared with other busy processes).
    case off
}
