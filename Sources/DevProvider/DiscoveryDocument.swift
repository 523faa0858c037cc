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
                           "name", "preferred_username", "email", "email_verified"]
    var authorizationResponseIssParameterSupported = true
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

    enum CodingKeys: String, CodingKey {
        case issuer
        case authorizationEndpoint = "authorization_endpoint"
        case tokenEndpoint = "token_endpoint"
        case jwksURI = "jwks_uri"
        case userinfoEndpoint = "userinfo_endpoint"
        case endSessionEndpoint = "end_session_endpoint"
        case revocationEndpoint = "revocation_endpoint"
        case responseTypesSupported = "response_types_supported"
        case responseModesSupported = "response_modes_supported"
        case grantTypesSupported = "grant_types_supported"
        case subjectTypesSupported = "subject_types_supported"
        case idTokenSigningAlgValuesSupported = "id_token_signing_alg_values_supported"
        case codeChallengeMethodsSupported = "code_challenge_methods_supported"
        case tokenEndpointAuthMethodsSupported = "token_endpoint_auth_methods_supported"
        case revocationEndpointAuthMethodsSupported = "revocation_endpoint_auth_methods_supported"
        case scopesSupported = "scopes_supported"
        case claimsSupported = "claims_supported"
        case authorizationResponseIssParameterSupported = "authorization_response_iss_parameter_supported"
        case backchannelLogoutSupported = "backchannel_logout_supported"
        case backchannelLogoutSessionSupported = "backchannel_logout_session_supported"
    }
}
