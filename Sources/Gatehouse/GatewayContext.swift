import FoundationEssentials
import GatehouseCore
import GatehouseSessions
import GatehouseStatic
import GatehouseTime
import HTTPClient
import EventLoops
import HTTP1
import HTTPServer
import Logging

/// The shared parts every endpoint uses; endpoints get what they need, nothing reaches back. A class
/// (immutable, shared) so handing it to an endpoint costs one retain, not one per member.
public final class GatewayContext: Sendable {
    public let configuration: GatehouseConfiguration
    public let provider: ProviderConnection
    /// The one door to sessions, pending logins and the logout replay cache.
    public let sessions: SessionCache
    public let metrics: GatewayMetrics
    /// How `http://` upstreams are reached (the pooled client in production).
    public let upstream: any UpstreamTransport
    /// How `https://` upstreams are reached (the pooled client with TLS in production).
    public let httpsUpstream: any UpstreamTransport
    /// `upstream` and `httpsUpstream` as the pooled client when they are one (production), decided
    /// once: the relay calls it directly instead of casting the transport on every request.
    let upstreamClient: UpstreamClient?
    let httpsUpstreamClient: UpstreamClient?
    public let staticFiles: StaticFiles
    public let cookie: SessionCookie
    public let refresher: TokenRefresher
    /// The gateway's own client-credentials tokens for `auth=client` routes.
    public let clientTokens: ClientTokenCache
    /// The open WebSockets, closed at their idle timeout, the end of their session and shutdown.
    public let websockets: WebSocketTunnels
    /// What the proxy tells upstreams about itself, decided once (not per request) from the configuration.
    public let forwarding: ProxyForwarding
    public let logger: Logger
    /// The gateway's one clock (a manual one in tests); nothing else reads the time.
    public let clock: any GatewayClock
    /// Unix seconds from ``clock``.
    public let now: @Sendable () -> Int64

    public init(configuration: GatehouseConfiguration, provider: ProviderConnection, store: any SessionStore,
                metrics: GatewayMetrics, upstream: any UpstreamTransport, httpsUpstream: (any UpstreamTransport)? = nil,
                staticFiles: StaticFiles, logger: Logger, clock: any GatewayClock = SystemClock()) {
        self.configuration = configuration
        self.provider = provider
        self.metrics = metrics
        self.upstream = upstream
        self.httpsUpstream = httpsUpstream ?? UpstreamClients.tls(configuration)
        upstreamClient = upstream as? UpstreamClient
        httpsUpstreamClient = self.httpsUpstream as? UpstreamClient
        self.staticFiles = staticFiles
        self.logger = logger
        self.clock = clock
        let now: @Sendable () -> Int64 = { clock.unixSeconds() }
        self.now = now
        cookie = SessionCookie(configuration: configuration)
        forwarding = ProxyForwarding(publicURL: configuration.publicURL, trustedProxies: configuration.trustedProxies,
                                     csrfHeader: configuration.csrfHeader)
        let sessionCache = SessionCache(store: store, configuration: configuration, logger: logger, clock: clock)
        sessions = sessionCache
        refresher = TokenRefresher(provider: provider, sessions: sessionCache, metrics: metrics,
                                   configuration: configuration, logger: logger, now: now)
        clientTokens = ClientTokenCache(provider: provider, margin: Int64(configuration.refreshMargin), logger: logger, now: now)
        websockets = WebSocketTunnels(idleSeconds: configuration.websocketIdle, logger: logger) { idHash in
            do { return try await sessionCache.resolve(idHash: idHash, now: now(), slide: false) != nil } catch { return true }
        }
        let websockets = self.websockets
        sessionCache.onSessionEnded { idHash in websockets.sessionEnded(idHash: idHash) }
    }

    /// This context for one event loop (`Gateway.loopHandler(for:)`): the same members, shared
    /// with every loop (one session cache, one set of metrics, one provider), but a context object
    /// of its own (each proxied request keeps a reference to its context) and the proxy's
    /// forwarding values in storage of their own (copied into each forwarded request).
    var loopCopy: GatewayContext { GatewayContext(copying: self) }

    private init(copying other: GatewayContext) {
        configuration = other.configuration
        provider = other.provider
        sessions = other.sessions
        metrics = other.metrics
        upstream = other.upstream
        httpsUpstream = other.httpsUpstream
        upstreamClient = other.upstreamClient
        httpsUpstreamClient = other.httpsUpstreamClient
        staticFiles = other.staticFiles
        cookie = other.cookie
        refresher = other.refresher
        clientTokens = other.clientTokens
        websockets = other.websockets
        forwarding = other.forwarding.loopCopy
        logger = other.logger
        clock = other.clock
        now = other.now
    }
}

/// The gateway's router: picks one handler per request and adds the security headers every
/// response carries.
public final class Gateway: HTTPHandler {
    public let context: GatewayContext
    private let routes: RouteTable
    /// `/healthz`'s answer never changes: built (and secured) once, not per request.
    private let healthAnswer: HTTPResponse
    /// The session cookie's and the anti-forgery header's names, read by every request's gate.
    private let cookieName: String
    private let csrfHeader: String

    public convenience init(context: GatewayContext) {
        self.init(context: context, routes: context.configuration.routeTable)
    }

    private init(context: GatewayContext, routes: RouteTable) {
        self.context = context
        self.routes = routes
        cookieName = context.configuration.cookieName.ownedCopy
        csrfHeader = context.configuration.csrfHeader.ownedCopy
        var health = Self.secured(OpsEndpoints.health(), strictTransportSecurity: context.configuration.strictTransportSecurity)
        health.headers.checkAll()
        healthAnswer = health
    }

    /// A gateway of the loop's own: the same context members and routes in objects and storage
    /// only that loop touches (`GatewayContext.loopCopy`, `RouteTable.loopCopy`), so a proxied
    /// request's references (its route, context, forwarded fields) are counted on its loop's core.
    public func loopHandler(for loop: EventLoop) -> any HTTPHandler {
        Gateway(context: context.loopCopy, routes: routes.loopCopy)
    }

    public func routeClass(of path: Substring) -> RouteClass {
        switch OwnPath(path) {
        case .login: return .login
        case .callback: return .callback
        case .user: return .user
        case .logout, .backchannelLogout: return .logout
        case .healthz, .readyz, .metrics: return .ops
        case nil: return routes.covers(path: path) ? .api : .static
        }
    }

    // MARK: Fast path (on the event loop, no task)

    public func immediateResponse(to head: HTTPRequestHead, peer: PeerAddress) -> HTTPResponse? {
        let path = head.path
        switch OwnPath(path) {
        case .healthz:
            return healthAnswer
        case .readyz:
            return nil  // asks the store: answered in a task, never on the loop
        case .metrics:
            return secured(OpsEndpoints.metrics(context))
        case .login, .callback, .user, .logout, .backchannelLogout:
            return nil
        case nil:
            guard !routes.covers(path: path) else { return nil }
            if case .response(let response) = context.staticFiles.respond(to: head) {
                return secured(response)
            }
            return nil
        }
    }

    // MARK: A bodiless API call whose upstream answer is relayed from the loop (no task)

    public func handleOnLoop(_ request: HTTPRequest, writer: any HTTPResponseWriter, completion: HandlerCompletion) -> Bool {
        // Refusals, other paths and anything with a body are `handle`'s (it routes again: a few
        // hundred instructions, on requests that are not the proxy's usual ones).
        guard request.body.declaredLength == 0 else { return false }
        let route = RequestRoute(path: request.head.path, routes: routes)
        let fieldsRead = RequestFieldMemo.of(request)
        guard case .pass = gate(route, request.head, fieldsRead), case .api(let match) = consume route else { return false }
        return ApiProxy(context: context).forwardOnLoop(request, match: match, writer: writer, completion: completion,
                                                        fieldsRead: fieldsRead)
    }

    /// What every request meets before its handler: the route's methods, then (WebSocket handshakes
    /// aside) the one anti-forgery gate (SPEC: `/user`, `POST /logout`, every API call), so a
    /// cross-site request changes nothing, not even the idle timer.
    private enum Gate {
        case pass
        case refuse(HTTPResponse)
        /// A WebSocket handshake under a route: the Origin stands in for the CSRF header (browsers
        /// cannot add headers to it), checked by the WebSocket proxy.
        case webSocket
    }

    /// `fieldsRead`: the connection's memo of what was read from these fields (nil: read them).
    private func gate(_ route: RequestRoute, _ head: HTTPRequestHead, _ fieldsRead: RequestFieldMemo?) -> Gate {
        guard route.allows(method: head.method) else {
            return .refuse(Responses.methodNotAllowed(route.allowedMethods ?? ""))
        }
        if case .api = route, WebSocketHandshake.isUpgrade(method: head.method, version: head.version, headers: head.headers) {
            return .webSocket
        }
        let sessionCookiePresent = fieldsRead?.sessionCookiePresent(named: cookieName)
            ?? CookieParser.isPresent(named: cookieName, in: head.headers)
        if route.requiresAntiForgery(method: head.method, sessionCookiePresent: sessionCookiePresent),
           !(fieldsRead?.antiForgeryHeaderValid(named: csrfHeader) ?? CSRFPolicy.check(head.headers, headerName: csrfHeader)) {
            return .refuse(Responses.csrfMissing)
        }
        return .pass
    }

    // MARK: Everything else (in a task on the same loop)

    public func handle(_ request: HTTPRequest, writer: any HTTPResponseWriter) async {
        // Made where a path needs it (each path writes through at most one): the API proxy secures its
        // answers itself, and a wrapper allocated per proxied request was a tenth of its allocations.
        var secure: SecuredResponseWriter {
            SecuredResponseWriter(writer, strictTransportSecurity: context.configuration.strictTransportSecurity)
        }
        let route = RequestRoute(path: request.head.path, routes: routes)
        switch gate(route, request.head, RequestFieldMemo.of(request)) {
        case .pass:
            break
        case .refuse(let response):
            return await secure.respond(response)
        case .webSocket:
            guard case .api(let match) = route,
                  let target = ForwardTarget(match, head: request.head) else { return await secure.respond(ForwardTarget.unroutable) }
            return await WebSocketProxy(context: context).forward(request, to: target, writer: secure)
        }
        // Consumed: the match is moved into the proxy, not copied (its route and path retained
        // again, then released with the route).
        switch consume route {
        case .own(.login): await secure.respond(await LoginEndpoint(context: context).respond(to: request))
        case .own(.callback): await secure.respond(await CallbackEndpoint(context: context).respond(to: request))
        case .own(.user): await secure.respond(await UserEndpoint(context: context).respond(to: request))
        case .own(.logout): await secure.respond(await LogoutEndpoint(context: context).respond(to: request))
        case .own(.backchannelLogout): await secure.respond(await BackchannelLogoutEndpoint(context: context).respond(to: request))
        case .own(.readyz): await secure.respond(await OpsEndpoints.readiness(context))
        case .own(.healthz), .own(.metrics):
            await secure.respond(immediateResponse(to: request.head, peer: request.peer) ?? OpsEndpoints.health())
        case .api(let match): await ApiProxy(context: context).forward(request, match: match, writer: writer)
        case .staticFile: await context.staticFiles.serve(request.head, to: secure)
        }
    }

    func secured(_ response: HTTPResponse) -> HTTPResponse {
        Self.secured(response, strictTransportSecurity: context.configuration.strictTransportSecurity)
    }

    static func secured(_ response: HTTPResponse, strictTransportSecurity: String?) -> HTTPResponse {
        var response = response
        SecurityHeaders.apply(to: &response.headers, html: SecurityHeaders.isHTML(response.headers),
                              strictTransportSecurity: strictTransportSecurity)
        return response
    }

}

/// Adds the security headers to whatever a handler writes (complete or streamed).
final class SecuredResponseWriter: HTTPResponseWriter, @unchecked Sendable {
    private let inner: any HTTPResponseWriter
    private let strictTransportSecurity: String?

    init(_ inner: any HTTPResponseWriter, strictTransportSecurity: String? = nil) {
        self.inner = inner
        self.strictTransportSecurity = strictTransportSecurity
    }

    var headWritten: Bool { inner.headWritten }

    func respond(_ response: HTTPResponse) async {
        await inner.respond(secured(response))
    }

    func respondImmediately(_ response: HTTPResponse) -> Bool {
        inner.respondImmediately(secured(response))
    }

    private func secured(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        SecurityHeaders.apply(to: &response.headers, html: SecurityHeaders.isHTML(response.headers),
                              strictTransportSecurity: strictTransportSecurity)
        return response
    }

    func writeHead(_ head: HTTPResponseHead, contentLength: Int?) async throws(HTTPWriteError) {
        var head = head
        SecurityHeaders.apply(to: &head.headers, html: SecurityHeaders.isHTML(head.headers),
                              strictTransportSecurity: strictTransportSecurity)
        try await inner.writeHead(head, contentLength: contentLength)
    }

    func writeBody(_ bytes: [UInt8]) async throws(HTTPWriteError) { try await inner.writeBody(bytes) }
    func finish() async throws(HTTPWriteError) { try await inner.finish() }
    func abort() { inner.abort() }

    func switchProtocols(_ head: HTTPResponseHead) async throws(HTTPWriteError) -> any TunnelEndpoint {
        // No security headers on a 101: what follows is not an HTTP answer the browser renders.
        try await inner.switchProtocols(head)
    }
}
