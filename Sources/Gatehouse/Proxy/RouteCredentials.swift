import GatehouseCore
import GatehouseSessions
import HTTP1

/// The one answer to "which bearer, if any" for a request to a route, per its policy: the two
/// transports of `RouteDecision`. Every way into an upstream asks here (API calls, WebSocket
/// upgrades), so a policy is enforced in one place. The anti-forgery header was checked before
/// (`RequestRoute`).
enum RouteCredentials {
    enum Outcome {
        /// Forward with this `Authorization` value (`Bearer …`), or with none, and these identity
        /// fields (the assertion header, the identity headers; SPEC "Identity for your own APIs").
        case forward(authorization: String?, identity: [HTTPField.Checked] = [], dpop: UpstreamDPoP? = nil)
        /// Answer this instead of forwarding (`401`, `403`, `502`, `503`).
        case refuse(HTTPResponse)
    }

    /// The decision as the event loop can make it, without a suspension: from the session's cached
    /// entry (or the loop's copy of its bearer) and the cached tokens. Nil when the task must fetch
    /// something first (a session to load, a refresh, an exchanged or client token).
    static func cachedAuthorization(for route: UpstreamRoute, headers: HTTPHeaders, context: GatewayContext) -> Outcome? {
        cachedAuthorization(for: route, headers: headers, loneKey: { context.sessions.loneSessionCookieKey(in: headers) },
                            context: context)
    }

    /// As above, the session cookie's key given by `loneKey` (`RequestFieldMemo`), asked for only
    /// when the route needs the user's session.
    static func cachedAuthorization(for route: UpstreamRoute, headers: HTTPHeaders, loneKey: () -> SessionCookieKey?,
                                    context: GatewayContext) -> Outcome? {
        let now = context.now()
        // The usual case: a route that reads nothing of the session but its bearer (and whether it
        // satisfies the route's `allow=`), answered from the loop's own copy of it (`LoopBearer`)
        // without touching the shared entry. A refused rule takes the decision below.
        if case .user = route.auth, route.providers == nil, route.identity.isPlain, route.stepUp == nil,
           let authorization = context.sessions.cachedBearer(in: headers, loneKey: loneKey(), now: now,
                                                             refreshMargin: context.refresher.margin, rule: route.allow) {
            // A DPoP-bound token needs the session's key: the shared entry, below.
            if !UpstreamDPoP.isBound(authorization) { return .forward(authorization: authorization) }
        }
        var session = RouteDecision.SessionState.unknown
        if case .none = route.auth {} else if let resolved = context.sessions.cachedProxySession(
            in: headers, now: now, refreshMargin: context.refresher.margin) {
            session = .signedIn(resolved.cached)
        }
        switch RouteDecision.decide(route, session: session, now: now, context: context) {
        case .forward(let authorization, let identity, let dpop): return .forward(authorization: authorization, identity: identity, dpop: dpop)
        case .refuse(let response): return .refuse(response)
        default: return nil
        }
    }

    /// The decision with every fetch it asks for done in turn: the session loaded (sliding its idle
    /// timer), its tokens refreshed, the route's exchanged token or the client token obtained.
    static func authorization(for route: UpstreamRoute, headers: HTTPHeaders, context: GatewayContext) async -> Outcome {
        var session = RouteDecision.SessionState.unknown
        var obtained = RouteDecision.Obtained()
        // Each fetch settles what the decision asked for, so it asks for each at most once; the
        // bound only guards against a cache that forgets at once.
        for _ in 0..<6 {
            switch RouteDecision.decide(route, session: session, obtained: obtained, now: context.now(), context: context) {
            case .forward(let authorization, let identity, let dpop):
                return .forward(authorization: authorization, identity: identity, dpop: dpop)
            case .refuse(let response):
                return .refuse(response)
            case .lookUpSession:
                switch await lookUpSession(headers: headers, context: context) {
                case .unavailable: return .refuse(sessionStoreUnavailable)
                case .signedOut: session = .signedOut
                case .signedIn(let resolved): session = .signedIn(resolved.cached)
                }
            case .endSession(let cached, let required):
                let response = await AccessTokenExpiry.end(cached.session, context: context)
                return required ? .refuse(response) : .forward(authorization: nil)
            case .refreshFirst(let cached, let required):
                switch await context.refresher.ensureFresh(cached.session, now: context.now()) {
                case .fresh(let fresh):
                    // Tokens held in memory while the store is down keep the stored version: the
                    // access token tells a new session apart too.
                    let unchanged = fresh.version == cached.session.version
                        && fresh.tokens.accessToken == cached.session.tokens.accessToken
                    session = .signedIn(unchanged ? cached : CachedSession(fresh))
                    obtained.refreshed = true
                case .ended:
                    guard required else { return .forward(authorization: nil) }
                    var response = Responses.unauthenticated
                    response.headers.add("Set-Cookie", context.cookie.expire())
                    return .refuse(response)
                case .unavailable:
                    context.metrics.upstreamError(kind: "token_refresh")
                    return .refuse(tokenRefreshFailed)
                }
            case .exchangeFirst(let cached):
                switch await context.apiTokens.authorization(for: route, session: cached.session, context: context) {
                case .success(let exchanged): obtained.exchanged = exchanged
                case .failure(let refusal): return .refuse(refusal.response)
                }
            case .clientTokenFirst(let grant):
                switch await context.clientTokens.authorization(for: grant) {
                case .success(let token): obtained.clientToken = token
                case .failure:
                    context.metrics.upstreamError(kind: "client_token")
                    return .refuse(clientTokenFailed)
                }
            }
        }
        return .refuse(tokenRefreshFailed)
    }

    private enum SessionLookup {
        case signedIn(SessionCache.Resolved)
        case signedOut
        case unavailable
    }

    /// The browser's session (sliding its idle timer); `.unavailable` when the store does not answer.
    private static func lookUpSession(headers: HTTPHeaders, context: GatewayContext) async -> SessionLookup {
        guard let id = await context.sessions.sessionID(in: headers) else { return .signedOut }
        do {
            guard let resolved = try await context.sessions.resolveWithAuthorization(idHash: id.hash, now: context.now()) else {
                return .signedOut
            }
            return .signedIn(resolved)
        } catch {
            // As `/api/user` does: without it an unreachable store showed only as 503s in the access log.
            context.logger.error("api: session lookup failed", metadata: ["error": "\(error)"])
            return .unavailable
        }
    }

    private static let sessionStoreUnavailable = Responses.sessionStoreUnavailable()
    private static let tokenRefreshFailed = HTTPResponse.jsonError(status: 502, error: "token_refresh_failed",
                                                                   description: "The access token could not be refreshed.")
    private static let clientTokenFailed = HTTPResponse.jsonError(
        status: 502, error: "client_token_failed", description: "The gateway's client-credentials token could not be obtained.")
}
