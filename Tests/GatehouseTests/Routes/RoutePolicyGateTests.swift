import GatehouseCore
import Testing
@testable import Gatehouse

/// The one anti-forgery gate reads the matched route's `auth=` policy (issue 14).
@Suite("Gateway: the anti-forgery gate follows the route's auth= policy")
struct RoutePolicyGateTests {
    static func route(_ path: String) throws -> RequestRoute {
        let (routes, errors) = UpstreamRoute.parseList(
            "/api=http://u:9,/open=http://u:9;auth=none,/maybe=http://u:9;auth=optional,"
                + "/svc=http://u:9;auth=client,/svcopen=http://u:9;auth=client;session=optional")
        try #require(errors.isEmpty, "\(errors)")
        return RequestRoute(path: path[...], routes: RouteTable(routes))
    }

    @Test("Required per route, with and without a session cookie", arguments: [
        ("/api/x", false, true), ("/api/x", true, true),
        ("/open/x", false, false), ("/open/x", true, false),
        ("/maybe/x", false, false), ("/maybe/x", true, true),
        ("/svc/x", false, true), ("/svc/x", true, true),
        ("/svcopen/x", false, false), ("/svcopen/x", true, true),
    ])
    func gate(path: String, cookie: Bool, required: Bool) throws {
        #expect(try Self.route(path).requiresAntiForgery(method: "POST", sessionCookiePresent: cookie) == required)
    }

    @Test("The matched route carries its policy for every way into the upstream")
    func policyOnTheMatch() throws {
        guard case .api(.forward(let route, let upstreamPath)) = try Self.route("/svcopen/a") else {
            Issue.record("/svcopen/a did not match"); return
        }
        #expect(upstreamPath == "/svcopen/a")
        #expect(route.auth == .client(ClientCredentialsGrant(), sessionRequired: false))
    }
}
