import GatehouseCore
import GatehouseSessions
import HTTP1

/// The one answer to "which bearer, if any" for a request to a route, per its `auth=` policy
/// (``RouteAuth``). Every way into an upstream asks here (API calls, WebSocket upgrades), so a
/// policy is enforced in one place. The anti-forgery header was checked before (`RequestRoute`).
enum RouteCredentials {
    enum Outcome {
        /// Forward with this `Authorization` value (`Bearer …`), or with none, and these identity
        /// fields (the assertion header, the identity headers; SPEC "Identity for your own APIs").
        case forward(authorization: String?, identity: [HTTPField.Checked] = [], dpop: UpstreamDPoP? = nil)
        /// Answer this instead of forwarding (`401`, `403`, `502`, `503`).
        case refuse(HTTPResponse)
    }

    static func authorization(for route: UpstreamRoute, headers: HTTPHeaders, context: GatewayContext) async -> Outcome {
        switch route.auth {
        case .none:
            return .forward(authorization: nil)
        case .user:
            return await userAuthorization(route: route, headers: headers, required: true, context: context)
        case .optional:
            return await userAuthorization(route: route, headers: headers, required: false, context: context)
        case .client(let grant, let sessionRequired):
            var identity: [HTTPField.Checked] = []
            if sessionRequired || route.providers != nil || !route.identity.isPlain {
                switch await lookUpSession(headers: headers, context: context) {
                case .unavailable: return .refuse(sessionStoreUnavailable)
                case .signedOut: if sessionRequired { return .refuse(Responses.unauthenticated) }
                case .signedIn(let found):
                    if let refusal = providerRefusal(found.session, allowed: route.providers) { return .refuse(refusal) }
                    if let refusal = ruleRefusal(route, found.cached, context: context) { return .refuse(refusal) }
                    identity = context.identities.issue(for: route, session: found.cached, now: context.now())?.fields ?? []
                }
            }
            switch await context.clientTokens.authorization(for: grant) {
            case .success(let authorization): return .forward(authorization: authorization, identity: identity)
            case .failure:
                context.metrics.upstreamError(kind: "client_token")
                return .refuse(HTTPResponse.jsonError(status: 502, error: "client_token_failed",
                                                      description: "The gateway's client-credentials token could not be obtained."))
            }
        }
    }

    /// `authorization(for:headers:context:)` when it needs no suspension: a route without a bearer,
    /// or the user's cached session whose access token is neither ended nor due for a refresh.
    /// Nil when the async path must decide (a session to load, a refresh, a refusal, a client token).
    static func cachedAuthorization(for route: UpstreamRoute, headers: HTTPHeaders, context: GatewayContext) -> Outcome? {
        cachedAuthorization(for: route, headers: headers, loneKey: { context.sessions.loneSessionCookieKey(in: headers) },
                            context: context)
    }

    /// As above, the session cookie's key given by `loneKey` (`RequestFieldMemo`), asked for only
    /// when the route needs the user's session.
    static func cachedAuthorization(for route: UpstreamRoute, headers: HTTPHeaders, loneKey: () -> SessionCookieKey?,
                                    context: GatewayContext) -> Outcome? {
        switch route.auth {
        case .none:
            return .forward(authorization: nil)
        case .user, .optional:
            // `providers=`: the session's provider is checked on the async path (routes without the
            // option keep this path as it was).
            guard route.providers == nil else { return nil }
            if !route.readsSession {
                guard let authorization = context.sessions.cachedBearer(in: headers, loneKey: loneKey(), now: context.now(),
                                                                        refreshMargin: context.refresher.margin) else { return nil }
                // A DPoP-bound token needs the session's key: the session's entry, as below.
                guard UpstreamDPoP.isBound(authorization) else { return .forward(authorization: authorization) }
            }
            // Routes that read the session (identity, step-up) and DPoP sessions: the shared entry's
            // session, then the fields and any exchanged token from their memos; a miss of either
            // takes the async path.
            let now = context.now()
            guard let resolved = context.sessions.cachedProxySession(in: headers, now: now,
                                                                     refreshMargin: context.refresher.margin) else { return nil }
            if let refusal = stepUpRefusal(route, resolved.cached, now: now) { return .refuse(refusal) }
            if let refusal = ruleRefusal(route, resolved.cached, context: context) { return .refuse(refusal) }
            var exchanged: String?
            if route.identity.exchange != nil {
                guard let token = context.apiTokens.cached(for: route, idHash: resolved.cached.session.idHash, now: now) else {
                    return nil
                }
                exchanged = token
            }
            return forward(route, cached: resolved.cached, userAuthorization: exchanged ?? resolved.authorization,
                           now: now, context: context)
        case .client:
            return nil
        }
    }

    /// The identity fields and the bearer the route's `token=` option chooses.
    private static func forward(_ route: UpstreamRoute, cached: CachedSession, userAuthorization: String?,
                                now: Int64, context: GatewayContext) -> Outcome {
        let issued = context.identities.issue(for: route, session: cached, now: now)
        let authorization: String?
        switch route.identity.bearer {
        case nil, .access?: authorization = userAuthorization
        case .assertion?: authorization = issued?.assertionBearer
        case .none?: authorization = nil
        }
        let dpop = UpstreamDPoP(authorization: authorization, session: cached)
        if dpop != nil, route.identity.refusesDPoP {
            return .refuse(HTTPResponse.jsonError(
                status: 403, error: "dpop_not_accepted",
                description: "This API does not take DPoP, and your session's tokens are bound to a DPoP key (GATEHOUSE_DPOP=on): they are not sent as bearer tokens."))
        }
        return .forward(authorization: authorization, identity: issued?.fields ?? [], dpop: dpop)
    }

    /// The user's access token, refreshed when due (or the route's exchanged token). Signed out (no
    /// cookie, an unknown session, or a refresh the provider refused) is `401` when `required`, else
    /// a request without a bearer.
    private static func userAuthorization(route: UpstreamRoute, headers: HTTPHeaders, required: Bool,
                                          context: GatewayContext) async -> Outcome {
        let resolved: SessionCache.Resolved
        switch await lookUpSession(headers: headers, context: context) {
        case .unavailable: return .refuse(sessionStoreUnavailable)
        case .signedOut: return required ? .refuse(Responses.unauthenticated) : .forward(authorization: nil)
        case .signedIn(let found): resolved = found
        }
        if let refusal = providerRefusal(resolved.session, allowed: route.providers) { return .refuse(refusal) }
        if let refusal = stepUpRefusal(route, resolved.cached, now: context.now()) { return .refuse(refusal) }
        // Without a refresh token the session ends with its access token (Facebook, Google without
        // offline access): say so instead of forwarding a token the upstream will refuse.
        let now = context.now()
        if AccessTokenExpiry.hasEnded(resolved.tokens, now: now) {
            let response = await AccessTokenExpiry.end(resolved.session, context: context)
            return required ? .refuse(response) : .forward(authorization: nil)
        }
        let cached: CachedSession
        // The usual case, a token not yet due: its cached `Authorization` value as it is, without
        // the refresher's call (an async frame and a copy of the session per proxied request).
        if !context.refresher.needsRefresh(resolved.tokens, now: now) {
            guard route.readsSession || UpstreamDPoP.isBound(resolved.authorization) else {
                return .forward(authorization: resolved.authorization)
            }
            cached = resolved.cached
        } else {
            switch await context.refresher.ensureFresh(resolved.session, now: now) {
            case .fresh(let fresh):
                let freshAuthorization = fresh.tokens.accessToken == resolved.tokens.accessToken
                    ? resolved.authorization : DPoPBinding.authorization(fresh.tokens.accessToken, tokenType: fresh.tokens.tokenType)
                guard route.readsSession || UpstreamDPoP.isBound(freshAuthorization) else {
                    return .forward(authorization: freshAuthorization)
                }
                cached = fresh.version == resolved.cached.session.version ? resolved.cached : CachedSession(fresh)
            case .ended:
                guard required else { return .forward(authorization: nil) }
                var response = Responses.unauthenticated
                response.headers.add("Set-Cookie", context.cookie.expire())
                return .refuse(response)
            case .unavailable:
                context.metrics.upstreamError(kind: "token_refresh")
                return .refuse(HTTPResponse.jsonError(status: 502, error: "token_refresh_failed",
                                                      description: "The access token could not be refreshed."))
            }
        }
        // After a refresh: the provider's current claims decide (a group removed there stops
        // admitting the session once its tokens are refreshed).
        if let refusal = ruleRefusal(route, cached, context: context) { return .refuse(refusal) }
        var authorization = cached.authorization
        if route.identity.exchange != nil {
            switch await context.apiTokens.authorization(for: route, session: cached.session, context: context) {
            case .success(let exchanged): authorization = exchanged
            case .failure(let refusal): return .refuse(refusal.response)
            }
        }
        return forward(route, cached: cached, userAuthorization: authorization, now: context.now(), context: context)
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

    /// Route option `allow=`: `403 forbidden` for a session whose claims do not satisfy the rule.
    private static func ruleRefusal(_ route: UpstreamRoute, _ cached: CachedSession, context: GatewayContext) -> HTTPResponse? {
        guard let rule = route.allow else { return nil }
        let allowed = cached.isAllowed(by: rule) {
            context.providers.provider(named: cached.session.provider)?.configuration.idp.groupsClaim ?? "groups"
        }
        return allowed ? nil : forbidden
    }

    private static let forbidden = HTTPResponse.jsonError(status: 403, error: "forbidden",
                                                          description: "Your session does not meet this API's access rule.")

    /// Route option `providers=A|B`: `403 provider_not_allowed` for a session of another provider.
    private static func providerRefusal(_ session: Session, allowed: [String]?) -> HTTPResponse? {
        guard let allowed, !allowed.contains(session.provider) else { return nil }
        return HTTPResponse.jsonError(status: 403, error: "provider_not_allowed",
                                      description: "This API does not accept sessions of the provider you signed in with.")
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
}
