import EventLoops
import GatehouseCore
import HTTPClient
import HTTP1
import HTTPServer

/// Proxies a WebSocket handshake under an API route (SPEC "WebSockets"): checked like an API call,
/// with the `Origin` in place of the CSRF header, then relayed on a new upstream connection; after
/// the upstream's `101` the bytes flow both ways through a `ByteTunnel` (`WebSocketTunnels`).
///
/// Order of checks: the origin (`403`), the handshake's form (`400`, `426`), the credential
/// (`UpstreamCredential.decide`: `401` without a session), then the upstream. An upstream that
/// answers anything but `101` has that answer relayed as usual (its connection then closed); a
/// `101` that does not accept our key is `502`.
struct WebSocketProxy {
    let context: GatewayContext

    func forward(_ request: HTTPRequest, to forward: ForwardTarget, writer: any HTTPResponseWriter) async {
        let head = request.head
        let key: String
        switch Self.handshakeKey(request, context: context) {
        case .key(let value): key = value
        case .refusal(let response): return await writer.respond(response)
        }
        // The route's `auth=` policy decides, as for API calls (`RouteCredentials`, the one place).
        let authorization: String?
        var identity: [HTTPField.Checked]
        switch await RouteCredentials.authorization(for: forward.route, headers: head.headers, context: context) {
        case .forward(let value, let fields, let dpop):
            (authorization, identity) = (value, fields)
            // A DPoP-bound token's proof for the handshake (no retry: a nonce the upstream asks for
            // is used by the next handshake).
            let route = forward.route
            let url = "\(route.scheme)://\(route.hostHeader)\(forward.target)"
            if let dpop, let field = dpop.proofField(method: "GET", url: url, nonce: context.upstreamDPoPNonces.nonce(for: url),
                                                     now: context.now()) {
                identity.append(field)
            }
        case .refuse(let response): return await writer.respond(response)
        }
        // The live session the socket lives and dies with; none on `auth=none` or when signed out.
        let sessionIDHash = await liveSessionIDHash(head, route: forward.route)
        let route = forward.route
        let transport = context.upstreams.transport(for: route)
        guard let switching = transport as? any UpstreamSwitchingTransport else {
            return await writer.respond(HTTPResponse.jsonError(
                status: 502, error: "websocket_upstream_unsupported",
                description: "WebSockets cannot be proxied to this upstream."))
        }
        let policyHeaders = ProxyHeaderPolicy.upstreamRequestHeaders(from: head.headers, peerIP: request.peer.ip,
                                                                     authorization: authorization, identity: identity,
                                                                     forwarding: context.forwarding, trace: request.trace)
        let upstreamRequest = UpstreamRequest(host: route.host, port: route.port, method: "GET", target: forward.target,
                                              headers: WebSocketHandshake.upstreamHeaders(policyHeaders))
        let answer: UpstreamSwitch
        do {
            answer = try await switching.switchProtocols(upstreamRequest)
        } catch {
            return await writer.respond(UpstreamRelay.failure(error, context: context))
        }
        switch answer {
        case .answered(let refusal):
            await UpstreamRelay.relay(refusal, method: "GET", context: context, writer: writer)
        case .switched(let upstreamHead, let upstream):
            await tunnel(upstreamHead, upstream, key: key, sessionIDHash: sessionIDHash, writer: writer)
        }
    }

    private enum Handshake {
        case key(String)
        case refusal(HTTPResponse)
    }

    /// The browser's handshake checked before anything else (RFC 6455 §4.2.1): its `Origin` (this
    /// site's, or a `GATEHOUSE_CORS_ORIGINS` one: browsers add no CSRF header to a handshake), its
    /// version and key, no body.
    private static func handshakeKey(_ request: HTTPRequest, context: GatewayContext) -> Handshake {
        let head = request.head
        guard WebSocketHandshake.originAllowed(head.headers, publicOrigin: context.configuration.publicURL.origin,
                                               cors: context.configuration.cors) else {
            return .refusal(HTTPResponse.jsonError(
                status: 403, error: "origin_not_allowed",
                description: "A WebSocket must be opened from \(context.configuration.publicURL.origin)."))
        }
        switch WebSocketHandshake.validate(head.headers) {
        case .success(let value):
            guard request.body.declaredLength == 0 else {
                return .refusal(HTTPResponse.jsonError(status: 400, error: "invalid_websocket_handshake",
                                                       description: "Invalid WebSocket handshake: it has a body."))
            }
            return .key(value)
        case .failure(.unsupportedVersion):
            var response = HTTPResponse.jsonError(status: 426, error: "unsupported_websocket_version",
                                                  description: "Only WebSocket version 13 is supported.")
            response.headers.set("Sec-WebSocket-Version", WebSocketHandshake.version)
            return .refusal(response)
        case .failure(.malformed(let why)):
            return .refusal(HTTPResponse.jsonError(status: 400, error: "invalid_websocket_handshake",
                                                   description: "Invalid WebSocket handshake: \(why)."))
        }
    }

    /// The upstream switched: its answer checked against the key, the browser switched, and both
    /// sockets handed to the tunnels of this loop.
    private func tunnel(_ upstreamHead: HTTPResponseHead, _ upstream: any TunnelEndpoint, key: String, sessionIDHash: String?,
                        writer: any HTTPResponseWriter) async {
        if let problem = WebSocketHandshake.upstreamProblem(upstreamHead, key: key) {
            upstream.close()
            context.metrics.upstreamError(kind: "websocket_handshake")
            context.logger.warning("upstream websocket handshake refused", metadata: ["problem": "\(problem)"])
            return await writer.respond(HTTPResponse.jsonError(
                status: 502, error: "upstream_websocket_handshake_failed",
                description: "The upstream did not accept the WebSocket handshake."))
        }
        let browser: any TunnelEndpoint
        do {
            browser = try await writer.switchProtocols(WebSocketHandshake.browserHead(from: upstreamHead))
        } catch {
            upstream.close()
            // The browser went away meanwhile (nothing to answer), or the exchange cannot switch.
            return await writer.respond(HTTPResponse.jsonError(status: 400, error: "invalid_websocket_handshake",
                                                               description: "The connection cannot switch protocols."))
        }
        guard let loop = EventLoop.current else {
            browser.close()
            return upstream.close()
        }
        context.websockets.open(browser: browser, upstream: upstream, sessionIDHash: sessionIDHash, loop: loop)
    }

    private func liveSessionIDHash(_ head: HTTPRequestHead, route: UpstreamRoute) async -> String? {
        if case .none = route.auth { return nil }
        guard let id = await context.sessions.sessionID(in: head.headers),
              (try? await context.sessions.resolve(idHash: id.hash, now: context.now(), slide: false)) != nil else { return nil }
        return id.hash
    }
}
