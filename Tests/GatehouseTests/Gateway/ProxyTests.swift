import Crypto
import Foundation
import Testing
import TestSupport

/// API routes (`GATEHOUSE_ROUTES=/api=…`): what reaches the upstream and what comes back.
@Suite("Gateway: API proxy")
struct ProxyTests {
    static func echoed(_ response: RawResponse) throws -> EchoedRequest {
        try JSONDecoder().decode(EchoedRequest.self, from: Data(response.body))
    }

    @Test("the session's access token is sent as Authorization: Bearer")
    func bearerAdded() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let response = try await browser.get("/api/echo", csrf: true)
            #expect(response.status == 200)
            let echo = try Self.echoed(response)
            // SPEC API routes: "Added: Authorization: Bearer <access token>".
            let accessToken = try #require(harness.tap.issuedTokens.first)
            #expect(echo.values("Authorization") == ["Bearer \(accessToken)"])
            #expect(echo.method == "GET")
            #expect(echo.path == "/api/echo")
        }
    }

    @Test("Cookie, the CSRF header, the browser's Authorization and hop-by-hop headers are not forwarded")
    func headersStripped() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let response = try await browser.get("/api/echo", csrf: true, headers: [
                ("Authorization", "Basic YWxpY2U6c2VjcmV0"), ("Connection", "keep-alive, X-Hop"), ("X-Hop", "1"),
                ("Keep-Alive", "timeout=5"), ("Proxy-Authorization", "Basic cHJveHk="), ("TE", "trailers"),
                ("X-Custom", "kept"),
            ])
            #expect(response.status == 200)
            let echo = try Self.echoed(response)
            // SPEC API routes: "Removed before forwarding: hop-by-hop headers, Cookie, the browser's own
            // Authorization, the CSRF header."
            for name in ["Cookie", "X-CSRF", "X-Hop", "Keep-Alive", "Proxy-Authorization", "TE"] {
                #expect(echo.values(name).isEmpty, "\(name) was forwarded")
            }
            #expect(!echo.values("Connection").contains { $0.contains("X-Hop") })
            #expect(echo.values("Authorization").count == 1)
            #expect(echo.values("Authorization").first?.hasPrefix("Bearer ") == true)
            #expect(echo.values("X-Custom") == ["kept"])
            let raw = String(decoding: response.body, as: UTF8.self)
            #expect(!raw.contains(try #require(browser.sessionCookie)))
        }
    }

    @Test("X-Forwarded-For is the peer (an untrusted incoming value is replaced), -Proto and -Host are set")
    func forwardedHeaders() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let response = try await browser.get("/api/echo", csrf: true, headers: [
                ("X-Forwarded-For", "203.0.113.9"), ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "evil.example"),
            ])
            let echo = try Self.echoed(response)
            // SPEC API routes: "X-Forwarded-For (the peer address; an incoming value is kept only from
            // GATEHOUSE_TRUSTED_PROXIES, otherwise replaced), X-Forwarded-Proto (the scheme of
            // GATEHOUSE_PUBLIC_URL), X-Forwarded-Host (the request's Host)".
            #expect(echo.values("X-Forwarded-For") == ["127.0.0.1"])
            #expect(echo.values("X-Forwarded-Proto") == ["http"])
            #expect(echo.values("X-Forwarded-Host") == ["127.0.0.1:\(harness.gatewayPort)"])
        }
    }

    @Test("calls on a pooled upstream connection (relayed from the loop, without a task) get the same policy as the first")
    func pooledCalls() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let accessToken = try #require(harness.tap.issuedTokens.first)
            var answers: [String] = []
            // The first round opens the upstream connection (`ApiProxy.forward`, in a task); the
            // gateway has one loop, so every later call finds it idle in the pool, which is what
            // `forwardOnLoop` takes (whole answers in the readiness callback, streamed ones in a
            // task). What this checks is the policy, the same on either path; that the callback
            // path answers is `UpstreamCallTests`' (`.inCallback`).
            for round in 0..<3 {
                let echo = try Self.echoed(try await browser.get("/api/echo?round=\(round)&x=%2F", csrf: true,
                                                                  headers: [("Authorization", "Basic YWxpY2U6c2VjcmV0"), ("X-Custom", "kept")]))
                #expect(echo.values("Authorization") == ["Bearer \(accessToken)"])
                #expect(echo.query == "round=\(round)&x=%2F")
                #expect(echo.values("Cookie").isEmpty && echo.values("X-CSRF").isEmpty)
                #expect(echo.values("X-Custom") == ["kept"])
                let cookie = try await browser.get("/api/set-cookie", csrf: true)
                #expect(cookie.status == 200)
                #expect(cookie.headers.values("Set-Cookie").isEmpty)
                #expect(cookie.headers["X-Upstream"] == "kept")
                #expect(cookie.text == "ok\n")
                answers.append(cookie.headers.map { $0.name.lowercased() }.sorted().joined(separator: ","))
                let events = try await browser.get("/api/sse", csrf: true)
                #expect(events.status == 200)
                #expect(events.text.contains("data: event 1") && events.text.contains("data: event 5"))
                let big = try await browser.get("/api/big?mib=1", csrf: true)
                #expect(big.status == 200 && big.body.count == 1 << 20)
                let refused = try await browser.get("/api/echo")
                #expect(refused.status == 401)
            }
            // The same fields every time, the security headers included.
            #expect(Set(answers).count == 1)
            #expect(answers.first?.contains("x-content-type-options") == true)
            #expect(harness.upstream.requests.count == 12)
        }
    }

    @Test("the query string reaches the upstream byte for byte")
    func queryByteExact() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let query = "b=%2F&a=1&a=2&empty=&x=%20+y&%E2%9C%93=%c3%a9&flag"
            let response = try await browser.get("/api/echo/caf%C3%A9;v=1?" + query, csrf: true)
            #expect(response.status == 200, "\(response.status) \(response.text)")
            let echo = try Self.echoed(response)
            // SPEC API routes: "Forwarded: method, path (as in GATEHOUSE_ROUTES), query, …".
            #expect(echo.query == query)
            #expect(echo.path == "/api/echo/caf%C3%A9;v=1")
        }
    }

    @Test("a POST body with Content-Length and a chunked one both reach the upstream intact")
    func postBodies() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let payload = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let digest = SHA256.hash(data: payload).map { String(format: "%02x", $0) }.joined()
            // SPEC API routes: "Forwarded: method, path, query, headers and body, streamed both ways".
            let sized = try await browser.send("POST", "/api/upload", csrf: true,
                                               headers: [("Content-Type", "application/octet-stream")],
                                               body: .bytes(payload))
            #expect(sized.status == 200)
            let sizedEcho = try Self.echoed(sized)
            #expect(sizedEcho.method == "POST")
            #expect(sizedEcho.bodyLength == payload.count)
            #expect(sizedEcho.bodySHA256 == digest)
            #expect(sizedEcho.values("Content-Type") == ["application/octet-stream"])

            let pieces = stride(from: 0, to: payload.count, by: 70_000).map { Array(payload[$0..<min($0 + 70_000, payload.count)]) }
            let chunked = try await browser.send("PUT", "/api/upload", csrf: true, body: .chunked(pieces))
            #expect(chunked.status == 200)
            let chunkedEcho = try Self.echoed(chunked)
            #expect(chunkedEcho.method == "PUT")
            #expect(chunkedEcho.bodyLength == payload.count)
            #expect(chunkedEcho.bodySHA256 == digest)
        }
    }

    @Test("a body over GATEHOUSE_MAX_BODY is refused with 413 and never reaches the upstream")
    func bodyTooLarge() async throws {
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_MAX_BODY": "64k"])) { harness in
            let browser = harness.browser()
            try await browser.login()
            // SPEC HTTP/1.1 server behaviour: "413 for bodies over the limit (… configurable by GATEHOUSE_MAX_BODY)".
            let sized = try await browser.send("POST", "/api/upload", csrf: true, body: .bytes([UInt8](repeating: 1, count: 100_000)))
            #expect(sized.status == 413)
            let chunked = try await browser.send("POST", "/api/upload", csrf: true,
                                                 body: .chunked([[UInt8]](repeating: [UInt8](repeating: 2, count: 20_000), count: 5)))
            #expect(chunked.status == 413)
            #expect(!harness.upstream.requests.contains { $0.bodyLength > 64 * 1024 })
            let fits = try await browser.send("POST", "/api/upload", csrf: true, body: .bytes([UInt8](repeating: 3, count: 60_000)))
            #expect(fits.status == 200)
        }
    }

    @Test("Set-Cookie from the upstream never reaches the browser; other headers do")
    func setCookieRemoved() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let response = try await browser.get("/api/set-cookie", csrf: true)
            // SPEC API routes: "Removed from the upstream's answer: hop-by-hop headers and Set-Cookie."
            #expect(response.status == 200)
            #expect(response.headers.values("Set-Cookie").isEmpty)
            #expect(response.headers["X-Upstream"] == "kept")
            #expect(response.text == "ok\n")
        }
    }

    @Test("API requests without a session or without the CSRF header get 401 JSON, never a redirect")
    func apiRefusals() async throws {
        try await GatewayHarness.with { harness in
            // SPEC API routes: "No valid session: 401 JSON, never a redirect. Missing X-CSRF: 1: 401 JSON
            // {"error":"csrf_header_missing"}."
            let anonymous = try await harness.send("GET", "/api/echo", headers: [("X-CSRF", "1")])
            #expect(anonymous.status == 401)
            #expect(anonymous.json?["error"] as? String == "unauthenticated")
            #expect(anonymous.location == nil)
            let browser = harness.browser()
            try await browser.login()
            let noCSRF = try await browser.get("/api/echo")
            #expect(noCSRF.status == 401)
            #expect(noCSRF.json?["error"] as? String == "csrf_header_missing")
            #expect(harness.upstream.requests.isEmpty)
        }
    }

    @Test("an upstream that refuses connections: 502 JSON")
    func upstreamDown() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            // SPEC API routes: "Upstream unreachable: 502 JSON".
            let response = try await browser.get("/down/anything", csrf: true)
            #expect(response.status == 502)
            #expect(response.headers["Content-Type"]?.hasPrefix("application/json") == true)
            #expect(response.json?["error"] is String)
        }
    }

    @Test("an upstream slower than GATEHOUSE_UPSTREAM_TIMEOUT: 504 JSON, in about that time")
    func upstreamTimeout() async throws {
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_UPSTREAM_TIMEOUT": "1s"])) { harness in
            let browser = harness.browser()
            try await browser.login()
            let clock = ContinuousClock()
            let started = clock.now
            // SPEC API routes: "no answer in time: 504 JSON"; GATEHOUSE_UPSTREAM_TIMEOUT is the "time limit
            // for an upstream's first response byte".
            let response = try await browser.get("/api/slow", csrf: true)
            let elapsed = clock.now - started
            #expect(response.status == 504)
            #expect(response.json?["error"] is String)
            #expect(elapsed >= .milliseconds(900) && elapsed < .milliseconds(2_900))
        }
    }

    @Test("/apix is not under the /api route: the SPA's 404, the upstream is not called")
    func prefixBoundary() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let response = try await browser.get("/apix", csrf: true, headers: [("Accept", "application/json")])
            // SPEC: "A request under PREFIX is forwarded" — /apix is not under /api.
            #expect(response.status == 404)
            #expect(harness.upstream.requests.isEmpty)
            let inside = try await browser.get("/api", csrf: true)
            #expect(inside.status == 200)
            #expect(harness.upstream.requests.count == 1)
        }
    }
}
