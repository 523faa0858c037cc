import Testing
@testable import GatehouseCore

@Suite("Identity route options (`identity=`, `token=`, `exchange=`; SPEC \"Identity for your own APIs\")")
struct RouteIdentityOptionsTests {
    private func route(_ options: String) throws -> UpstreamRoute {
        try UpstreamRoute(prefix: "/r", upstream: "http://api:9000;" + options)
    }

    private func refusal(_ options: String) -> String? {
        do {
            _ = try route(options)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("A route without them is plain, and its description unchanged")
    func plain() throws {
        let plain = try UpstreamRoute(prefix: "/r", upstream: "http://api:9000")
        #expect(plain.identity == .plain)
        #expect(plain.identity.isPlain)
    }

    @Test("identity= and token= parse on user and optional routes, and round-trip in the description")
    func carriers() throws {
        let both = try route("identity=both;audience=orders-api")
        #expect(both.identity == RouteIdentity(carrier: .both, audience: "orders-api"))
        #expect(both.identity.signsAssertion && both.identity.sendsIdentityHeaders && both.identity.sendsAssertionHeader)
        #expect(both.description == "/r=http://api:9000;identity=both;audience=orders-api")
        let headers = try route("auth=optional;identity=headers;token=none")
        #expect(headers.auth == .optional)
        #expect(headers.identity.sendsIdentityHeaders && !headers.identity.signsAssertion)
        #expect(headers.identity.bearer == RouteIdentity.Bearer.none)
        let bearer = try route("token=assertion")
        #expect(bearer.identity.signsAssertion && !bearer.identity.sendsAssertionHeader)
        #expect(try route("identity=none").identity.isPlain)
        // auth=client keeps its grant's scope/audience and may carry identity fields.
        let client = try route("auth=client;scope=reports.read;identity=assertion")
        #expect(client.auth.clientGrant == ClientCredentialsGrant(scope: "reports.read"))
        #expect(client.identity.carrier == .assertion)
    }

    @Test("dpop=off marks an upstream that cannot take DPoP")
    func dpopOff() throws {
        let legacy = try route("dpop=off")
        #expect(legacy.identity.refusesDPoP && legacy.readsSession)
        #expect(legacy.description == "/r=http://api:9000;dpop=off")
        #expect(try route("dpop=on").identity.isPlain)
    }

    @Test("exchange= takes audience=, resource= and scope= on auth=user")
    func exchange() throws {
        let token = try route("exchange=token;audience=orders-api;scope=orders.read  orders.write")
        #expect(token.identity.exchange == .token)
        #expect(token.identity.scope == "orders.read orders.write")
        let refresh = try route("exchange=refresh;resource=https://graph.example.com")
        #expect(refresh.identity == RouteIdentity(resource: "https://graph.example.com", exchange: .refresh))
        #expect(refresh.description == "/r=http://api:9000;exchange=refresh;resource=https://graph.example.com")
        #expect(try route("exchange=refresh;scope=api://orders/.default").identity.scope == "api://orders/.default")
    }

    @Test("What means nothing or contradicts itself is refused, naming the option")
    func refusals() {
        let cases: [(String, String)] = [
            ("auth=none;identity=assertion", "needs a session"),
            ("auth=none;token=assertion", "needs a session"),
            ("identity=maybe", "not one of assertion, headers, both, none"),
            ("token=id", "not one of access, assertion, none"),
            ("exchange=magic", "not one of token, refresh"),
            ("identity=both;identity=headers", "more than once"),
            ("exchange=token", "audience=, resource= or scope="),
            ("exchange=refresh", "resource= or scope="),
            ("exchange=refresh;audience=x;scope=a", "exchange=refresh cannot send"),
            ("exchange=token;audience=x;token=assertion", "token=assertion sends none"),
            ("auth=optional;exchange=token;audience=x", "needs auth=user"),
            ("resource=https://api.example", "only with exchange"),
            ("scope=a", "applies only to auth=client"),
            ("audience=x", "names the API"),
            ("exchange=refresh;resource=relative/path", "absolute URI"),
            ("exchange=refresh;resource=https://api.example/#frag", "absolute URI"),
            ("auth=client;token=none", "does not apply to auth=client"),
            ("auth=client;exchange=token", "does not apply to auth=client"),
            ("auth=none;dpop=off", "auth=user or auth=optional"),
            ("dpop=maybe", "not one of on, off"),
        ]
        for (options, words) in cases {
            let message = refusal(options)
            #expect(message?.contains(words) == true, "\(options): \(message ?? "accepted")")
        }
    }
}
