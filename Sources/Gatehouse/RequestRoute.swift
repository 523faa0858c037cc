import GatehouseCore
import HTTPServer

/// Where one request goes, decided once from its path: one of the gateway's own endpoints, a
/// configured API route, or the static files. The router dispatches on this value; the method and
/// anti-forgery rules read it instead of looking at the path again.
enum RequestRoute {
    case own(OwnPath)
    case api(RouteMatch)
    case staticFile

    init(path: Substring, routes: RouteTable, namedProviders: Bool = false) {
        if let own = OwnPath(path, namedProviders: namedProviders) {
            self = .own(own)
        } else if let match = routes.match(path: path) {
            self = .api(match)
        } else {
            self = .staticFile
        }
    }

    /// The methods this route answers, or nil when every method reaches the handler.
    var allowedMethods: String? {
        switch self {
        case .own(.login), .own(.callback), .own(.user), .own(.providers), .own(.providerCallback), .own(.jwks),
             .own(.sessions): return "GET"
        case .own(.sessionsRevoke): return "POST"
        case .own(.logout): return "GET, POST"
        case .own(.backchannelLogout), .own(.providerBackchannelLogout): return "POST"
        case .own(.healthz), .own(.readyz), .own(.metrics), .staticFile: return nil
        // Tunnels and request echoes are no API calls: refused before the session, the token or
        // the upstream is touched.
        case .api: return ProxyMethodPolicy.allowed
        }
    }

    func allows(method: String) -> Bool {
        switch self {
        case .own(.login), .own(.callback), .own(.user), .own(.providers), .own(.providerCallback), .own(.jwks),
             .own(.sessions):
            return method == "GET"
        case .own(.sessionsRevoke): return method == "POST"
        case .own(.logout): return method == "GET" || method == "POST"
        case .own(.backchannelLogout), .own(.providerBackchannelLogout): return method == "POST"
        case .own(.healthz), .own(.readyz), .own(.metrics), .staticFile: return true
        case .api: return ProxyMethodPolicy.isForwardable(method)
        }
    }

    /// Whether the SPEC's anti-forgery header is required: `/user`, `POST /logout` and API requests
    /// as their route's `auth=` policy says (``RouteAuth/requiresAntiForgery(sessionCookiePresent:)``).
    /// `GET /logout` is the provider's front-channel logout and carries no header.
    func requiresAntiForgery(method: String, sessionCookiePresent: @autoclosure () -> Bool = true) -> Bool {
        switch self {
        case .api(.forward(let route, _)), .api(.refused(let route)):
            return route.auth.requiresAntiForgery(sessionCookiePresent: sessionCookiePresent())
        case .own(.user), .own(.sessions), .own(.sessionsRevoke): return true
        case .own(.logout): return method != "GET"
        default: return false
        }
    }

    /// The class the metrics and the access log count this request under.
    var routeClass: RouteClass {
        switch self {
        case .own(.login), .own(.providers): return .login
        case .own(.callback), .own(.providerCallback): return .callback
        case .own(.user), .own(.sessions), .own(.sessionsRevoke): return .user
        case .own(.logout), .own(.backchannelLogout), .own(.providerBackchannelLogout): return .logout
        case .own(.healthz), .own(.readyz), .own(.metrics), .own(.jwks): return .ops
        case .api: return .api
        case .staticFile: return .static
        }
    }
}
