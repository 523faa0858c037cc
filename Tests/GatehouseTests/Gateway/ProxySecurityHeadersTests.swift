@testable import Gatehouse
import GatehouseCore
import HTTPClient
import HTTP1
import HTTPServer
import Testing

/// The router hands the API proxy the connection's writer without the securing wrapper (one
/// allocation less per proxied request): every answer the proxy writes must still carry the
/// security headers, its own refusals and the relay's failures included.
@Suite("API proxy answers carry the security headers without the router's wrapper")
struct ProxySecurityHeadersTests {
    private func expectSecured(_ response: HTTPResponse?, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response?.headers["X-Content-Type-Options"] == "nosniff", sourceLocation: sourceLocation)
        #expect(response?.headers["Referrer-Policy"] == "no-referrer", sourceLocation: sourceLocation)
        #expect(response?.headers["X-Frame-Options"] == "DENY", sourceLocation: sourceLocation)
        #expect(response?.headers.values("X-Content-Type-Options").count == 1, sourceLocation: sourceLocation)
    }

    /// What the proxy writes, unwrapped, for a signed-out GET of `target` under the `/api` route.
    private func proxyAnswer(_ target: String) async throws -> HTTPResponse {
        let context = try makeTLSTestContext(upstreamPort: 9)
        let head = HTTPRequestHead(method: "GET", target: target, headers: ["Host": "a", "X-CSRF": "1"])
        let writer = RecordingTLSWriter()
        await Gateway(context: context).respond(to: HTTPRequest(head: head), writer: writer)
        return try #require(writer.snapshot.response)
    }

    @Test("a refusal of the proxy itself (no session: 401) written to an unwrapped writer")
    func refusalSecured() async throws {
        let response = try await proxyAnswer("/api/items")
        #expect(response.status == 401)
        expectSecured(response)
    }

    @Test("an unroutable target written to an unwrapped writer")
    func unroutableSecured() async throws {
        let response = try await proxyAnswer("/api/a/%2e%2e/b")
        #expect(response.status == 400)
        expectSecured(response)
    }

    @Test("an upstream failure before its head (502) written to an unwrapped writer")
    func relayFailureSecured() async throws {
        let context = try makeTLSTestContext(upstreamPort: 9)
        let writer = RecordingTLSWriter()
        await UpstreamRelay.forward(UpstreamRequest(host: "127.0.0.1", port: 9, method: "GET", target: "/", headers: [:]),
                                    body: BufferedRequestBody([]), via: FailingTransport(), context: context,
                                    writer: writer)
        let response = try #require(writer.snapshot.response)
        #expect(response.status == 502)
        expectSecured(response)
    }

    @Test("through the server: the 401 of a signed-out API call and the 502 of a down upstream")
    func throughTheServer() async throws {
        try await GatewayHarness.with { harness in
            let anonymous = try await harness.send("GET", "/api/echo", headers: [("X-CSRF", "1")])
            #expect(anonymous.status == 401)
            #expect(anonymous.headers["X-Content-Type-Options"] == "nosniff")
            #expect(anonymous.headers["X-Frame-Options"] == "DENY")
            let browser = harness.browser()
            try await browser.login()
            let down = try await browser.get("/down/anything", csrf: true)
            #expect(down.status == 502)
            #expect(down.headers["X-Content-Type-Options"] == "nosniff")
            #expect(down.headers["Referrer-Policy"] == "no-referrer")
            let relayed = try await browser.get("/api/echo", csrf: true)
            #expect(relayed.status == 200)
            #expect(relayed.headers["X-Content-Type-Options"] == "nosniff")
        }
    }
}

/// A transport whose upstream never answers (the connection is refused).
private struct FailingTransport: UpstreamTransport {
    func exchange(_ request: UpstreamRequest, body: any HTTPRequestBody) async throws(UpstreamError) -> any UpstreamAnswer {
        throw .connectFailed("connection refused")
    }
}
