import GatehouseCore
import HTTPServer

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
        case .own(let path): OwnEndpoint.of(path).methods?.contains(method) ?? true
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
        case .own(let path): OwnEndpoint.of(path).requiresAntiForgery(method: method)
        case .staticFile: false
        }
    }

    /// A trace span's `http.route`: an own endpoint's path, an API route's prefix; nil for the
    /// static files (any path).
    func template(path: Substring) -> String? {
        switch self {
        case .own(.requestObject): String(OwnPath.withoutHandle(path))
        case .own: String(path)
        case .api(.forward(let route, _)), .api(.refused(let route)): route.prefix
        case .staticFile: nil
        }
    }

    /// The class the metrics and the access log count this request under.
    var routeClass: RouteClass {
        switch self {
        case .own(let path): OwnEndpoint.of(path).routeClass
        case .api: .api
        case .staticFile: .static
        }
    }
}
