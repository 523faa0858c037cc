/// What a failed refresh-token grant means for the session that sent it: the one reading of a
/// refresh error, used by every path that refreshes (the session's own refresh and
/// `exchange=refresh`), so that no path keeps a session another would end.
///
/// Providers differ in the code they answer for a refresh token they no longer know or accept:
/// `invalid_grant` (RFC 6749 §5.2's), but LemonLDAP::NG answers `invalid_request`, and others
/// `unauthorized_client` or `invalid_scope`. Treating those as temporary left the session alive
/// while every refresh failed, so each is a refusal that ends it. `invalid_client` is different:
/// the gateway's own credentials were refused, which is the operator's to fix and says nothing
/// about the user's grant, so the session stays.
public enum RefreshFailure: Sendable, Equatable {
    /// The provider refused the grant: the refresh token is no good, the session ends.
    case grantRefused(OAuthErrorCode)
    /// The provider refused the gateway's client authentication (`invalid_client`): the session
    /// stays, the call fails (`502`) and the operator is told.
    case clientRefused
    /// Another OAuth refusal that does not say the grant is dead (e.g. `unsupported_grant_type`):
    /// the session stays.
    case otherRefusal(OAuthErrorCode)
    /// No usable answer (unreachable, `5xx`, a malformed body, a misconfigured client): temporary,
    /// the session stays and the next call tries again.
    case unavailable

    /// The codes that end the session when a refresh is refused with them.
    public static let sessionEndingCodes: Set<OAuthErrorCode> = [.invalidGrant, .invalidRequest, .unauthorizedClient, .invalidScope]

    /// - Parameter carriesOwnTarget: the grant asked for another API's token with a `resource` or
    ///   `scope` of its own (`exchange=refresh`). Then `invalid_request` and `invalid_scope` may be
    ///   about that target rather than the refresh token (a route's misconfigured scope must not
    ///   end every user's session), so only `invalid_grant` and `unauthorized_client` end it.
    public init(_ error: TokenEndpointError, carriesOwnTarget: Bool = false) {
        guard case .oauth(let code, _, let status) = error else {
            self = .unavailable
            return
        }
        // A refusal is a 4xx answer; an OAuth error body on a 5xx is the provider failing.
        guard (400..<500).contains(status) else {
            self = .unavailable
            return
        }
        if code == .invalidClient {
            self = .clientRefused
        } else if Self.sessionEndingCodes.contains(code),
                  !carriesOwnTarget || code == .invalidGrant || code == .unauthorizedClient {
            self = .grantRefused(code)
        } else {
            self = .otherRefusal(code)
        }
    }

    /// Whether the session must end.
    public var endsSession: Bool {
        if case .grantRefused = self { return true }
        return false
    }
}
