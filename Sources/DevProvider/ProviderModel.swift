/// The person who signed in at the provider's form. The subject is the user name itself, so tests
/// and the demo can name it (`backchannelLogout(sub: "alice", sid: nil)`).
struct DevUser: Sendable, Equatable {
    var username: String
    var email: String?

    var subject: String { username }
}

/// A validated authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3, OpenID Connect Core §3.1.2.1).
struct AuthorizationRequest: Sendable, Equatable {
    var clientID: String
    var redirectURI: String
    var scopes: [String]
    var state: String?
    var nonce: String?
    var codeChallenge: String
}

/// What the provider knows about one sign-in; every token issued from it carries this.
struct Authentication: Sendable, Equatable {
    var clientID: String
    var user: DevUser
    var scopes: [String]
    /// The provider session (OpenID Connect Front/Back-Channel Logout `sid`).
    var sessionID: String
    var authTime: Int
}

/// An issued authorization code: one-time, short-lived, bound to its request (RFC 6749 §4.1.2).
struct AuthorizationCodeRecord: Sendable {
    var request: AuthorizationRequest
    var authentication: Authentication
    var expiresAt: Int
    /// Set on first presentation. A second presentation revokes this family (RFC 6749 §4.1.2:
    /// the server "SHOULD revoke (when possible) all tokens previously issued based on that code").
    var redeemed = false
    var family: Int?
}

/// A refresh token. Tokens rotated from one another form a family that is revoked as a whole.
struct RefreshTokenRecord: Sendable {
    var family: Int
    var authentication: Authentication
    /// False once rotated: presenting it again signals theft (RFC 9700 §4.14.2).
    var isCurrent: Bool
}

struct AccessTokenRecord: Sendable {
    var family: Int
    var authentication: Authentication
    var expiresAt: Int
}

struct ProviderSession: Sendable {
    var user: DevUser
    var ended: Bool
}

/// Lifetimes and rotation, from the configuration.
struct TokenPolicy: Sendable {
    var issuer: String
    var accessTokenLifetime: Int
    var idTokenLifetime: Int
    var rotateRefreshTokens: Bool
    /// RFC 6749 §4.1.2 recommends at most 10 minutes; one minute is plenty on loopback.
    var authorizationCodeLifetime = 60
}

/// The result of a successful grant, before the ID token is signed.
struct IssuedTokens: Sendable {
    var accessToken: String
    var refreshToken: String
    var expiresIn: Int
    var scopes: [String]
    var idTokenClaims: IDTokenClaims
}

/// What `POST /revoke` found.
enum RevocationOutcome: Sendable, Equatable {
    case refreshTokenFamilyRevoked
    case accessTokenRevoked
    case unknownToken
    case issuedToAnotherClient
}
