import Testing
import TestSupport
@testable import HTTP1

/// One upstream response and what the parser plus `BodyFramingRules.response` must make of it.
struct ResponseVector: Sendable, CustomTestStringConvertible {
    enum Expected: Sendable {
        case accepted(HTTPResponseHead, version: HTTPVersion, consumed: Int, framing: BodyFraming)
        case refused(HTTPParseError)
    }

    var name: String
    var bytes: [UInt8]
    var requestMethod = "GET"
    var expected: Expected
    var testDescription: String { name }

    static func accept(_ name: String, _ text: String, requestMethod: String = "GET", status: Int,
                       headers: [(String, String)] = [], version: HTTPVersion = .http1_1,
                       consumed: Int? = nil, framing: BodyFraming) -> ResponseVector {
        let bytes = wire(text)
        let head = HTTPResponseHead(status: status, headers: HTTPHeaders(headers))
        return ResponseVector(name: name, bytes: bytes, requestMethod: requestMethod,
                              expected: .accepted(head, version: version, consumed: consumed ?? bytes.count,
                                                  framing: framing))
    }

    static func refuse(_ name: String, _ bytes: [UInt8], requestMethod: String = "GET",
                       _ error: HTTPParseError) -> ResponseVector {
        ResponseVector(name: name, bytes: bytes, requestMethod: requestMethod, expected: .refused(error))
    }

    static func refuse(_ name: String, _ text: String, requestMethod: String = "GET",
                       _ error: HTTPParseError) -> ResponseVector {
        refuse(name, wire(text), requestMethod: requestMethod, error)
    }
}

let responseVectors: [ResponseVector] = [
    .accept("200 with Content-Length (RFC 9112 §6.3 item 6)", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
            status: 200, headers: [("Content-Length", "2")],
            consumed: wire("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n").count, framing: .contentLength(2)),
    .accept("status line without reason (RFC 9112 §4)", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
            status: 200, headers: [("Content-Length", "0")], framing: .contentLength(0)),
    .accept("empty reason after SP (RFC 9112 §4)", "HTTP/1.1 204 \r\n\r\n", status: 204, framing: .none),
    .accept("reason with obs-text and HTAB (RFC 9112 §4)", "HTTP/1.1 404 Not\tFound \u{E9}\r\n\r\n",
            status: 404, framing: .untilClose),
    .accept("HTTP/1.0 without length reads until close (RFC 9112 §6.3 item 8)", "HTTP/1.0 200 OK\r\nServer: x\r\n\r\n",
            status: 200, headers: [("Server", "x")], version: .http1_0, framing: .untilClose),
    .accept("100 Continue is returned, the caller skips it (RFC 9110 §15.2)",
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
            status: 100, consumed: wire("HTTP/1.1 100 Continue\r\n\r\n").count, framing: .none),
    .accept("chunked response (RFC 9112 §6.3 item 4)", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            status: 200, headers: [("Transfer-Encoding", "chunked")], framing: .chunked),
    .accept("HEAD response has no body whatever it declares (RFC 9112 §6.3 item 1)",
            "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", requestMethod: "HEAD",
            status: 200, headers: [("Content-Length", "10")], framing: .none),
    .accept("304 has no body (RFC 9112 §6.3 item 1)", "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
            status: 304, headers: [("Content-Length", "10")], framing: .none),
    .accept("204 has no body (RFC 9112 §6.3 item 1)", "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n",
            status: 204, headers: [("Transfer-Encoding", "chunked")], framing: .none),
    .accept("duplicate Set-Cookie fields kept in order (RFC 9110 §5.3)",
            "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 0\r\n\r\n",
            status: 200, headers: [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("Content-Length", "0")],
            framing: .contentLength(0)),

    .refuse("two-digit status (RFC 9112 §4)", "HTTP/1.1 20 OK\r\n\r\n", .invalidStatusLine),
    .refuse("four-digit status (RFC 9112 §4)", "HTTP/1.1 2000 OK\r\n\r\n", .invalidStatusLine),
    .refuse("status below 100 (RFC 9110 §15)", "HTTP/1.1 099 Odd\r\n\r\n", .invalidStatusLine),
    .refuse("status above 599 (RFC 9110 §15)", "HTTP/1.1 600 Odd\r\n\r\n", .invalidStatusLine),
    .refuse("double SP before status (RFC 9112 §4)", "HTTP/1.1  200 OK\r\n\r\n", .invalidStatusLine),
    .refuse("lowercase HTTP-name (RFC 9112 §2.3)", "http/1.1 200 OK\r\n\r\n", .invalidStatusLine),
    .refuse("control byte in reason (RFC 9112 §4)", wire("HTTP/1.1 200 O") + [0x01] + wire("K\r\n\r\n"),
            .invalidStatusLine),
    .refuse("empty line before the status line (RFC 9112 §2.2 applies to requests only)",
            "\r\nHTTP/1.1 200 OK\r\n\r\n", .invalidStatusLine),
    .refuse("HTTP/2.0 status line (RFC 9112 §2.3)", "HTTP/2.0 200 OK\r\n\r\n", .unsupportedVersion(major: 2, minor: 0)),
    .refuse("bare LF after status line (RFC 9112 §2.2)", "HTTP/1.1 200 OK\nX: y\r\n\r\n", .bareLF(offset: 15)),
    .refuse("obs-fold in a response (RFC 9112 §5.2)", "HTTP/1.1 200 OK\r\nX: y\r\n z\r\n\r\n",
            .obsoleteLineFolding(line: 3)),
    .refuse("SP before colon in a response (RFC 9112 §5.1)", "HTTP/1.1 200 OK\r\nX : y\r\n\r\n",
            .whitespaceBeforeColon(line: 2)),
    .refuse("CR in a response field value (response splitting, RFC 9112 §2.2)", "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
            .bareCR(offset: 21)),
    .refuse("Content-Length with Transfer-Encoding in a response (RFC 9112 §6.3 item 3)",
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            .contentLengthWithTransferEncoding),
    .refuse("differing Content-Length in a response (RFC 9112 §6.3 item 5)",
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", .conflictingContentLength),
    .refuse("gzip transfer coding cannot be relayed (RFC 9112 §6.1)",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", .unsupportedTransferEncoding(coding: "gzip")),
    .refuse("final coding other than chunked in a response (RFC 9112 §6.3 item 4)",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", .unsupportedTransferEncoding(coding: "gzip")),
    .refuse("Transfer-Encoding in an HTTP/1.0 response (RFC 9112 §6.1)",
            "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", .transferEncodingInHTTP10),
]

@Suite("Response head parsing (RFC 9112 §4, §6.3)")
struct ResponseHeadParserTests {
    @Test("response vectors", arguments: responseVectors)
    func vector(_ vector: ResponseVector) {
        let problems = HeadFeeding.disagreements(vector.bytes, as: ResponseHeadParser.self)
        #expect(problems.isEmpty, "\(problems)")
        var parser = ResponseHeadParser()
        let outcome = parser.outcome(vector.bytes[...])
        switch (vector.expected, outcome) {
        case (.accepted(let head, let version, let consumed, let framing), .complete(let parsed, let parsedConsumed)):
            #expect(parsed == head)
            #expect(parsedConsumed == consumed)
            #expect(parser.lastVersion == version)
            let decided = try? BodyFramingRules.response(parsed, requestMethod: vector.requestMethod,
                                                         version: parser.lastVersion)
            #expect(decided == framing)
        case (.refused(let error), .failed(let parsedError)):
            #expect(parsedError == error)
        case (.refused(let error), .complete(let parsed, _)):
            #expect(throws: error) {
                try BodyFramingRules.response(parsed, requestMethod: vector.requestMethod, version: parser.lastVersion)
            }
        default:
            Issue.record("expected \(vector.expected), got \(outcome)")
        }
    }

    @Test("1xx heads are skipped by parsing again after consumed (RFC 9110 §15.2)")
    func interimThenFinal() throws {
        var buffer = wire("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.0 200 OK\r\n\r\nbody")
        var parser = ResponseHeadParser()
        var statuses: [Int] = []
        while case .complete(let head, let consumed) = parser.outcome(buffer[...]) {
            statuses.append(head.status)
            buffer.removeFirst(consumed)
            if head.status >= 200 { break }
        }
        #expect(statuses == [103, 200])
        #expect(parser.lastVersion == .http1_0)
        #expect(buffer == wire("body"))
    }

    @Test("2xx to CONNECT has no body (RFC 9112 §6.3 item 2)")
    func connectTunnel() throws {
        let head = HTTPResponseHead(status: 200, headers: ["Content-Length": "5"])
        #expect(try BodyFramingRules.response(head, requestMethod: "CONNECT") == BodyFraming.none)
    }
}
