import Testing
@testable import GatehouseCore

private func table(_ text: String) throws -> RouteTable {
    let (routes, errors) = UpstreamRoute.parseList(text)
    try #require(errors.isEmpty, "\(errors)")
    return RouteTable(routes)
}

/// The upstream path for a forwarded match, "REFUSED", or nil when no route matches.
private func outcome(_ table: RouteTable, _ path: String) -> String? {
    switch table.match(path: path[...]) {
    case .forward(_, let upstreamPath)?: upstreamPath
    case .refused?: "REFUSED"
    case nil: nil
    }
}

@Suite("Upstream routes (GATEHOUSE_ROUTES)")
struct UpstreamRouteTests {
    @Test("parses pairs, trims, normalizes the trailing slash")
    func parses() throws {
        let (routes, errors) = UpstreamRoute.parseList(" /api/ = http://127.0.0.1:9000 ,, /b=https://Host.example/v1/ ")
        #expect(errors.isEmpty)
        #expect(routes.count == 2)
        #expect(routes[0].prefix == "/api")
        #expect(routes[0].replacementPath == nil)
        #expect(routes[0].host == "127.0.0.1")
        #expect(routes[0].port == 9000)
        #expect(routes[0].hostHeader == "127.0.0.1:9000")
        #expect(!routes[0].usesTLS)
        #expect(routes[1].prefix == "/b")
        #expect(routes[1].replacementPath == "/v1")
        #expect(routes[1].host == "host.example")
        #expect(routes[1].port == 443)
        #expect(routes[1].hostHeader == "host.example")
        #expect(routes[1].usesTLS)
    }

    @Test("IPv6 upstreams connect without brackets and send Host with them")
    func ipv6() throws {
        let route = try UpstreamRoute(prefix: "/api", upstream: "http://[::1]:9000")
        #expect(route.host == "::1")
        #expect(route.hostHeader == "[::1]:9000")
    }

    @Test("reports every bad entry")
    func reportsAll() {
        let (routes, errors) = UpstreamRoute.parseList("x=http://a,/ok=http://b,/c=mailto:x,/d")
        #expect(routes.map(\.prefix) == ["/ok"])
        #expect(errors.count == 3)
    }

    @Test("refuses prefixes that shadow Gatehouse endpoints", arguments: ["/login", "/user", "/user/x", "/metrics", "/callback"])
    func reserved(prefix: String) {
        #expect(throws: UpstreamRoute.ParseError.self) { try UpstreamRoute(prefix: prefix, upstream: "http://x") }
    }

    @Test("a prefix that merely starts like an endpoint is fine", arguments: ["/users", "/loginx", "/api"])
    func notReserved(prefix: String) throws {
        #expect(try UpstreamRoute(prefix: prefix, upstream: "http://x").prefix == prefix)
    }
}

@Suite("Route matching")
struct RouteTableTests {
    @Test("keeps the path when the upstream has none", arguments: [
        ("/api", "/api"), ("/api/", "/api/"), ("/api/x", "/api/x"), ("/api/x/y%20z", "/api/x/y%20z"),
    ])
    func keepsPath(path: String, expected: String) throws {
        #expect(outcome(try table("/api=http://up:9000"), path) == expected)
    }

    @Test("replaces the prefix with the upstream path", arguments: [
        ("/api", "/v1"), ("/api/", "/v1/"), ("/api/x", "/v1/x"), ("/api/x/y", "/v1/x/y"),
    ])
    func replacesPrefix(path: String, expected: String) throws {
        #expect(outcome(try table("/api=http://up/v1"), path) == expected)
    }

    @Test("an upstream path of / strips the prefix", arguments: [("/api", "/"), ("/api/x", "/x"), ("/api/", "/")])
    func rootUpstream(path: String, expected: String) throws {
        #expect(outcome(try table("/api=http://up/"), path) == expected)
    }

    @Test("matches whole segments only", arguments: ["/apix", "/ap", "/", "/other/api", "/API/x", "/xapi"])
    func wholeSegments(path: String) throws {
        #expect(outcome(try table("/api=http://up"), path) == nil)
    }

    @Test("longest prefix wins, whatever the configured order")
    func longestPrefix() throws {
        let t = try table("/api=http://a/one,/api/v2=http://b/two")
        #expect(outcome(t, "/api/v2/x") == "/two/x")
        #expect(outcome(t, "/api/v2") == "/two")
        #expect(outcome(t, "/api/v20") == "/one/v20")
        #expect(outcome(t, "/api/x") == "/one/x")
        guard case .forward(let route, _)? = t.match(path: "/api/v2/x") else {
            Issue.record("no match")
            return
        }
        #expect(route.host == "b")
    }

    @Test("refuses paths that could escape the prefix", arguments: [
        "/api/..", "/api/../login", "/api/./x", "/api/.", "/api/%2e%2e/x", "/api/%2E%2E", "/api/.%2e/x", "/api/%2e./x",
        "/api/%2e", "/api/a%2fb", "/api/a%2F..", "/api/a%5cb", "/api/a%5C..", "/api/a\\b", "/api/..;/x", "/api/.;x/y",
        "/api/x/../../etc", "/api/a%00", "/api/\u{1}", "/api/..%3b/x", "/api/.%3Bx/y", "/api/%2e%2e%3bjsessionid=1",
    ])
    func refusesEscapes(path: String) throws {
        #expect(outcome(try table("/api=http://up/v1"), path) == "REFUSED")
    }

    @Test("dots inside names are ordinary", arguments: [
        ("/api/a.b", "/v1/a.b"), ("/api/...", "/v1/..."), ("/api/.well-known", "/v1/.well-known"), ("/api/x..", "/v1/x.."),
        ("/api/%252e%252e", "/v1/%252e%252e"),
    ])
    func ordinaryDots(path: String, expected: String) throws {
        #expect(outcome(try table("/api=http://up/v1"), path) == expected)
    }

    @Test("an empty table matches nothing")
    func empty() {
        #expect(RouteTable([]).match(path: "/api") == nil)
    }
}
