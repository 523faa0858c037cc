@testable import Gatehouse
import GatehouseOIDC
import GatehouseSessions
@testable import GatehouseTelemetry
import HTTP1
@testable import HTTPServer
import EventLoops
import Logging
import Synchronization
import Testing

@Suite("The gateway's spans: server, provider calls, store operations; no secret in any")
struct GatewaySpansTests {
    /// A tracer whose exports land here, decoded back to spans' attribute maps.
    final class Bodies: Sendable {
        let received = Mutex<[[UInt8]]>([])
    }

    struct Collected {
        let bodies = Bodies()
        let tracer: Tracer

        init() {
            let bodies = self.bodies
            tracer = Tracer(settings: TracerTests.settings(batch: 1, delay: 10), logger: Logger(label: "t")) { body in
                bodies.received.withLock { $0.append(body) }
                return .accepted
            }
        }

        /// Everything exported once the tracer has shut down, as spans.
        func exported() async throws -> [WireMessage] {
            await tracer.shutdown()
            return try bodies.received.withLock { $0 }.flatMap { try WireMessage($0).message(1).message(2).messages(2) }
        }
    }

    static func recordedTrace() -> TraceParent {
        var headers = HTTPHeaders()
        headers.add("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        return TraceParent.continuing(headers, sampling: TraceSampling(root: .alwaysOn, parentBased: true))
    }

    @Test("The server span: route, method, status, the path without its query; 5xx an error")
    func serverSpan() throws {
        var record = HTTPAccessRecord(method: "GET", path: "/api/items", status: 502, bytesSent: 10,
                                      durationNanoseconds: 2_000_000, requestID: RequestID(loop: 0, number: 1), peer: PeerAddress(ip: "192.0.2.1", port: 1))
        record.traceID = TraceID(high: 1, low: 2)
        (record.spanID, record.parentSpanID) = (7, 9)
        let span = try #require(GatewaySpans.server(record, route: "/api", now: 10_000_000))
        #expect(span.fullName == "GET /api" && span.kind == SpanRecord.Kind.server && span.failed)
        #expect(span.startUnixNanoseconds == 8_000_000 && span.endUnixNanoseconds == 10_000_000)
        #expect(span.spanID == 7 && span.parentSpanID == 9)
        #expect(span.attributes.contains(SpanAttribute("http.route", "/api")))
        #expect(span.attributes.contains(SpanAttribute("url.path", "/api/items")))
        #expect(span.attributes.contains(SpanAttribute("url.scheme", "http")))
        #expect(span.statusCode == 502)
        #expect(!span.attributes.contains { $0.key.description.contains("client") })
        let secure = try #require(GatewaySpans.server(record, route: "/api", scheme: "https", now: 10_000_000))
        #expect(secure.attributes.contains(SpanAttribute("url.scheme", "https")))
        record.spanID = 0
        #expect(GatewaySpans.server(record, route: "/api", now: 1) == nil)
    }

    @Test("An upstream call's attributes: url.full from the route's origin and the path, without the query")
    func upstreamCall() {
        let attributes = GatewaySpans.upstreamAttributes(method: "GET", origin: "https://api.internal:9443", host: "api.internal",
                                                         port: 9443, target: "/v1/items?token=secret#x", route: "/api")
        #expect(attributes.contains(SpanAttribute("url.full", "https://api.internal:9443/v1/items")))
        #expect(attributes.contains(SpanAttribute("server.port", 9443)) && attributes.contains(SpanAttribute("gatehouse.route", "/api")))
        #expect(!attributes.contains { $0.text.contains("secret") })
    }

    @Test("A call's attributes: host, port, the URL without query or fragment")
    func clientAttributes() {
        let attributes = GatewaySpans.clientAttributes(method: "GET", url: "https://idp.example:8443/token?code=secret#frag")
        #expect(attributes.contains(SpanAttribute("url.full", "https://idp.example:8443/token")))
        #expect(attributes.contains(SpanAttribute("server.address", "idp.example")))
        #expect(attributes.contains(SpanAttribute("server.port", 8443)))
        #expect(!attributes.contains { $0.text.contains("secret") })
        let v6 = GatewaySpans.clientAttributes(method: "GET", url: "http://[::1]:9000/x")
        #expect(v6.contains(SpanAttribute("server.address", "::1")) && v6.contains(SpanAttribute("server.port", 9000)))
    }

    @Test("A provider call made for a traced request is its child, named by provider and operation; others make none")
    func providerCall() async throws {
        let collected = Collected()
        let tracer = collected.tracer
        tracer.start()
        let http = FakeProviderHTTP()
        http.respond(to: "https://idp.example/token", json: #"{"access_token":"at-secret","token_type":"Bearer"}"#)
        let client = TracedProviderClient(base: http, provider: "google", tracer: tracer)
        let request = ProviderHTTPRequest(method: .post, url: "https://idp.example/token", body: Array("code=c0de".utf8),
                                          operation: .token)
        _ = try await client.send(request)  // no request's trace: no span
        let trace = Self.recordedTrace()
        _ = try await TraceContext.$current.withValue(trace) { try await client.send(request) }
        let spans = try await collected.exported()
        #expect(spans.count == 1)
        let span = try #require(spans.first)
        let attributes = try span.attributes(9)
        #expect(attributes["gatehouse.provider"] == "google" && attributes["gatehouse.operation"] == "token")
        #expect(attributes["http.response.status_code"] == "200" && attributes["server.address"] == "idp.example")
        #expect(span.all(4) == [WireMessage.Value.bytes(withUnsafeBytes(of: trace.span.bigEndian, Array.init))])
        #expect(span.all(6) == [WireMessage.Value.varint(3)])
        #expect(!attributes.values.contains { $0.contains("c0de") || $0.contains("at-secret") })
    }

    @Test("A store operation of a traced request: its method's name and the engine")
    func storeOperation() async throws {
        let collected = Collected()
        let tracer = collected.tracer
        tracer.start()
        let spans = StoreSpans(tracer: tracer)
        #expect(spans.starting() == nil)  // no request's trace
        TraceContext.$current.withValue(Self.recordedTrace()) {
            if let mark = spans.starting() {
                spans.finished("loadSession", engine: .postgres, mark: mark, failed: false)
            }
        }
        let exported = try await collected.exported()
        let attributes = try #require(try exported.first?.attributes(9))
        #expect(attributes == ["db.system.name": "postgresql", "db.operation.name": "loadSession"])
    }

    @Test("Token-endpoint requests say which operation they are")
    func operations() {
        #expect(ProviderOperation.ofGrant("authorization_code") == .token)
        #expect(ProviderOperation.ofGrant("refresh_token") == .refresh)
        #expect(ProviderOperation.ofGrant("urn:ietf:params:oauth:grant-type:token-exchange") == .tokenExchange)
        #expect(ProviderOperation.ofGrant("client_credentials") == .token)
        #expect(ProviderOperation.allCases.map(\.rawValue).sorted()
                == ["discovery", "jwks", "par", "refresh", "revocation", "token", "token_exchange", "userinfo"])
    }
}
