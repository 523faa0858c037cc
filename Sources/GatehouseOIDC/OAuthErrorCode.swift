/// An OAuth `error` code. Call sites switch on cases; nothing matches on strings.
///
/// RFC 6749 §5.2 (token endpoint), §4.1.2.1 (authorization response), RFC 7009 §2.2.1 (revocation).
public enum OAuthErrorCode: Sendable, Equatable, Hashable, CustomStringConvertible {
    case invalidRequest
    case invalidClient
    case invalidGrant
    case unauthorizedClient
    case unsupportedGrantType
    case invalidScope
    case accessDenied
    case unsupportedResponseType
    case serverError
    case temporarilyUnavailable
    case unsupportedTokenType
    /// Any other code (e.g. OIDC's `login_required`), kept verbatim.
    case other(String)

    public init(_ code: String) {
        switch code {
        case "invalid_request": self = .invalidRequest
        case "invalid_client": self = .invalidClient
        case "invalid_grant": self = .invalidGrant
        case "unauthorized_client": self = .unauthorizedClient
        case "unsupported_grant_type": self = .unsupportedGrantType
        case "invalid_scope": self = .invalidScope
        case "access_denied": self = .accessDenied
        case "unsupported_response_type": self = .unsupportedResponseType
        case "server_error": self = .serverError
        case "temporarily_unavailable": self = .temporarilyUnavailable
        case "unsupported_token_type": self = .unsupportedTokenType
        default: self = .other(code)
        }
    }

    public var rawValue: String {
        switch self {
        case .invalidRequest: "invalid_request"
        case .invalidClient: "invalid_client"
        case .invalidGrant: "invalid_grant"
        case .unauthorizedClient: "unauthorized_client"
        case .unsupportedGrantType: "unsupported_grant_type"
        case .invalidScope: "invalid_scope"
        case .accessDenied: "access_denied"
        case .unsupportedResponseType: "unsupported_response_type"
        case .serverError: "server_error"
        case .temporarilyUnavailable: "temporarily_unavailable"
        case .unsupportedTokenType: "unsupported_token_type"
        case .other(let code): code
        }
    }

    public var description: String { rawValue }
}
