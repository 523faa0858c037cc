import GatehouseCore
import GatehouseSessions
import HTTP1

/// What a proxied request carries upstream, decided in one call per request: the `Authorization`
/// value (nil: none) and the session it came from (nil: none), or the answer that refuses it.
/// API calls and WebSocket handshakes both ask `UpstreamCredential.decide`; a per-route policy
/// (`auth=user|optional|none|client`) replaces that one call.
enum UpstreamCredential {
    case granted(authorization: String?, sessionIDHash: String?)
    case refused(HTTPResponse)

    /// Today's rule for every route: a live session is required, its access token (refreshed when
    /// near expiry, single-flight) is the bearer. `401` without one, `503` when the store does not
    /// answer, `502` when a refresh failed for another reason than a refusal.
    static func decide(for head: HTTPRequestHead, context: GatewayContext) async -> UpstreamCredential {
        let now = context.now()
        guard let id = context.sessions.sessionID(in: head.headers) else {
            return .refused(Responses.unauthenticated)
        }
        let resolved: SessionCache.Resolved?
        do { resolved = try context.sessions.resolveWithAuthorization(idHash: id.hash, now: now) } catch {
            return .refused(HTTPResponse.jsonError(status: 503, error: "session_store_unavailable",
                                                   description: "The session store does not answer."))
        }
        guard let resolved else { return .refused(Responses.unauthenticated) }
        switch await context.refresher.ensureFresh(resolved.session, now: now) {
        case .fresh(let fresh):
            let authorization = fresh.tokens.accessToken == resolved.session.tokens.accessToken
                ? resolved.authorization : "Bearer \(fresh.tokens.accessToken)"
            return .granted(authorization: authorization, sessionIDHash: id.hash)
        case .ended:
            var response = Responses.unauthenticated
            response.headers.add("Set-Cookie", context.cookie.expire())
            return .refused(response)
        case .unavailable:
            context.metrics.upstreamError(kind: "token_refresh")
            return .refused(HTTPResponse.jsonError(status: 502, error: "token_refresh_failed",
                                                   description: "The access token could not be refreshed."))
        }
    }
}
