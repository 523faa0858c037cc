import Testing
import TestSupport
@testable import HTTP1

/// Each vector runs whole, byte by byte into a growing buffer, and split at every offset (picohttpparser
/// and NIO style); all must agree, and nothing may answer before the byte that decides the outcome.
@Suite("Request head parsing (RFC 9112 §2–§6)")
struct RequestHeadParserTests {
    @Test("accepted requests", arguments: acceptedRequests)
    func accepted(_ vector: RequestVector) throws {
        try check(vector)
    }

    @Test("refused requests", arguments: refusedRequests)
    func refused(_ vector: RequestVector) throws {
        try check(vector)
    }

    private func check(_ vector: RequestVector) throws {
        let problems = HeadFeeding.disagreements(vector.bytes, as: RequestHeadParser.self, limits: vector.limits)
        #expect(problems.isEmpty, "\(problems)")
        let outcome = HeadFeeding.whole(vector.bytes, as: RequestHeadParser.self, limits: vector.limits)
        switch (vector.expected, outcome) {
        case (.accepted(let head, let consumed, let framing), .complete(let parsed, let parsedConsumed)):
            #expect(parsed == head)
            #expect(parsedConsumed == consumed)
            #expect(throws: Never.self) { try BodyFramingRules.request(parsed) }
            #expect((try? BodyFramingRules.request(parsed)) == framing)
        case (.refused(let error), .failed(let parsedError)):
            #expect(parsedError == error)
        case (.refused(let error), .complete(let parsed, _)):
            // Parsed fine: the refusal must come from the framing rules.
            #expect(throws: error) { try BodyFramingRules.request(parsed) }
        default:
            Issue.record("expected \(vector.expected), got \(outcome)")
        }
    }

    @Test("the status of each refusal (RFC 9110 §15, RFC 6585 §5)")
    func statuses() {
        #expect(HTTPParseError.invalidMethod.status == 400)
        #expect(HTTPParseError.bareLF(offset: 0).status == 400)
        #expect(HTTPParseError.headTooLarge(limit: 1).status == 431)
        #expect(HTTPParseError.tooManyHeaders(limit: 1).status == 431)
        #expect(HTTPParseError.unsupportedVersion(major: 2, minor: 0).status == 505)
        #expect(HTTPParseError.unsupportedTransferEncoding(coding: "gzip").status == 501)
        #expect(HTTPParseError.contentLengthWithTransferEncoding.status == 400)
    }

    @Test("after a complete head the parser is ready for the next pipelined request")
    func pipelinedSequence() throws {
        var buffer = wire("GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: b\r\n\r\nGET /c HT")
        var parser = RequestHeadParser()
        var targets: [String] = []
        while true {
            guard case .complete(let head, let consumed) = parser.outcome(buffer[...]) else { break }
            targets.append(head.target)
            buffer.removeFirst(consumed)
        }
        #expect(targets == ["/a", "/b"])
        #expect(buffer == wire("GET /c HT"))
        buffer += wire("TP/1.1\r\nHost: c\r\n\r\n")
        let last = parser.outcome(buffer[...])
        #expect(last == .complete(HTTPRequestHead(method: "GET", target: "/c", headers: ["Host": "c"]),
                                  consumed: buffer.count))
    }

    @Test("reset forgets a partial head")
    func resetForgetsPartialHead() throws {
        var parser = RequestHeadParser()
        let partial = wire("GET /a HTTP/1.1\r\nHo")
        let first = parser.outcome(partial[...])
        #expect(first == .incomplete)
        parser.reset()
        let fresh = wire("GET /b HTTP/1.1\r\nHost: b\r\n\r\n")
        let second = parser.outcome(fresh[...])
        #expect(second == .complete(HTTPRequestHead(method: "GET", target: "/b", headers: ["Host": "b"]),
                                    consumed: fresh.count))
    }

    @Test("a buffer that shrank between calls is rescanned, not trusted")
    func shrunkBufferRescanned() throws {
        var parser = RequestHeadParser()
        let long = wire("GET /aaaaaaaaaaaaaaaa HTTP/1.1\r\nHost: a\r\nX")
        _ = parser.outcome(long[...])
        let short = wire("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        let result = parser.outcome(short[...])
        #expect(result == .complete(HTTPRequestHead(method: "GET", target: "/", headers: ["Host": "a"]),
                                    consumed: short.count))
    }

    @Test("keep-alive follows the version and Connection tokens (RFC 9112 §9.3)")
    func keepAliveFromParsedHead() throws {
        let close = wire("GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, close\r\n\r\n")
        guard case .complete(let head, _) = HeadFeeding.whole(close, as: RequestHeadParser.self) else {
            Issue.record("not parsed")
            return
        }
        #expect(!head.keepAlive)
    }
}
