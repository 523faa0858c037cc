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
        guard let forward = ForwardTarget(match, head: head) else {
            return await writer.respond(ForwardTarget.unroutable)
        }
        let authorization: String
        switch await UpstreamCredential.decide(for: head, context: context) {
        case .granted(let value, _): authorization = value ?? ""
        case .refused(let response): return await writer.respond(response)
        }

        let headers = ProxyHeaderPolicy.upstreamRequestHeaders(from: head.headers, peerIP: request.peer.ip,
                                                               authorization: authorization,
                                                               forwarding: context.forwarding)
        let route = forward.route
        let upstreamRequest = UpstreamRequest(host: route.host, port: route.port, method: head.method,
                                              target: forward.target, headers: headers)
        let transport = route.usesTLS ? context.httpsUpstream : context.upstream
        await UpstreamRelay.forward(upstreamRequest, body: request.body, via: transport, context: context, writer: writer)
    }
}
