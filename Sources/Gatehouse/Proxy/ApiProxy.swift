import GatehouseCore
import GatehouseSessions
import HTTPClient
import HTTP1
import HTTPServer

/// Forwards an API request to its upstream with the bearer its route's policy calls for (the
/// session's access token by default), streaming both bodies (SPEC "API routes"; the IETF
/// browser-apps BFF pattern).
///
/// Every answer it writes carries the security headers (`SecurityHeaders`): its own refusals here,
/// the relayed ones in `UpstreamRelay`, so the router hands it the connection's writer unwrapped.
struct ApiProxy {
    let context: GatewayContext

    func forward(_ request: HTTPRequest, match: consuming RouteMatch, writer: any HTTPResponseWriter) async {
        // The method and the anti-forgery header were checked by the router (`RequestRoute`).
        // (`request.head` read in place: a local copy of it cost two hundred instructions.)
        guard let forward = ForwardTarget(consume match, query: request.head.query) else {
            return await writer.respond(secured(ForwardTarget.unroutable))
        }
        let route = forward.route
        // The route's `auth=` policy decides whether a session is needed and which bearer goes upstream.
        // Usually decided without a suspension (a cached session): five async frames fewer.
        let outcome: RouteCredentials.Outcome
        if let cached = RouteCredentials.cachedAuthorization(for: route, headers: request.head.headers, context: context) {
            outcome = cached
        } else {
            outcome = await RouteCredentials.authorization(for: route, headers: request.head.headers, context: context)
        }
        let authorization: String?
        switch outcome {
        case .forward(let value): authorization = value
        case .refuse(let response): return await writer.respond(secured(response))
        }

        let fields = ProxyHeaderPolicy.upstreamRequestFields(from: request.head.headers, peerIP: request.peer.ip,
                                                            authorization: authorization,
                                                            forwarding: context.forwarding, trace: request.trace)
        let upstreamRequest = UpstreamRequest(host: route.host, port: route.port, method: request.head.method,
                                              target: forward.target, fields: fields)
        if let client = route.usesTLS ? context.httpsUpstreamClient : context.upstreamClient {
            return await UpstreamRelay.forward(upstreamRequest, body: request.body, via: client, context: context, writer: writer)
        }
        let transport = route.usesTLS ? context.httpsUpstream : context.upstream
        await UpstreamRelay.forward(upstreamRequest, body: request.body, via: transport, context: context, writer: writer)
    }

    /// `forward` without a task, for a bodiless call whose bearer is known without waiting (a route
    /// without one, or a cached session) and whose upstream has an idle pooled connection: the head
    /// is sent from here and the answer relayed from the upstream socket's readiness callback
    /// (`LoopRelay`). false, having sent nothing, for anything else: `forward` then handles it.
    /// `fieldsRead`: the connection's memo of what was read from the request's fields (nil: read them).
    func forwardOnLoop(_ request: HTTPRequest, match: consuming RouteMatch, writer: any HTTPResponseWriter,
                       completion: HandlerCompletion, fieldsRead: RequestFieldMemo? = nil) -> Bool {
        guard let forward = ForwardTarget(consume match, query: request.head.query) else { return false }
        let route = forward.route
        guard !route.usesTLS, context.upstreamClient != nil,
              case .forward(let authorization)? = RouteCredentials.cachedAuthorization(
                  for: route, headers: request.head.headers,
                  loneKey: { fieldsRead?.loneSessionKey(in: context.sessions) ?? context.sessions.loneSessionCookieKey(in: request.head.headers) },
                  context: context) else { return false }
        let passesTracestate = request.trace.isReceived
        let passing = fieldsRead?.upstreamPassing(peerIP: request.peer.ip, passesTracestate: passesTracestate, forwarding: context.forwarding)
            ?? ProxyHeaderPolicy.upstreamFieldPassing(from: request.head.headers, peerIP: request.peer.ip,
                                                      passesTracestate: passesTracestate, forwarding: context.forwarding)
        let fields = ProxyHeaderPolicy.upstreamRequestFields(passing: passing, authorization: authorization,
                                                            forwarding: context.forwarding, trace: request.trace)
        let upstreamRequest = UpstreamRequest(host: route.host, port: route.port, method: request.head.method,
                                              target: forward.target, fields: fields)
        // Moved, not copied, into the relay (a copy of the call retained and released each of its
        // references: about 900 instructions).
        // Called through the context, not a local reference: the client is shared by the loops.
        let sent = context.upstreamClient?.sendOnLoop(consume upstreamRequest, loop: completion.loop)
        guard let call = consume sent else { return false }
        LoopRelay(call: consume call, method: request.head.method, context: context, writer: writer, completion: completion).start()
        return true
    }

    private func secured(_ response: HTTPResponse) -> HTTPResponse {
        Gateway.secured(response, strictTransportSecurity: context.configuration.strictTransportSecurity)
    }
}
