/// The tokens a session holds, as received from the token endpoint (RFC 6749 §5.1).
/// Stored only sealed; `description` and `dump` never show a token.
public struct TokenSet: Sendable, Equatable, Codable {
    public var accessToken: String
    public var refreshToken: String?
    public var idToken: String?
    /// Unix seconds when the access token expires (from `expires_in`), nil when unknown.
    public var accessTokenExpiresAt: Int64?
    /// `token_type`, normally `Bearer`.
    public var tokenType: String
    /// `scope` as granted, when the provider returned it.
    public var scope: String?
    /// `expires_in` as granted, so the refresh margin can be a fraction of the token's lifetime.
    public var accessTokenLifetime: Int64?
    /// The session's DPoP private key (RFC 9449; base64url of its 32 bytes) when its tokens are
    /// bound to one (`GATEHOUSE_DPOP=on`); sealed with the tokens, never anywhere else.
    public var dpopKey: String?
    /// The issuer of the provider these tokens came from, as configured when the session began
    /// (nil in sessions from before it was kept). A provider name re-pointed at another issuer
    /// must not send this issuer's refresh token there, nor vouch for its user.
    public var issuer: String?

    public init(accessToken: String, refreshToken: String? = nil, idToken: String? = nil,
                accessTokenExpiresAt: Int64? = nil, tokenType: String = "Bearer", scope: String? = nil,
                accessTokenLifetime: Int64? = nil) {
        self.accessTokenLifetime = accessTokenLifetime
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.accessTokenExpiresAt = accessTokenExpiresAt
        self.tokenType = tokenType
        self.scope = scope
    }
}

extension TokenSet: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "TokenSet(accessToken: <redacted>, refreshToken: \(refreshToken == nil ? "nil" : "<redacted>"), dpopKey: \(dpopKey == nil ? "nil" : "<redacted>"), "
            + "idToken: \(idToken == nil ? "nil" : "<redacted>"), accessTokenExpiresAt: "
            + "\(accessTokenExpiresAt.map(String.init) ?? "nil"), tokenType: \(tokenType))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["accessTokenExpiresAt": accessTokenExpiresAt as Any, "tokenType": tokenType],
               displayStyle: .struct)
    }
}
