import Foundation
@testable import Gatehouse
import GatehouseCore
@testable import HTTPClient
import HTTP1
import Synchronization
import Testing

/// Security review, issue 10: how the upstream clients read answers, when they retry, and what the
/// relay lets through to the browser.
@Suite("Upstream hardening: framing, retries, relay bounds")
struct UpstreamHardeningTests {
    // MARK: Framing (items 2 and 4; RFC 9112 §6.3)

    private static func decide(_ status: Int, _ headers: [(String, String)], method: String = "GET",
                               version: HTTPVersion = .http1_1) throws(UpstreamError) -> UpstreamResponseFraming {
        try UpstreamResponseFraming(HTTPResponseHead(status: status, headers: HTTPHeaders(headers)), requestMethod: method,
                                    version: version)
    }

    @Test("ambiguous or malformed lengths are refused, whatever the status or method", .bug(id: 10, "security review, item 4"),
          arguments: [
            [("Content-Length", "5"), ("Content-Length", "12")],
            [("Content-Length", "5, 12")],
            [("Content-Length", "+5")],
            [("Content-Length", "-1")],
            [("Content-Length", "5x")],
            [("Content-Length", "0x10")],
            [("Content-Length", "5 5")],
            [("Content-Length", "")],
            [("Content-Length", ",")],
            [("Content-Length", "99999999999999999999")],
            [("Content-Length", "5"), ("Transfer-Encoding", "chunked")],
            [("Transfer-Encoding", "chunked"), ("content-length", "0")],
          ])
    func refusedLengths(headers: [(String, String)]) {
        for (status, method) in [(200, "GET"), (200, "HEAD"), (204, "GET"), (304, "GET"), (404, "POST")] {
            #expect(throws: UpstreamError.self, "\(status) to \(method) with \(headers)") {
                try Self.decide(status, headers, method: method)
            }
        }
    }

    @Test("a transfer coding other than chunked, or Transfer-Encoding in HTTP/1.0, is refused")
    func refusedCodings() {
        #expect(throws: UpstreamError.self) { try Self.decide(200, [("Transfer-Encoding", "gzip")]) }
        #expect(throws: UpstreamError.self) { try Self.decide(200, [("Transfer-Encoding", "chunked, chunked")]) }
        #expect(throws: UpstreamError.self) {
            try Self.decide(200, [("Transfer-Encoding", "chunked")], version: .http1_0)
        }
    }

    @Test("101 Switching Protocols is refused: no switch is ever asked for", .bug(id: 10, "security review, item 2"))
    func switchingProtocols() {
        #expect(throws: UpstreamError.self) { try Self.decide(101, [("Upgrade", "websocket"), ("Connection", "Upgrade")]) }
        #expect(throws: UpstreamError.self) { try Self.decide(101, [], method: "CONNECT") }
    }

    @Test("agreeing lengths are one length; the announced length follows the body")
    func acceptedLengths() throws {
        let repeated = try Self.decide(200, [("Content-Length", "12"), ("content-length", " 12 ")])
        #expect(repeated.framing == .contentLength(12))
        #expect(repeated.announcedLength == 12)
        #expect(repeated.bodyLimit == 12)
        #expect(repeated.leavesConnectionReusable)
        #expect(try Self.decide(200, [("Content-Length", "7, 7")]).framing == .contentLength(7))
        let chunked = try Self.decide(200, [("Transfer-Encoding", "Chunked")])
        #expect(chunked.framing == .chunked && chunked.announcedLength == nil && chunked.bodyLimit == nil)
    }

    @Test("HEAD announces what GET would send, but nothing may follow the head")
    func head() throws {
        let head = try Self.decide(200, [("Content-Length", "42")], method: "HEAD")
        #expect(head.framing == .none)
        #expect(head.announcedLength == 42)
        #expect(head.bodyLimit == 0)
        #expect(head.leavesConnectionReusable)
    }

    @Test("204 and 304 end with their head and announce no length", arguments: [204, 304])
    func noContent(status: Int) throws {
        let decided = try Self.decide(status, [("Content-Length", "10")])
        #expect(decided.framing == .none && decided.announcedLength == nil && decided.bodyLimit == 0)
    }

    @Test("a connection is never reused after a close-delimited body or an answer to CONNECT", .bug(id: 10, "security review, item 2"))
    func reuse() throws {
        let untilClose = try Self.decide(200, [("Content-Type", "text/plain")])
        #expect(untilClose.framing == .untilClose)
        #expect(!untilClose.leavesConnectionReusable)
        let tunnel = try Self.decide(200, [], method: "CONNECT")
        #expect(tunnel.framing == .none)
        #expect(!tunnel.leavesConnectionReusable)
        #expect(!(try Self.decide(407, [("Content-Length", "0")], method: "CONNECT")).leavesConnectionReusable)
    }

    // MARK: Retries (item 3; RFC 9110 §9.2.2)

    @Test("only a bodiless GET, HEAD or OPTIONS is repeated after the upstream read it", .bug(id: 10, "security review, item 3"),
          arguments: [("GET", true), ("HEAD", true), ("OPTIONS", true), ("POST", false), ("PUT", false),
                      ("PATCH", false), ("DELETE", false), ("PROPFIND", false)])
    func retryAfterWrite(method: String, retried: Bool) {
        #expect(UpstreamClient.mayRetry(method: method, hasBody: false, reusedConnection: true, attempt: 1,
                                        error: .connectionClosed, wroteRequestBytes: true) == retried)
    }

    @Test("a request of which not one byte was written may be sent again, whatever its method")
    func retryBeforeWrite() {
        for method in ["POST", "PATCH", "GET"] {
            #expect(UpstreamClient.mayRetry(method: method, hasBody: true, reusedConnection: true, attempt: 1,
                                            error: .connectionClosed, wroteRequestBytes: false))
        }
    }

    @Test("never twice, never on a fresh connection, never after another failure")
    func noRetry() {
        #expect(!UpstreamClient.mayRetry(method: "GET", hasBody: false, reusedConnection: true, attempt: 2,
                                         error: .connectionClosed, wroteRequestBytes: false))
        #expect(!UpstreamClient.mayRetry(method: "GET", hasBody: false, reusedConnection: false, attempt: 1,
                                         error: .connectionClosed, wroteRequestBytes: true))
        #expect(!UpstreamClient.mayRetry(method: "GET", hasBody: true, reusedConnection: true, attempt: 1,
                                         error: .connectionClosed, wroteRequestBytes: true))
        for error: UpstreamError in [.firstByteTimeout, .invalidResponse("x"), .bodyTimeout] {
            #expect(!UpstreamClient.mayRetry(method: "GET", hasBody: false, reusedConnection: true, attempt: 1,
                                             error: error, wroteRequestBytes: true))
        }
    }

    // MARK: Relay bounds (item 4)

    /// An upstream body handing out fixed pieces.
    final class ScriptedBody: UpstreamBody, Sendable {
        private let pieces: Mutex<[[UInt8]]>
        private let discarded = Atomic<Bool>(false)
        init(_ pieces: [[UInt8]]) { self.pieces = Mutex(pieces) }
        var wasDiscarded: Bool { discarded.load(ordering: .relaxed) }
        func nextBodyPiece() async throws(UpstreamError) -> [UInt8]? {
            pieces.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        }
        func discard() { discarded.store(true, ordering: .relaxed) }
    }

    private static func relay(_ pieces: [[UInt8]], framing: UpstreamResponseFraming) async throws
        -> (RecordingTLSWriter.Record, ScriptedBody) {
        let context = try makeTLSTestContext(upstreamPort: 9)
        let writer = RecordingTLSWriter(keepText: true)
        let body = ScriptedBody(pieces)
        await UpstreamRelay.stream(body, head: HTTPResponseHead(status: 200, headers: [:]), framing: framing,
                                   context: context, writer: writer)
        return (writer.snapshot, body)
    }

    @Test("a body longer than its announced length cuts the browser's connection; the excess is never written",
          .bug(id: 10, "security review, item 4"))
    func longerThanAnnounced() async throws {
        let framing = try Self.decide(200, [("Content-Length", "5")])
        let (record, body) = try await Self.relay([Array("hel".utf8), Array("lo".utf8), Array("HTTP/1.1 200 OK".utf8)],
                                                  framing: framing)
        #expect(record.contentLength == 5)
        #expect(record.pieceTexts.joined() == "hello")
        #expect(record.aborted)
        #expect(!record.finished)
        #expect(body.wasDiscarded)
    }

    @Test("one piece straddling the announced end is not written at all")
    func straddling() async throws {
        let (record, _) = try await Self.relay([Array("hello, smuggled".utf8)], framing: try Self.decide(200, [("Content-Length", "5")]))
        #expect(record.bodyLength == 0)
        #expect(record.aborted)
    }

    @Test("a bodiless answer (HEAD, 204) lets no byte through")
    func bodiless() async throws {
        let (head, _) = try await Self.relay([Array("x".utf8)], framing: try Self.decide(200, [("Content-Length", "1")], method: "HEAD"))
        #expect(head.contentLength == 1)
        #expect(head.bodyLength == 0 && head.aborted)
        let (empty, _) = try await Self.relay([Array("x".utf8)], framing: try Self.decide(204, []))
        #expect(empty.bodyLength == 0 && empty.aborted)
    }

    @Test("bodies within their framing are relayed whole and finished")
    func withinBounds() async throws {
        let (exact, _) = try await Self.relay([Array("hel".utf8), Array("lo".utf8)], framing: try Self.decide(200, [("Content-Length", "5")]))
        #expect(exact.pieceTexts.joined() == "hello" && exact.finished && !exact.aborted)
        let (chunked, _) = try await Self.relay([[UInt8](repeating: 1, count: 70_000), [2]],
                                                framing: try Self.decide(200, [("Transfer-Encoding", "chunked")]))
        #expect(chunked.bodyLength == 70_001 && chunked.finished && chunked.contentLength == nil)
    }
}

/// The same rules through the gateway, against its test upstream.
@Suite("Gateway: proxy hardening")
struct ProxyHardeningGatewayTests {
    @Test("CONNECT, TRACE and TRACK on an API route: 405 JSON with Allow, and the upstream never hears of them",
          .bug(id: 10, "security review, item 2"), arguments: ["CONNECT", "TRACE", "TRACK"])
    func refusedMethods(method: String) async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let response = try await browser.send(method, "/api/echo", csrf: true)
            #expect(response.status == 405)
            #expect(response.json?["error"] as? String == "method_not_allowed")
            #expect((response.json?["error_description"] as? String)?.isEmpty == false)
            let allow = try #require(response.headers["Allow"])
            #expect(allow.contains("GET") && !allow.contains(method))
            // Without a session either: nothing is looked up, nothing forwarded.
            let anonymous = try await harness.send(method, "/api/echo")
            #expect(anonymous.status == 405)
            #expect(harness.upstream.requests.isEmpty)
        }
    }
}
