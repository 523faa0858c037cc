/// Why a token-endpoint or revocation call failed. Descriptions are for logs and never contain
/// tokens, codes, verifiers or secrets.
public enum TokenEndpointError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The provider refused with an OAuth error (RFC 6749 §5.2). What it means for a refresh: `RefreshFailure`.
    case oauth(code: OAuthErrorCode, description: String?, httpStatus: Int)
    /// No HTTP answer: `502` at `/callback`.
    case transport(ProviderTransportError)
    /// A non-success status without an OAuth error body (e.g. `503` from a proxy in front of the provider).
    case unexpectedStatus(Int)
    /// A success status whose body is not a usable token response.
    case invalidResponse(String)
    /// The client cannot call the endpoint as configured (missing secret, no revocation endpoint).
    case invalidConfiguration(String)

    public var description: String {
        switch self {
        case .oauth(let code, let description, let status):
            "provider refused with \(code) (HTTP \(status))" + (description.map { ": \($0)" } ?? "")
        case .transport(let error):
            "\(error)"
        case .unexpectedStatus(let status):
            "provider answered HTTP \(status) without an OAuth error"
        case .invalidResponse(let reason):
            "invalid token response: \(reason)"
        case .invalidConfiguration(let reason):
            "token client misconfigured: \(reason)"
        }
    }
}
