import GatehouseCore
import GatehouseSessions
import HTTPClient
import HTTP1
import HTTPServer

/// Forwards an API request of a signed-in browser to its upstream with the session's access token,
/// streaming both bodies (SPEC "API routes"; the IETF browser-apps BFF pattern).
struct ApiProxy {
    let context: GatewayContext

    func forward(_ request: HTTPRequest, match: RouteMatch, writer: any HTTPResponseWriter) async {
        let head = request.head
        // The method and the anti-forgery header were checked by the router (`RequestRoute`).
        guard case .forward(let route, let upstreamPath) = match else {
            return await writer.respond(HTTPResponse.jsonError(status: 400, error: "invalid_path",
                                                               description: "The path cannot be routed."))
        }
        let now = context.now()
        guard let id = await context.sessions.sessionID(in: head.headers) else {
            return await writer.respond(Responses.unauthenticated)
        }
        let resolved: SessionCache.Resolved?
        do { resolved = try await context.sessions.resolveWithAuthorization(idHash: id.hash, now: now) } catch {
            return await writer.respond(HTTPResponse.jsonError(status: 503, error: "session_store_unavailable",
                                                               description: "The session store does not answer."))
        }
        guard let resolved else { return await writer.respond(Responses.unauthenticated) }
        let authorization: String
        switch await context.refresher.ensureFresh(resolved.session, now: now) {
        case .fresh(let fresh):
            authorization = fresh.tokens.accessToken == resolved.session.tokens.accessToken
                ? resolved.authorization : "Bearer \(fresh.tokens.accessToken)"
        case .ended:
            var response = Responses.unauthenticated
            response.headers.add("Set-Cookie", context.cookie.expire())
            return await writer.respond(response)
        case .unavailable:
            context.metrics.upstreamError(kind: "token_refresh")
            return await writer.respond(HTTPResponse.jsonError(status: 502, error: "token_refresh_failed",
                                                               description: "The access token could not be refreshed."))
        }

        let headers = ProxyHeaderPolicy.upstreamRequestHeaders(from: head.headers, peerIP: request.peer.ip,
                                                               authorization: authorization,
                                                               forwarding: context.forwarding)
        var target = upstreamPath
        if let query = head.query { target += "?" + query }
        let upstreamRequest = UpstreamRequest(host: route.host, port: route.port, method: head.method,
                                              target: target, headers: headers)
        let transport = route.usesTLS ? context.httpsUpstream : context.upstream
        await UpstreamRelay.forward(upstreamRequest, body: request.body, via: transport, context: context, writer: writer)
    }
}
