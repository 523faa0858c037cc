/// What the provider has been asked to do, for tests that assert on the client's behaviour (for
/// example "the gateway made exactly one refresh grant for two concurrent API calls").
///
/// Grant counts include refused grants: every `POST /token` from an authenticated client with
/// that `grant_type` counts once, whether it succeeded or not.
public struct DevProviderStatistics: Sendable, Equatable {
    /// Authorization codes issued by `POST /authorize`.
    public var authorizationCodesIssued = 0
    /// Token requests with `grant_type=authorization_code`.
    public var authorizationCodeGrants = 0
    /// Token requests with `grant_type=refresh_token`.
    public var refreshTokenGrants = 0
    /// Token requests (of any grant type) that were answered with an error after client authentication.
    public var failedGrants = 0
    /// Revocation requests (RFC 7009) from authenticated clients, including unknown tokens.
    public var revocations = 0
    /// Of those, the ones with `token_type_hint=access_token`.
    public var accessTokenRevocations = 0
    /// Back-channel logout tokens delivered with a `2xx` answer.
    public var backchannelLogoutsDelivered = 0
    /// Provider sessions ended by `GET /logout` or `backchannelLogout(sub:sid:)`.
    public var sessionsEnded = 0

    public init() {}
}

/// How the provider answers refresh grants; lets a test simulate a provider that has revoked the
/// grant or one that is slow.
public enum RefreshBehaviour: Sendable, Equatable {
    /// Refresh grants work normally.
    case normal
    /// Every refresh grant is refused with `invalid_grant` (RFC 6749 §5.2).
    case refuse
    /// Every refresh grant is refused with this OAuth error code (`invalid_request`, `invalid_client`,
    /// …): providers differ in the code they answer for a refresh token they no longer accept.
    case refuseWith(code: String)
    /// Every refresh grant waits this long before being processed normally.
    case delay(Duration)
}
