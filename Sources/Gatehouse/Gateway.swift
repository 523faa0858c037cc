import EventLoops
import GatehouseCore
import GatehouseStatic
import HTTP1
import HTTPServer

/// The gateway's router: decides each request once (`answer`) and says how it is answered: from
/// memory now (health, metrics, cached files, refusals), on the loop (the proxy's usual exchange),
/// or in a task with what was decided (`RequestPlan`). Every answer goes through `SecuredAnswers`.
public final class Gateway: HTTPHandler {
    public let context: GatewayContext
    private let routes: RouteTable
    /// `/healthz`'s answer never changes: built (and secured) once, not per request.
    private let healthAnswer: HTTPResponse
    /// `/metrics` on the public port when it has a listener of its own.
    private let notFound: HTTPResponse
    /// The session cookie's and the anti-forgery header's names, read by every request's gate.
    private let cookieName: String
    private let csrfHeader: String
    /// Whether `/callback/NAME` and `/backchannel-logout/NAME` are the gateway's (`GATEHOUSE_PROVIDERS`).
    private let namedProviders: Bool
    /// Whether `/request-object/…` is the gateway's (a provider with `GATEHOUSE_REQUEST_OBJECT=reference`).
    private let requestObjects: Bool
    /// The answers of the own endpoints built once (`OwnEndpoint.Answer.builtOnce`: `/providers`,
    /// `/.well-known/jwks.json`), by `OwnPath` raw value.
    private let builtAnswers: [HTTPResponse?]
    /// `GATEHOUSE_CORS_ORIGINS`.
    private let cors: CORSPolicy
    /// `/auth`'s policies, by query.
    private let forwardAuthPolicies = ForwardAuthPolicies()

    public convenience init(context: GatewayContext) {
        self.init(context: context, routes: context.configuration.routeTable)
    }

    private init(context: GatewayContext, routes: RouteTable) {
        self.context = context
        self.routes = routes
        cookieName = context.configuration.cookieName.ownedCopy
        csrfHeader = context.configuration.csrfHeader.ownedCopy
        var health = context.secure.response(OpsEndpoints.health())
        health.headers.checkAll()
        healthAnswer = health
        notFound = context.secure.response(HTTPResponse.jsonError(status: 404, error: "not_found", description: "Not found."))
        namedProviders = context.providers.named
        requestObjects = context.providers.all.contains { $0.configuration.idp.requestObject == .reference }
        builtAnswers = OwnEndpoint.table.map { row in
            guard case .builtOnce(let build) = row.answer else { return nil }
            return context.secure.response(build(context))
        }
        cors = context.configuration.cors
    }

    /// A gateway of the loop's own: the same context members and routes in objects and storage
    /// only that loop touches (`GatewayContext.loopCopy`, `RouteTable.loopCopy`), so a proxied
    /// request's references (its route, context, forwarded fields) are counted on its loop's core.
    public func loopHandler(for loop: EventLoop) -> any HTTPHandler {
        Gateway(context: context.loopCopy, routes: routes.loopCopy)
    }

    /// The class of a request the server answered without asking the gateway (malformed, too
    /// large): every other request's class comes from its route (`RequestRoute.routeClass`).
    public func routeClass(of path: Substring) -> RouteClass {
        RequestRoute(path: path, routes: routes, namedProviders: namedProviders, requestObjects: requestObjects).routeClass
    }

    /// `http.route` of a request to `path` (`RequestRoute.template`).
    public func routeTemplate(of path: Substring) -> String? {
        RequestRoute(path: path, routes: routes, namedProviders: namedProviders, requestObjects: requestObjects).template(path: path)
    }

    public func answer(_ head: HTTPRequestHead, _ connection: RequestConnection) -> HandlerAnswer {
        let route = RequestRoute(path: head.path, routes: routes, namedProviders: namedProviders, requestObjects: requestObjects)
        connection.categorize(route.routeClass.rawValue)
        // A page of another origin (`GATEHOUSE_CORS_ORIGINS`): its preflight is answered here, before
        // the gate (it carries no anti-forgery header), and a listed origin's answer gets the CORS
        // fields on whatever transport writes it, but the loop's (whose writer is not wrapped).
        guard cors.isEnabled, CrossOriginAnswers.concerns(route), head.headers.contains("Origin") else {
            return answer(head, connection, route: route, loopTransport: true)
        }
        let origins = head.headers.values("Origin")
        let origin = origins.count == 1 ? cors.allowedOrigin(origins[0][...]) : nil
        if CrossOriginAnswers.isPreflight(head) {
            return .now(context.secure.response(CrossOriginAnswers.preflight(head, route: route, origin: origin, csrfHeader: csrfHeader)))
        }
        guard let origin else { return answer(head, connection, route: route, loopTransport: true) }
        return CrossOriginAnswers.answer(answer(head, connection, route: route, loopTransport: false), origin: origin)
    }

    /// The answer for a request routed to `route`. `loopTransport`: whether a proxied call may be
    /// sent and relayed from the loop (`LoopRelay`), whose writer nothing can wrap.
    private func answer(_ head: HTTPRequestHead, _ connection: RequestConnection, route: RequestRoute,
                        loopTransport: Bool) -> HandlerAnswer {
        // Answers from memory, before the gate: these routes take every method and no session.
        switch route {
        case .own(.healthz):
            return .now(healthAnswer)
        case .own(.metrics):
            // With GATEHOUSE_METRICS_LISTEN, only that listener serves it (`MetricsListener`).
            guard context.configuration.metricsListen == nil else { return .now(notFound) }
            return .now(context.secure.response(OpsEndpoints.metrics(context)))
        case .staticFile:
            if case .response(let response) = context.staticFiles.respond(to: head) {
                return .now(context.secure.response(response))
            }
        default:
            break
        }
        let fieldsRead = context.speedLayer.isOn ? connection.memo { RequestFieldMemo() } : RequestFieldMemo()
        fieldsRead.use(head.headers)
        let plan = RequestPlan(route, head: head, cookieName: cookieName, csrfHeader: csrfHeader, fieldsRead: fieldsRead)
        switch plan.verdict {
        case .pass:
            break
        case .refuse(let response):
            return .now(context.secure.response(response))
        case .webSocket:
            guard case .api(let match) = plan.route, let target = ForwardTarget(match, head: head) else {
                return .now(context.secure.response(ForwardTarget.unroutable))
            }
            let context = self.context
            return .inTask { request, writer in
                await WebSocketProxy(context: context).forward(request, to: target, writer: context.secure.writer(writer))
            }
        }
        let context = self.context
        switch plan.route {
        case .api(let match):
            guard let target = ForwardTarget(match, query: head.query) else {
                return .now(context.secure.response(ForwardTarget.unroutable))
            }
            return ApiProxy(context: context).forward(target, head: head, connection: connection, fieldsRead: fieldsRead,
                                                      loopTransport: loopTransport)
        case .own(let path):
            return ownAnswer(path, head: head, fieldsRead: fieldsRead)
        case .staticFile:
            return .inTask { request, writer in await context.staticFiles.serve(request.head, to: context.secure.writer(writer)) }
        }
    }

    /// The gateway's own endpoints past the gate, as their row in `OwnEndpoint.table` says.
    private func ownAnswer(_ path: OwnPath, head: HTTPRequestHead, fieldsRead: RequestFieldMemo) -> HandlerAnswer {
        let context = self.context
        let row = OwnEndpoint.of(path)
        switch row.answer {
        case .inTask(let respond):
            let name = row.name(in: head.path)
            return endpoint { request in await respond(context, request, name) }
        case .inTaskOwnFields(let respond):
            let name = row.name(in: head.path)
            return .inTask { request, writer in await writer.respond(await respond(context, request, name)) }
        case .builtOnce:
            return .now(builtAnswers[Int(path.rawValue)] ?? notFound)
        case .forwardAuth:
            return ForwardAuthEndpoint(context: context).answer(head, csrfHeader: csrfHeader, fieldsRead: fieldsRead,
                                                                policies: forwardAuthPolicies)
        case .beforeGate:
            return .now(notFound)  // answered before the gate (`answer`)
        }
    }

    /// An endpoint's complete answer, made in a task and secured.
    private func endpoint(_ respond: @escaping @Sendable (HTTPRequest) async -> HTTPResponse) -> HandlerAnswer {
        let secure = context.secure
        return .inTask { request, writer in await writer.respond(secure.response(await respond(request))) }
    }
}

/// What the gateway decides about a request that needs more than an answer from memory, once, on
/// its loop: where it goes (`RequestRoute`: an own endpoint, an API route with its upstream target,
/// the static files) and the gate's verdict (the route's methods, then the one anti-forgery check).
/// The endpoints, both proxy transports and the access record read this value; nothing routes or
/// gates the request again.
struct RequestPlan {
    let route: RequestRoute
    let verdict: Verdict

    enum Verdict {
        case pass
        case refuse(HTTPResponse)
        /// A WebSocket handshake under a route: the Origin stands in for the CSRF header (browsers
        /// cannot add headers to it), checked by the WebSocket proxy.
        case webSocket
    }

    /// The plan for `head` on `route`. `fieldsRead`: what was read from the request's fields (the
    /// connection's memo, or a fresh one with the speed layer off).
    init(_ route: RequestRoute, head: HTTPRequestHead, cookieName: String, csrfHeader: String,
         fieldsRead: RequestFieldMemo) {
        verdict = Self.gate(route, head, cookieName: cookieName, csrfHeader: csrfHeader, fieldsRead: fieldsRead)
        self.route = route
    }

    /// What every request meets before its handler: the route's methods, then (WebSocket handshakes
    /// aside) the one anti-forgery gate (SPEC: `/user`, `POST /logout`, every API call), so a
    /// cross-site request changes nothing, not even the idle timer.
    private static func gate(_ route: RequestRoute, _ head: HTTPRequestHead, cookieName: String, csrfHeader: String,
                             fieldsRead: RequestFieldMemo) -> Verdict {
        guard route.allows(method: head.method) else {
            return .refuse(Responses.methodNotAllowed(route.allowedMethods ?? ""))
        }
        if case .api = route, WebSocketHandshake.isUpgrade(method: head.method, version: head.version, headers: head.headers) {
            return .webSocket
        }
        if route.requiresAntiForgery(method: head.method,
                                     sessionCookiePresent: fieldsRead.sessionCookiePresent(named: cookieName)),
           !fieldsRead.antiForgeryHeaderValid(named: csrfHeader) {
            return .refuse(Responses.csrfMissing)
        }
        return .pass
    }
}

/// Where a routed request goes upstream: the route and the origin-form target (the path as the
/// route maps it, then the query byte for byte). API calls and WebSocket handshakes share it.
struct ForwardTarget {
    let route: UpstreamRoute
    let target: String

    /// nil for a refused match: answer `ForwardTarget.unroutable` and forward nothing.
    init?(_ match: consuming RouteMatch, head: HTTPRequestHead) {
        self.init(match, query: head.query)
    }

    /// As above with the request's query alone (the proxy passes that, not a copy of its head).
    init?(_ match: consuming RouteMatch, query: Substring?) {
        guard case .forward(let route, let upstreamPath) = consume match else { return nil }
        self.route = route
        var target = upstreamPath
        if let query { target += "?" + query }
        self.target = target
    }

    static let unroutable = HTTPResponse.jsonError(status: 400, error: "invalid_path",
                                                   description: "The path cannot be routed.")
}

/// Where one request goes, decided once from its path: one of the gateway's own endpoints, a
/// configured API route, or the static files. The router dispatches on this value; the method and
/// anti-forgery rules read it instead of looking at the path again.
enum RequestRoute {
    case own(OwnPath)
    case api(RouteMatch)
    case staticFile

    init(path: Substring, routes: RouteTable, namedProviders: Bool = false, requestObjects: Bool = false) {
        if let own = OwnPath(path, namedProviders: namedProviders, requestObjects: requestObjects) {
            self = .own(own)
        } else if let match = routes.match(path: path) {
            self = .api(match)
        } else {
            self = .staticFile
        }
    }

    /// The own endpoint, when it is one.
    var ownPath: OwnPath? {
        if case .own(let path) = self { return path }
        return nil
    }

    /// The methods this route answers, or nil when every method reaches the handler.
    var allowedMethods: String? {
        switch self {
        case .own(let path): OwnEndpoint.of(path).methods?.joined(separator: ", ")
        case .staticFile: nil
        // Tunnels and request echoes are no API calls: refused before the session, the token or
        // the upstream is touched.
        case .api: ProxyMethodPolicy.allowed
        }
    }

    func allows(method: String) -> Bool {
        switch self {
        case .own(let path): OwnEndpoint.facts(of: path).everyMethod || OwnEndpoint.of(path).methods?.contains(method) == true
        case .staticFile: true
        case .api: ProxyMethodPolicy.isForwardable(method)
        }
    }

    /// Whether the SPEC's anti-forgery header is required: `/user`, `POST /logout` and API requests
    /// as their route's `auth=` policy says (``RouteAuth/requiresAntiForgery(sessionCookiePresent:)``).
    func requiresAntiForgery(method: String, sessionCookiePresent: @autoclosure () -> Bool = true) -> Bool {
        switch self {
        case .api(.forward(let route, _)), .api(.refused(let route)):
            route.auth.requiresAntiForgery(sessionCookiePresent: sessionCookiePresent())
        case .own(let path): OwnEndpoint.requiresAntiForgery(OwnEndpoint.facts(of: path).antiForgery, method: method)
        case .staticFile: false
        }
    }

    /// A trace span's `http.route`: an own endpoint's path, an API route's prefix; nil for the
    /// static files (any path).
    func template(path: Substring) -> String? {
        switch self {
        case .own(let own):
            OwnEndpoint.of(own).shape == .handle ? "\(OwnEndpoint.of(own).spelling){handle}" : String(path)
        case .api(.forward(let route, _)), .api(.refused(let route)): route.prefix
        case .staticFile: nil
        }
    }

    /// The class the metrics and the access log count this request under.
    var routeClass: RouteClass {
        switch self {
        case .own(let path): OwnEndpoint.facts(of: path).routeClass
        case .api: .api
        case .staticFile: .static
        }
    }
}
