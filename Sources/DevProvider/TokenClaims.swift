import JWTKit
import GatehouseEncoding

/// Claims of an ID token (OpenID Connect Core §2, §5.1). Times are seconds since the epoch.
struct IDTokenClaims: JWTPayload, Equatable {
    var iss: String
    var sub: String
    var aud: String
    var exp: Int
    var iat: Int
    var authTime: Int
    var nonce: String?
    var sid: String
    var name: String?
    var preferredUsername: String?
    var email: String?
    var emailVerified: Bool?
    /// A profile picture, as real providers send one (a `data:` image: nothing is fetched elsewhere).
    var picture: String?

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, nonce, sid, name, email, picture
        case authTime = "auth_time"
        case preferredUsername = "preferred_username"
        case emailVerified = "email_verified"
    }

    /// The provider only signs these; verifying is the relying party's job.
    func verify(using algorithm: some JWTAlgorithm) async throws {}

    /// Claims for `authentication`, limited by the granted scopes (OpenID Connect Core §5.4:
    /// `profile` releases the name claims, `email` the email claims).
    init(authentication: Authentication, nonce: String?, now: Int, policy: TokenPolicy) {
        let user = authentication.user
        let scopes = Set(authentication.scopes)
        iss = policy.issuer
        sub = user.subject
        aud = authentication.clientID
        iat = now
        exp = now + policy.idTokenLifetime
        authTime = authentication.authTime
        self.nonce = nonce
        sid = authentication.sessionID
        if scopes.contains("profile") {
            name = user.username
            preferredUsername = user.username
            picture = Avatar.dataURL(for: user.username)
        }
        if scopes.contains("email"), let address = user.email {
            email = address
            // Nobody checked the address: the development provider takes what was typed.
            emailVerified = false
        }
    }
}

/// Claims of a back-channel logout token (OpenID Connect Back-Channel Logout 1.0 §2.4): no
/// `nonce`, the logout event, and `sub` and/or `sid`.
struct LogoutTokenClaims: JWTPayload, Equatable {
    static let backchannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"

    struct EmptyObject: Codable, Equatable, Sendable {}

    var iss: String
    var aud: String
    var iat: Int
    var exp: Int
    var jti: String
    var events: [String: EmptyObject]
    var sub: String?
    var sid: String?

    func verify(using algorithm: some JWTAlgorithm) async throws {}

    init(issuer: String, clientID: String, subject: String?, sessionID: String?, now: Int) {
        iss = issuer
        aud = clientID
        iat = now
        exp = now + 120
        jti = SecureRandom.token()
        events = [Self.backchannelLogoutEvent: EmptyObject()]
        sub = subject
        sid = sessionID
    }
}

/// The parts of an `id_token_hint` the logout endpoint needs. Its expiry is not checked: OpenID
/// Connect RP-Initiated Logout 1.0 §2 lets the hint be an expired ID token the provider issued.
struct IDTokenHint: JWTPayload {
    var aud: String
    var sub: String
    var sid: String?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
