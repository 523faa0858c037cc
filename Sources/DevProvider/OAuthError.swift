import HTTP1

/// Error codes of RFC 6749 §4.1.2.1 (authorization endpoint) and §5.2 (token endpoint), RFC 7009
/// §2.2.1 and OpenID Connect Core §3.1.2.6.
enum OAuthErrorCode: String, Sendable {
    case invalidRequest = "invalid_request"
    case invalidClient = "invalid_client"
    case invalidGrant = "invalid_grant"
    case unauthorizedClient = "unauthorized_client"
    case unsupportedGrantType = "unsupported_grant_type"
    case unsupportedResponseType = "unsupported_response_type"
    case invalidScope = "invalid_scope"
    case accessDenied = "access_denied"
    case loginRequired = "login_required"
    case serverError = "server_error"
}

/// An OAuth error answer, carrying the description a developer needs to fix their client.
struct OAuthError: Error, Equatable, Sendable, CustomStringConvertible {
    var code: OAuthErrorCode
    var description: String

    init(_ code: OAuthErrorCode, _ description: String) {
        self.code = code
        self.description = description
    }

    /// RFC 6749 §5.2: `400`, except `invalid_client` which is `401` with a `WWW-Authenticate`
    /// challenge; always `Cache-Control: no-store`.
    var tokenEndpointResponse: HTTPResponse {
        var response = ProviderResponse.json(status: status, [
            "error": code.rawValue, "error_description": description,
        ])
        if code == .invalidClient {
            response.headers.add("WWW-Authenticate", #"Basic realm="devprovider", charset="UTF-8""#)
        }
        return response
    }

    private var status: Int {
        switch code {
        case .invalidClient: 401
        case .serverError: 500
        default: 400
        }
    }
}
