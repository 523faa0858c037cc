import GatehouseCore
import Testing
@testable import Gatehouse

/// One routing decision per request (issue 11): the route value decides the handler, the allowed
/// methods and whether the anti-forgery header is required, in one place.
@Suite("Gateway: one routing decision per request (RequestRoute)")
struct RequestRouteTests {
    static func routes() throws -> RouteTable {
        let (routes, errors) = UpstreamRoute.parseList("/api=http://127.0.0.1:9")
        try #require(errors.isEmpty)
        return RouteTable(routes)
    }

    static func route(_ path: String) throws -> RequestRoute {
        RequestRoute(path: path[...], routes: try routes())
    }

    @Test("Own endpoints, API routes and static files are told apart once")
    func classification() throws {
        guard case .own(.user) = try Self.route("/user") else { Issue.record("/user"); return }
        guard case .api = try Self.route("/api/items") else { Issue.record("/api/items"); return }
        guard case .staticFile = try Self.route("/app.js") else { Issue.record("/app.js"); return }
        guard case .staticFile = try Self.route("/users") else { Issue.record("/users"); return }
    }

    @Test("The anti-forgery header is required on /user, POST /logout and API calls only (SPEC)", arguments: [
        ("GET", "/user", true), ("POST", "/logout", true), ("GET", "/logout", false), ("GET", "/api/x", true),
        ("DELETE", "/api/x", true), ("GET", "/login", false), ("GET", "/callback", false),
        ("POST", "/backchannel-logout", false), ("GET", "/healthz", false), ("GET", "/index.html", false),
    ])
    func antiForgery(method: String, path: String, required: Bool) throws {
        #expect(try Self.route(path).requiresAntiForgery(method: method) == required)
    }

    @Test("Methods are checked before anything else, per route", arguments: [
        ("POST", "/user", false), ("GET", "/user", true), ("PUT", "/logout", false), ("POST", "/logout", true),
        ("GET", "/backchannel-logout", false), ("CONNECT", "/api/x", false), ("TRACE", "/api/x", false),
        ("PATCH", "/api/x", true), ("POST", "/index.html", true),
    ])
    func methods(method: String, path: String, allowed: Bool) throws {
        #expect(try Self.route(path).allows(method: method) == allowed)
    }
}
