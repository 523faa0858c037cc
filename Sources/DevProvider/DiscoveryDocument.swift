/// Provider metadata (OpenID Connect Discovery 1.0 §3, RFC 8414 §2), served at
/// `{issuer}/.well-known/openid-configuration`.
struct DiscoveryDocument: Encodable, Sendable {
    var issuer: String
    var authorizationEndpoint: String
    var tokenEndpoint: String
    var jwksURI: String
    var userinfoEndpoint: String
    var endSessionEndpoint: String
    var revocationEndpoint: String
    var responseTypesSupported = ["code"]
    var responseModesSupported = ["query"]
    var grantTypesSupported = ["authorization_code", "refresh_token"]
    var subjectTypesSupported = ["public"]
    var idTokenSigningAlgValuesSupported = ["ES256"]
    var codeChallengeMethodsSupported = ["S256"]
    var tokenEndpointAuthMethodsSupported = ["client_secret_basic", "client_secret_post", "none"]
    var revocationEndpointAuthMethodsSupported = ["client_secret_basic", "client_secret_post", "none"]
    var scopesSupported = ["openid", "profile", "email", "offline_access"]
    var claimsSupported = ["iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "sid",
                           "name", "preferred_username", "email", "email_verified", "picture"]
    var authorizationResponseIssParameterSupported = true
    var dpopSigningAlgValuesSupported = ["ES256"]
    var backchannelLogoutSupported = true
    var backchannelLogoutSessionSupported = true

    init(issuer: String) {
        self.issuer = issuer
        authorizationEndpoint = issuer + "/authorize"
        tokenEndpoint = issuer + "/token"
        jwksURI = issuer + "/jwks"
        userinfoEndpoint = issuer + "/userinfo"
        endSessionEndpoint = issuer + "/logout"
        revocationEndpoint = issuer + "/revoke"
    }
}
