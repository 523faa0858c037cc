import GatehouseCore
import GatehouseOIDC
import GatehouseSessions
import GatehouseTelemetry
import HTTP1
import HTTPClient
import HTTPServer

/// Forwards an API request to its upstream with the bearer its route's policy calls for (the
/// session's access token by default), streaming both bodies (SPEC "API routes"; the IETF
/// browser-apps BFF pattern).
///
/// One function decides the forward (`forward`): the bearer (without waiting when the session is
/// cached), the fields that go upstream (from the connection's `RequestFieldMemo`), the upstream
/// request. Only the transport differs after that: sent from the loop and relayed from the upstream
/// socket's readiness callback (`LoopRelay`) when the call is bodiless and an idle pooled connection
/// is there, else sent and relayed in the connection's task (`UpstreamRelay`).
///
/// Every answer it writes carries the security headers (`SecuredAnswers`): its own refusals here,
/// the relayed ones in `UpstreamRelay`, so the router hands it the connection's writer unwrapped.
struct ApiProxy {
    let context: GatewayContext

    /// The method and the anti-forgery header were checked by the plan's gate (`RequestPlan`).
    /// `loopTransport`: false when the answer's writer must be wrapped (CORS), which the loop's is not.
    func forward(_ target: ForwardTarget, head: HTTPRequestHead, connection: RequestConnection,
                 fieldsRead: RequestFieldMemo, loopTransport: Bool = true) -> HandlerAnswer {
        let context = self.context
        let route = target.route
        // Admission first: a call past the route's bound, or past its client's share of a busy
        // route, costs nothing more than this answer.
        let caller = Self.admissionClient(route: route, head: head, peerIP: connection.peer.ip,
                                          fieldsRead: fieldsRead, context: context)
        guard route.inFlight.enter(limit: route.maxInFlight ?? context.configuration.routeMaxInFlight, client: caller) else {
            context.metrics.upstreamError(kind: "overloaded")
            return .now(context.secure.response(InFlightTicket.refusal))
        }
        let (request, writer, completion) = connection.take(head)
        // Which of the browser's fields go upstream, decided here on the loop (the connection's
        // memo is the loop's), whatever the transport.
        let passing = fieldsRead.upstreamPassing(UpstreamPassingInputs(peerIP: request.peer.ip,
                                                                       passesTracestate: request.trace.isReceived,
                                                                       forwarding: context.forwarding))
        // The route's `auth=` policy decides whether a session is needed and which bearer goes
        // upstream; usually decided without a suspension (a cached session).
        guard case .forward(let authorization, let identity, let dpop)? = RouteCredentials.cachedAuthorization(
            for: route, headers: head.headers, loneKey: { fieldsRead.loneSessionKey(in: context.sessions) },
            context: context) else {
            let ticket = InFlightTicket(admitted: route.inFlight, client: caller)
            return .inTask { request, writer in
                defer { withExtendedLifetime(ticket) {} }
                switch await RouteCredentials.authorization(for: route, headers: request.head.headers, context: context) {
                case .refuse(let response):
                    await writer.respond(context.secure.response(response))
                case .forward(let authorization, let identity, let dpop):
                    let span = Self.upstreamSpan(target, method: request.head.method, trace: request.trace, context: context)
                    let (upstreamRequest, retry) = Self.upstreamCall(target, dpop: dpop, request: request, span: span,
                                                                     authorization: authorization, identity: identity,
                                                                     passing: passing, context: context)
                    await Self.send(upstreamRequest, retry: retry, span: span, route: route, request: request,
                                    context: context, writer: writer)
                }
            }
        }
        // A DPoP session's call carries a proof signed here, for this method, URL and the upstream's
        // latest nonce; the retry builds another if the upstream asks for a new nonce.
        let span = Self.upstreamSpan(target, method: head.method, trace: request.trace, context: context)
        let (upstreamRequest, retry) = Self.upstreamCall(target, dpop: dpop, request: request, span: span, authorization: authorization,
                                                         identity: identity, passing: passing, context: context)
        guard loopTransport, connection.declaredBodyLength == 0, !route.usesTLS, let client = context.upstreams.plainClient, let completion else {
            let ticket = InFlightTicket(admitted: route.inFlight, client: caller)
            return .inTask { request, writer in
                defer { withExtendedLifetime(ticket) {} }
                await Self.send(upstreamRequest, retry: retry, span: span, route: route, request: request,
                                context: context, writer: writer)
            }
        }
        // Moved, not copied, into the call (a copy retained and released each of its references).
        switch client.sendOnLoop(consume upstreamRequest, loop: completion.loop) {
        case .sent(let call):
            LoopRelay(call: call, method: head.method, context: context, writer: writer, completion: completion,
                      admittedOn: route.inFlight, client: caller, nonceRetry: retry, span: span).start()
            return .onLoop
        case .notSent(let unsent):
            // No idle pooled connection: the same upstream request, sent from the task.
            let ticket = InFlightTicket(admitted: route.inFlight, client: caller)
            return .inTask { request, writer in
                defer { withExtendedLifetime(ticket) {} }
                await Self.send(unsent, retry: retry, span: span, route: route, request: request, context: context, writer: writer)
            }
        }
    }

    /// Whom a call counts against in the route's share: the session on routes that need one (a
    /// forged cookie there is refused before any upstream is asked, so it cannot hold a slot), else
    /// the client's address (the one a trusted proxy names).
    private static func admissionClient(route: UpstreamRoute, head: HTTPRequestHead, peerIP: String,
                                        fieldsRead: RequestFieldMemo, context: GatewayContext) -> UInt64 {
        switch route.auth {
        case .user, .client(_, sessionRequired: true):
            if let key = fieldsRead.loneSessionKey(in: context.sessions) { return key.admissionHash }
        default: break
        }
        guard context.forwarding.trusts(peerIP: peerIP),
              let claimed = head.headers.values("X-Forwarded-For").last?.split(separator: ",").last else {
            return AdmissionClient.address(peerIP)
        }
        return AdmissionClient.address(String(claimed.trimmingASCIIWhitespace()))
    }

    /// The request the upstream gets: the route's target, the browser's fields as the header policy
    /// passes them, the bearer, the user's identity fields and the forwarding fields.
    /// The span of the call to the upstream when the request's spans are recorded (its
    /// `traceparent` then names this span as the upstream's parent).
    private static func upstreamSpan(_ target: ForwardTarget, method: String, trace: TraceParent,
                                     context: GatewayContext) -> CallSpan? {
        guard trace.recordsSpans, let tracer = context.tracer else { return nil }
        let route = target.route
        return CallSpan(tracer: tracer, parent: trace, name: method,
                        attributes: GatewaySpans.upstreamAttributes(method: method, origin: route.upstreamOrigin, host: route.host,
                                                                    port: route.port, target: target.target, route: route.prefix))
    }

    private static func upstreamRequest(_ target: ForwardTarget, method: String, trace: TraceParent, authorization: String?,
                                        identity: [HTTPField.Checked], passing: UpstreamFieldPassing,
                                        context: GatewayContext) -> UpstreamRequest {
        let fields = ProxyHeaderPolicy.upstreamRequestFields(passing: passing, authorization: authorization, identity: identity,
                                                            forwarding: context.forwarding, trace: trace)
        return UpstreamRequest(host: target.route.host, port: target.route.port, method: method,
                               target: target.target, fields: fields)
    }

    /// The upstream request, and for a DPoP session's call how to send it again with another nonce.
    private static func upstreamCall(_ target: ForwardTarget, dpop: UpstreamDPoP?, request: HTTPRequest, span: CallSpan?,
                                     authorization: String?, identity: [HTTPField.Checked], passing: UpstreamFieldPassing,
                                     context: GatewayContext) -> (UpstreamRequest, DPoPNonceRetry?) {
        let trace = span?.trace ?? request.trace
        guard let dpop else {
            return (upstreamRequest(target, method: request.head.method, trace: trace, authorization: authorization,
                                    identity: identity, passing: passing, context: context), nil)
        }
        let proven = provenCall(target, dpop: dpop, request: request, trace: trace, authorization: authorization,
                                identity: identity, passing: passing, context: context)
        return (proven.first, proven.retry)
    }

    /// A call with a DPoP-bound token (RFC 9449 §7): the request with a proof for its method and
    /// URL and the upstream's latest nonce, and how to send it again with another nonce.
    private static func provenCall(_ target: ForwardTarget, dpop: UpstreamDPoP, request: HTTPRequest, trace: TraceParent,
                                   authorization: String?, identity: [HTTPField.Checked], passing: UpstreamFieldPassing,
                                   context: GatewayContext) -> (first: UpstreamRequest, retry: DPoPNonceRetry) {
        let route = target.route
        let origin = route.scheme + "://" + route.hostHeader
        let url = origin + target.target
        let method = request.head.method
        let built: @Sendable (String?) -> UpstreamRequest = { nonce in
            let proof = dpop.proofField(method: method, url: url, nonce: nonce, now: context.now())
            return upstreamRequest(target, method: method, trace: trace, authorization: authorization,
                                   identity: identity + (proof.map { [$0] } ?? []), passing: passing, context: context)
        }
        let retry = DPoPNonceRetry(origin: origin, nonces: context.upstreamDPoPNonces, resend: { built($0) },
                                   bodiless: request.body.declaredLength == 0)
        return (built(context.upstreamDPoPNonces.nonce(origin: origin)), retry)
    }

    /// Sends from the task, through the pooled client directly when it is the transport. A DPoP
    /// call (`retry`) whose upstream asks for another nonce (`401`, `use_dpop_nonce`) is sent once
    /// more with it when bodiless (a streamed body cannot be sent again: that answer goes to the
    /// browser, and the next call carries the nonce).
    private static func send(_ upstreamRequest: UpstreamRequest, retry: DPoPNonceRetry? = nil, span: CallSpan?,
                             route: UpstreamRoute, request: HTTPRequest, context: GatewayContext,
                             writer: any HTTPResponseWriter) async {
        guard let client = context.upstreams.client(for: route) else {
            let transport = context.upstreams.transport(for: route)
            return await UpstreamRelay.forward(upstreamRequest, body: request.body, via: transport, span: span,
                                               context: context, writer: writer)
        }
        guard let retry else {
            return await UpstreamRelay.forward(upstreamRequest, body: request.body, via: client, span: span,
                                               context: context, writer: writer)
        }
        var response: UpstreamResponse
        do { response = try await client.exchangeDirectly(upstreamRequest, body: request.body) } catch {
            return await UpstreamRelay.answerFailure(error, span: span, context: context, writer: writer)
        }
        if let again = retry.retry(after: response.head) {
            response.discard()
            do { response = try await client.exchangeDirectly(again, body: request.body) } catch {
                return await UpstreamRelay.answerFailure(error, span: span, context: context, writer: writer)
            }
            retry.remembered(from: response.head)
        }
        span?.end(status: response.head.status)
        await UpstreamRelay.relay(response, method: request.head.method, context: context, writer: writer)
    }
}

/// One admitted API call on a route (`InFlightCount`) that goes on in a task: it leaves the count
/// when the last holder lets go of it (the task's work, run or dropped with its connection), so no
/// path can leak a slot. A call relayed from the loop needs no ticket: its `LoopRelay`, already an
/// object of its own, leaves the count the same way.
final class InFlightTicket: Sendable {
    private let count: InFlightCount
    private let client: UInt64

    /// For a call of `client` that `count` has already admitted (`InFlightCount.enter`).
    init(admitted count: InFlightCount, client: UInt64) {
        (self.count, self.client) = (count, client)
    }

    deinit { count.leave(client: client) }

    /// The answer to a call past the bound: `503` at once, before the session, the provider or
    /// the upstream is touched.
    static let refusal: HTTPResponse = {
        var response = HTTPResponse.jsonError(status: 503, error: "overloaded",
                                              description: "Too many calls to this API are in flight; retry shortly.")
        response.headers.set("Retry-After", "1")
        return response
    }()
}
