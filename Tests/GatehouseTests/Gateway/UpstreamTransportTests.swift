import Foundation
@testable import Gatehouse
import HTTPClient
import HTTP1
import Synchronization
import Testing

/// The proxy reaches upstreams only through the `UpstreamTransport` its context holds: a fake put in
/// place of the pooled client receives the exchange, and its answer (or failure) is relayed by the same code
/// as a real one's.
@Suite("UpstreamTransport")
struct UpstreamTransportTests {
    @Test("an injected transport carries the exchange; its whole answer is relayed with the proxy's policy")
    func injectedTransportIsUsed() async throws {
        let fake = FakeTransport(.answer(status: 201, headers: [("Content-Length", "5"), ("Set-Cookie", "a=1"),
                                                                ("Connection", "close"), ("X-Upstream", "yes")],
                                         body: Array("hello".utf8)))
        let context = try makeTLSTestContext(upstreamPort: 9, httpsUpstream: fake)
        let writer = RecordingTLSWriter()
        await UpstreamRelay.forward(UpstreamRequest(host: "api", port: 443, method: "GET", target: "/v1", headers: [:]),
                                    body: BufferedRequestBody([]), via: context.upstreams.tls, context: context,
                                    writer: writer)
        #expect(fake.requests == ["GET /v1"])
        let response = try #require(writer.snapshot.response)
        #expect(response.status == 201)
        #expect(response.body == Array("hello".utf8))
        #expect(response.headers["X-Upstream"] == "yes")
        #expect(!response.headers.contains("Set-Cookie"))
        #expect(!response.headers.contains("Connection"))
        #expect(response.headers["X-Content-Type-Options"] == "nosniff")
    }

    @Test("an answer that is not whole is streamed with the length the transport decided")
    func streamedAnswer() async throws {
        let fake = FakeTransport(.answer(status: 200, headers: [("Content-Length", "5")], body: Array("hello".utf8),
                                         whole: false))
        let context = try makeTLSTestContext(upstreamPort: 9, httpsUpstream: fake)
        let writer = RecordingTLSWriter(keepText: true)
        await UpstreamRelay.forward(UpstreamRequest(host: "api", port: 443, method: "GET", target: "/s", headers: [:]),
                                    body: BufferedRequestBody([]), via: context.upstreams.tls, context: context,
                                    writer: writer)
        let record = writer.snapshot
        #expect(record.response == nil)
        #expect(record.head?.status == 200)
        #expect(record.contentLength == 5)
        #expect(record.pieceTexts.joined() == "hello")
        #expect(record.finished)
    }

    @Test("a transport failure before the head becomes the JSON answer of its kind")
    func failureBeforeHead() async throws {
        let fake = FakeTransport(.failure(.firstByteTimeout))
        let context = try makeTLSTestContext(upstreamPort: 9, httpsUpstream: fake)
        let writer = RecordingTLSWriter()
        await UpstreamRelay.forward(UpstreamRequest(host: "api", port: 443, method: "GET", target: "/", headers: [:]),
                                    body: BufferedRequestBody([]), via: context.upstreams.tls, context: context,
                                    writer: writer)
        let response = try #require(writer.snapshot.response)
        #expect(response.status == 504)
        #expect(response.jsonErrorCode == "upstream_timeout")
        #expect(fake.requests.count == 1)
    }
}

/// A transport that answers every exchange the same way and records what it was asked.
private final class FakeTransport: UpstreamTransport {
    enum Outcome: Sendable {
        case answer(status: Int, headers: [(String, String)], body: [UInt8], whole: Bool = true)
        case failure(UpstreamError)
    }

    private let outcome: Outcome
    private let asked = Mutex<[String]>([])

    init(_ outcome: Outcome) { self.outcome = outcome }

    var requests: [String] { asked.withLock { $0 } }

    func exchange(_ request: UpstreamRequest, body: any HTTPRequestBody) async throws(UpstreamError) -> any UpstreamAnswer {
        asked.withLock { $0.append("\(request.method) \(request.target)") }
        switch outcome {
        case .failure(let error):
            throw error
        case .answer(let status, let fields, let body, let whole):
            let head = HTTPResponseHead(status: status, headers: HTTPHeaders(fields))
            let framing: UpstreamResponseFraming
            do { framing = try UpstreamResponseFraming(head, requestMethod: request.method, version: .http1_1) } catch {
                throw .invalidResponse("fake head: \(error)")
            }
            return FakeAnswer(head: head, framing: framing, body: body, whole: whole)
        }
    }
}

private final class FakeAnswer: UpstreamAnswer {
    let head: HTTPResponseHead
    let framing: UpstreamResponseFraming
    private let whole: Bool
    private let remaining: Mutex<[UInt8]?>

    init(head: HTTPResponseHead, framing: UpstreamResponseFraming, body: [UInt8], whole: Bool) {
        self.head = head
        self.framing = framing
        self.whole = whole
        remaining = Mutex(body)
    }

    func wholeBodyIfBuffered() -> [UInt8]? {
        guard whole else { return nil }
        return remaining.withLock { body in defer { body = nil }; return body }
    }

    func nextBodyPiece() async throws(UpstreamError) -> [UInt8]? {
        remaining.withLock { body in defer { body = nil }; return body }
    }

    func discard() { remaining.withLock { $0 = nil } }
}
