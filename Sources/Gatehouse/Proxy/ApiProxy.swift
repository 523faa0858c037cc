import GatehouseCore
import GatehouseSessions
import HTTPClient
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
        guard let id = context.sessions.sessionID(in: head.headers) else {
            return await writer.respond(Responses.unauthenticated)
        }
        let resolved: SessionCache.Resolved?
        do { resolved = try context.sessions.resolveWithAuthorization(idHash: id.hash, now: now) } catch {
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
        if route.usesTLS {
            return await TLSUpstream.forward(upstreamRequest, body: request.body, context: context, writer: writer)
        }
        let body: (any HTTPRequestBody)? = request.body.declaredLength == 0 ? nil : request.body
        let response: UpstreamResponse
        do {
            response = try await context.upstream.send(upstreamRequest, body: body)
        } catch {
            return await writer.respond(UpstreamRelay.failure(error, context: context))
        }
        await relay(response, head: head, writer: writer)
    }

    private func relay(_ response: UpstreamResponse, head: HTTPRequestHead, writer: any HTTPResponseWriter) async {
        var outgoing = HTTPResponseHead(status: response.head.status,
                                        headers: ProxyHeaderPolicy.downstreamResponseHeaders(from: response.head.headers))
        // Added here, while this function owns the only copy of the fields: the secured writer then
        // finds them present and adds (and copies) nothing.
        SecurityHeaders.apply(to: &outgoing.headers, html: SecurityHeaders.isHTML(outgoing.headers),
                              strictTransportSecurity: context.configuration.strictTransportSecurity)
        // Small answers usually arrive whole with their head: relay them in one write. The client
        // decided the framing and the length to announce (for HEAD, what GET would send).
        if let body = response.wholeBodyIfBuffered() {
            if head.method == "HEAD", let length = response.framing.announcedLength {
                outgoing.headers.set("Content-Length", String(length))
            }
            return await writer.respond(HTTPResponse(status: outgoing.status, headers: outgoing.headers, body: body))
        }
        await UpstreamRelay.stream(response, head: outgoing, framing: response.framing, context: context, writer: writer)
    }
}
