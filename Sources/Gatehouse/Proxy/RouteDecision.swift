import GatehouseCore
import GatehouseSessions
import HTTP1

/// The one decision about a request to a route (SPEC "API routes", "Who may call what"): from the
/// route's policy, the session as known so far and what has been obtained for it, what happens
/// next. Both transports ask it: the event loop with what its caches hold, the task after each
/// thing it fetched (a session, a refresh, an exchanged or client token), until it forwards or
/// refuses. So a rule is written once, and the loop can never decide otherwise than the task.
///
/// It does no I/O and never waits: the caches it reads (the exchanged tokens, the client token, the
/// signed identity) answer synchronously or say what to fetch.
enum RouteDecision {
    /// What is known of the browser's session.
    enum SessionState {
        /// Not looked up yet (the loop found no fresh entry): the task loads it.
        case unknown
        case signedOut
        case signedIn(CachedSession)
    }

    /// What has been fetched for this request already (the task path's round trips).
    struct Obtained {
        /// The route's exchanged token (`exchange=`), as `Authorization` value.
        var exchanged: String?
        /// The gateway's client-credentials token (`auth=client`), as `Authorization` value.
        var clientToken: String?
        /// The session was refreshed for this request: forward what it has even if due again.
        var refreshed = false
    }

    enum Verdict {
        /// Forward with this `Authorization` value (or none), identity fields and DPoP proof source.
        case forward(authorization: String?, identity: [HTTPField.Checked], dpop: UpstreamDPoP?)
        /// Answer this instead (`401`, `403`).
        case refuse(HTTPResponse)
        /// Load the session, then ask again.
        case lookUpSession
        /// Refresh the session's tokens, then ask again (`required`: signed out is `401` after a
        /// refused refresh; else forwarded without a bearer).
        case refreshFirst(CachedSession, required: Bool)
        /// The access token ended and there is no refresh token: end the session.
        case endSession(CachedSession, required: Bool)
        /// Obtain the route's exchanged token for the session, then ask again.
        case exchangeFirst(CachedSession)
        /// Obtain the gateway's client-credentials token, then ask again.
        case clientTokenFirst(ClientCredentialsGrant)
    }

    static func decide(_ route: UpstreamRoute, session: SessionState, obtained: Obtained = Obtained(),
                       now: Int64, context: GatewayContext) -> Verdict {
        switch route.auth {
        case .none:
            return .forward(authorization: nil, identity: [], dpop: nil)
        case .user, .optional:
            let required = route.auth == .user
            let cached: CachedSession
            switch session {
            case .unknown: return .lookUpSession
            case .signedOut:
                return required ? .refuse(Responses.unauthenticated) : .forward(authorization: nil, identity: [], dpop: nil)
            case .signedIn(let found): cached = found
            }
            if let refusal = providerRefusal(route, cached.session) ?? stepUpRefusal(route, cached, now: now) {
                return .refuse(refusal)
            }
            // Without a refresh token the session ends with its access token (Facebook, Google
            // without offline access): say so instead of forwarding a token the upstream will refuse.
            let tokens = cached.session.tokens
            if AccessTokenExpiry.hasEnded(tokens, now: now) { return .endSession(cached, required: required) }
            if !obtained.refreshed, tokens.refreshToken != nil, context.refresher.needsRefresh(tokens, now: now) {
                return .refreshFirst(cached, required: required)
            }
            // After any refresh: the provider's current claims decide.
            if let refusal = ruleRefusal(route, cached, context: context) { return .refuse(refusal) }
            var authorization = cached.authorization
            if route.identity.exchange != nil {
                guard let exchanged = obtained.exchanged
                        ?? context.apiTokens.cached(for: route, idHash: cached.session.idHash, now: now) else {
                    return .exchangeFirst(cached)
                }
                authorization = exchanged
            }
            return forward(route, cached: cached, userAuthorization: authorization, now: now, context: context)
        case .client(let grant, let sessionRequired):
            var identity: [HTTPField.Checked] = []
            if sessionRequired || route.providers != nil || !route.identity.isPlain || route.allow != nil {
                switch session {
                case .unknown: return .lookUpSession
                case .signedOut: if sessionRequired { return .refuse(Responses.unauthenticated) }
                case .signedIn(let cached):
                    if let refusal = providerRefusal(route, cached.session) ?? ruleRefusal(route, cached, context: context) {
                        return .refuse(refusal)
                    }
                    identity = context.identities.issue(for: route, session: cached, now: now)?.fields ?? []
                }
            }
            guard let token = obtained.clientToken ?? context.clientTokens.cached(for: grant) else {
                return .clientTokenFirst(grant)
            }
            return .forward(authorization: token, identity: identity, dpop: nil)
        }
    }

    /// The identity fields and the bearer the route's `token=` option chooses.
    private static func forward(_ route: UpstreamRoute, cached: CachedSession, userAuthorization: String?,
                                now: Int64, context: GatewayContext) -> Verdict {
        let issued = context.identities.issue(for: route, session: cached, now: now)
        let authorization: String?
        switch route.identity.bearer {
        case nil, .access?: authorization = userAuthorization
        case .assertion?: authorization = issued?.assertionBearer
        case .none?: authorization = nil
        }
        let dpop = UpstreamDPoP(authorization: authorization, session: cached)
        if dpop != nil, route.identity.refusesDPoP { return .refuse(dpopNotAccepted) }
        return .forward(authorization: authorization, identity: issued?.fields ?? [], dpop: dpop)
    }

    /// Route options `acr=`/`max_age=`: `401 step_up_required` with the `/login` that asks the
    /// provider for them, when the session's authentication does not satisfy the route.
    private static func stepUpRefusal(_ route: UpstreamRoute, _ cached: CachedSession, now: Int64) -> HTTPResponse? {
        guard let policy = route.stepUp else { return nil }
        let facts = cached.authentication
        guard !policy.isSatisfied(acr: facts.acr, authTime: facts.authTime, now: now) else { return nil }
        var fields = ["\"error\":\"step_up_required\"",
                      "\"error_description\":\"This API needs a stronger or more recent sign-in.\""]
        if !policy.acrValues.isEmpty { fields.append("\"acr_values\":" + JSONString.quoted(policy.acrValuesParameter)) }
        if let maxAge = policy.maxAge { fields.append("\"max_age\":\(maxAge)") }
        fields.append("\"login\":" + JSONString.quoted(policy.loginPath))
        return Responses.json(401, Array("{\(fields.joined(separator: ","))}".utf8))
    }

    /// Route option `providers=A|B`: `403 provider_not_allowed` for a session of another provider.
    private static func providerRefusal(_ route: UpstreamRoute, _ session: Session) -> HTTPResponse? {
        guard let allowed = route.providers, !allowed.contains(session.provider) else { return nil }
        return providerNotAllowed
    }

    /// Route option `allow=`: `403 forbidden` for a session whose claims do not satisfy the rule.
    private static func ruleRefusal(_ route: UpstreamRoute, _ cached: CachedSession, context: GatewayContext) -> HTTPResponse? {
        guard let rule = route.allow else { return nil }
        let allowed = cached.isAllowed(by: rule) { context.sessions.groupsClaim(of: cached) }
        return allowed ? nil : forbidden
    }

    private static let forbidden = HTTPResponse.jsonError(status: 403, error: "forbidden",
                                                          description: "Your session does not meet this API's access rule.")
    private static let providerNotAllowed = HTTPResponse.jsonError(
        status: 403, error: "provider_not_allowed",
        description: "This API does not accept sessions of the provider you signed in with.")
    private static let dpopNotAccepted = HTTPResponse.jsonError(
        status: 403, error: "dpop_not_accepted",
        description: "This API does not take DPoP, and your session's tokens are bound to a DPoP key (GATEHOUSE_DPOP=on): they are not sent as bearer tokens.")
}
