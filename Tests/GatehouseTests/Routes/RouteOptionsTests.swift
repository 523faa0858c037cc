import Testing
@testable import GatehouseCore

@Suite("Route options after the upstream URL (`;auth=…`, SPEC \"Route options\")")
struct RouteOptionsTests {
    private func route(_ upstream: String) throws -> UpstreamRoute {
        try UpstreamRoute(prefix: "/r", upstream: upstream)
    }

    private func refusal(_ upstream: String) -> String? {
        do {
            _ = try route(upstream)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("No options is auth=user, today's behaviour")
    func defaultIsUser() throws {
        let plain = try route("http://api:9000")
        #expect(plain.auth == .user)
        #expect(plain.description == "/r=http://api:9000")
        #expect(try route("http://api:9000;auth=user").auth == .user)
    }

    @Test("Each auth= value parses, and the upstream URL ends at the first ;")
    func eachValue() throws {
        #expect(try route("http://cms:9200;auth=none").auth == .none)
        #expect(try route("http://cms:9200/v1;auth=optional").auth == .optional)
        let optional = try route("http://cms:9200/v1;auth=optional")
        #expect(optional.replacementPath == "/v1")
        #expect(optional.host == "cms")
        let client = try route("https://svc.example;auth=client;scope=reports.read")
        #expect(client.auth == .client(ClientCredentialsGrant(scope: "reports.read"), sessionRequired: true))
        #expect(client.usesTLS)
    }

    @Test("auth=client takes scope=, audience= and session=optional, in any order and with spaces around")
    func clientOptions() throws {
        let auth = try route("http://svc ; session=optional ;audience=https://api.example/ ; scope=a  b ;auth=client").auth
        #expect(auth == .client(ClientCredentialsGrant(scope: "a b", audience: "https://api.example/"), sessionRequired: false))
        #expect(auth.clientGrant == ClientCredentialsGrant(scope: "a b", audience: "https://api.example/"))
        #expect(try route("http://svc;auth=client;session=required").auth == .client(ClientCredentialsGrant(), sessionRequired: true))
    }

    @Test("The description writes the options back (the configuration dump)")
    func describes() throws {
        #expect(try route("http://svc;auth=client;scope=x;audience=y;session=optional").description
                == "/r=http://svc;auth=client;scope=x;audience=y;session=optional")
        #expect(try route("http://svc;auth=none").description == "/r=http://svc;auth=none")
    }

    @Test("An unknown option is refused, naming it")
    func unknownOption() {
        #expect(refusal("http://svc;auht=none")?.contains("unknown route option \"auht\"") == true)
        #expect(refusal("http://svc;timeout")?.contains("unknown route option \"timeout\"") == true)
    }

    @Test("An unknown value is refused, naming option and value")
    func unknownValue() {
        let message = refusal("http://svc;auth=admin")
        #expect(message?.contains("auth=\"admin\"") == true)
        #expect(message?.contains("user, optional, none, client") == true)
        #expect(refusal("http://svc;auth=client;session=maybe")?.contains("session=\"maybe\"") == true)
        #expect(refusal("http://svc;auth=")?.contains("needs a value") == true)
        #expect(refusal("http://svc;auth=USER") != nil, "values are case-sensitive")
    }

    @Test("Empty, duplicate and misplaced options are refused")
    func malformed() {
        #expect(refusal("http://svc;")?.contains("empty route option") == true)
        #expect(refusal("http://svc;auth=none;;")?.contains("empty route option") == true)
        #expect(refusal("http://svc;auth=none;auth=user")?.contains("more than once") == true)
        #expect(refusal("http://svc;scope=a")?.contains("applies only to auth=client") == true)
        #expect(refusal("http://svc;auth=none;session=optional")?.contains("applies only to auth=client") == true)
        #expect(refusal("http://svc;auth=client;scope=a\"b")?.contains("RFC 6749") == true)
        #expect(refusal("http://svc;auth=client;audience=a\u{7F}b") != nil)
    }

    @Test("The route's prefix is named in the list error")
    func namesRoute() {
        let (routes, errors) = UpstreamRoute.parseList("/ok=http://a;auth=none,/bad=http://b;auth=everyone")
        #expect(routes.map(\.prefix) == ["/ok"])
        #expect(errors.count == 1)
        #expect(errors.first?.description.hasPrefix("route \"/bad\" has route option auth=\"everyone\"") == true)
    }

    @Test("Anti-forgery: user always; none never; optional and session=optional when a session cookie is present")
    func antiForgery() {
        let grant = ClientCredentialsGrant(scope: "s")
        for cookie in [false, true] {
            #expect(RouteAuth.user.requiresAntiForgery(sessionCookiePresent: cookie))
            #expect(!RouteAuth.none.requiresAntiForgery(sessionCookiePresent: cookie))
            #expect(RouteAuth.optional.requiresAntiForgery(sessionCookiePresent: cookie) == cookie)
            #expect(RouteAuth.client(grant, sessionRequired: true).requiresAntiForgery(sessionCookiePresent: cookie))
            #expect(RouteAuth.client(grant, sessionRequired: false).requiresAntiForgery(sessionCookiePresent: cookie) == cookie)
        }
    }

    @Test("Startup refuses unknown options under GATEHOUSE_ROUTES, and auth=client for a public client")
    func configuration() {
        let base = ["GATEHOUSE_ISSUER": "https://idp.example", "GATEHOUSE_CLIENT_ID": "c"]
        guard case .failure(let errors) = GatehouseConfiguration.load(
            environment: base.merging(["GATEHOUSE_ROUTES": "/p=http://p;auth=public"]) { $1 }, requireSecretKey: false)
        else { Issue.record("an unknown auth= value was accepted"); return }
        #expect(errors.issues.contains { $0.variable == "GATEHOUSE_ROUTES" && $0.message.contains("auth=\"public\"") })

        guard case .failure(let publicClient) = GatehouseConfiguration.load(
            environment: base.merging(["GATEHOUSE_ROUTES": "/r=http://r;auth=client"]) { $1 }, requireSecretKey: false)
        else { Issue.record("auth=client was accepted for a public client"); return }
        #expect(publicClient.issues.contains { $0.variable == "GATEHOUSE_ROUTES" && $0.message.contains("confidential") })

        guard case .success(let config) = GatehouseConfiguration.load(
            environment: base.merging(["GATEHOUSE_ROUTES": "/r=http://r;auth=client;scope=x", "GATEHOUSE_CLIENT_SECRET": "s"]) { $1 },
            requireSecretKey: false)
        else { Issue.record("a valid auth=client route was refused"); return }
        #expect(config.routes.first?.auth == .client(ClientCredentialsGrant(scope: "x"), sessionRequired: true))
    }
}
