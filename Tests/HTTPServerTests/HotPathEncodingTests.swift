import Testing
import TestSupport
@testable import HTTP1
@testable import HTTPServer

/// The allocation-free helpers of the proxy path behave exactly like the plain definitions they replace.
@Suite("Hot-path header helpers")
struct HotPathEncodingTests {
    @Test("path and query split at the first ?, as the plain UTF8View search does", arguments: [
        ("/api/hello", "/api/hello", nil), ("/a?b=1", "/a", "b=1"), ("/?", "/", ""), ("?x", "", "x"),
        ("/a?b?c", "/a", "b?c"), ("/caf%C3%A9;v=1?q=%3F", "/caf%C3%A9;v=1", "q=%3F"), ("/é/ü?ä=ö", "/é/ü", "ä=ö"),
        ("", "", nil), ("*", "*", nil),
    ] as [(String, String, String?)])
    func pathAndQuery(target: String, path: String, query: String?) {
        let head = HTTPRequestHead(method: "GET", target: target)
        #expect(head.path == path[...])
        #expect(head.query.map(String.init) == query)
        // The reference: the generic search over the view.
        let q = target.utf8.firstIndex(of: UInt8(ascii: "?"))
        #expect(head.path == (q.map { target[..<$0] } ?? target[...]))
        // The `?` is found once, at init and when the target changes.
        var changed = HTTPRequestHead(method: "GET", target: "/other?z")
        changed.target = target
        #expect(changed.path == path[...] && changed.query.map(String.init) == query && changed == head)
    }

    @Test("list elements: split at commas, trimmed, empty ones skipped, as the plain Substring split does",
          arguments: ["keep-alive", "close", " Upgrade ,\tkeep-alive ", ",,a,, b ,", "", " ", "caf\u{e9}, \u{fc}ber ,x",
                      "TE, Trailers,X-Custom", "a\t,\t\tb"])
    func listElements(value: String) {
        let headers = HTTPHeaders([("Connection", value), ("Other", "z"), ("connection", "last")])
        var seen: [String] = []
        headers.forEachToken("Connection") { seen.append(String($0)); return true }
        // The reference: split every value at "," and trim spaces and tabs.
        let expected = [value, "last"].flatMap { text in
            text.split(separator: ",", omittingEmptySubsequences: false)
                .map { String($0.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed()) }
                .filter { !$0.isEmpty }
        }
        #expect(seen == expected)
        for token in expected + ["KEEP-ALIVE", "missing", "last"] {
            #expect(headers.hasToken("Connection", token) == expected.contains { $0.lowercased() == token.lowercased() }, "\(token)")
        }
        var first: String?
        headers.forEachToken("Connection") { first = String($0); return false }
        #expect(first == expected.first)
    }

    @Test("server head: handler fields in order, connection fields replaced, length from the body")
    func serverHead() {
        let headers: HTTPHeaders = HTTPHeaders([("Content-Type", "text/plain"), ("connection", "keep-alive"),
                                                ("Keep-Alive", "timeout=5"), ("Content-Length", "999"),
                                                ("transfer-encoding", "chunked"), ("X-A", "1")])
        var bytes: [UInt8] = []
        ResponseHeadEncoder.encodeServerHead(status: 200, headers: headers, keepContentLength: false, contentLength: 12,
                                             chunked: false, connection: "close", into: &bytes)
        #expect(bytes == wire("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-A: 1\r\nContent-Length: 12\r\nConnection: close\r\n\r\n"))
    }

    @Test("server head: a declared length kept for HEAD, chunked framing, unsafe fields dropped")
    func serverHeadVariants() {
        var kept: [UInt8] = []
        ResponseHeadEncoder.encodeServerHead(status: 200, headers: ["Content-Length": "42"], keepContentLength: true,
                                             contentLength: nil, chunked: false, connection: nil, into: &kept)
        #expect(kept == wire("HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n"))
        var chunked: [UInt8] = []
        ResponseHeadEncoder.encodeServerHead(status: 204, headers: HTTPHeaders([("X-Evil", "a\r\nSet-Cookie: x=1"), ("Bad Name", "v")]),
                                             keepContentLength: false, contentLength: nil, chunked: true,
                                             connection: "keep-alive", into: &chunked)
        #expect(chunked == wire("HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"))
        var large: [UInt8] = []
        ResponseHeadEncoder.encodeServerHead(status: 700, headers: HTTPHeaders(), keepContentLength: false,
                                             contentLength: 1_234_567_890_123, chunked: false, connection: nil, into: &large)
        #expect(large == wire("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 1234567890123\r\n\r\n"))
    }

    @Test("upstream request head: Host first, policy fields, framing; the client's Host and framing never pass")
    func upstreamRequest() {
        let fields = HTTPHeaders([("host", "evil.example"), ("Accept", "*/*"), ("content-length", "5"),
                                  ("Transfer-Encoding", "gzip"), ("X-Evil", "a\nb"), ("Authorization", "Bearer t")])
        let fixed = RequestHeadEncoder.encodeUpstreamRequest(method: "POST", target: "/v1/x?q=1 2", hostName: "api", port: 8080,
                                                             headers: fields, contentLength: 5, chunked: false)
        #expect(fixed == wire("POST /v1/x?q=1%202 HTTP/1.1\r\nHost: api:8080\r\nAccept: */*\r\nAuthorization: Bearer t\r\nContent-Length: 5\r\n\r\n"))
        let streamed = RequestHeadEncoder.encodeUpstreamRequest(method: "PUT", target: "/", hostName: "::1", port: 9,
                                                                headers: HTTPHeaders(), contentLength: nil, chunked: true)
        #expect(streamed == wire("PUT / HTTP/1.1\r\nHost: [::1]:9\r\nTransfer-Encoding: chunked\r\n\r\n"))
    }

    @Test("list tokens: trimmed, empty elements skipped, case kept, early stop")
    func tokens() {
        let headers = HTTPHeaders([("Connection", " keep-alive ,, X-Drop"), ("connection", "Close"), ("Other", "close")])
        var seen: [String] = []
        headers.forEachToken("Connection") { seen.append(String($0)); return true }
        #expect(seen == ["keep-alive", "X-Drop", "Close"])
        var first: [String] = []
        headers.forEachToken("CONNECTION") { first.append(String($0)); return false }
        #expect(first == ["keep-alive"])
        var bytes: [String] = []
        headers.forEachTokenBytes("Connection") { bytes.append(String(decoding: $0, as: UTF8.self)); return true }
        #expect(bytes == seen)
        var firstBytes: [String] = []
        headers.forEachTokenBytes("connection") { firstBytes.append(String(decoding: $0, as: UTF8.self)); return false }
        #expect(firstBytes == first)
        #expect(headers.hasToken("Connection", "close"))
        #expect(headers.hasToken("connection", "x-drop"))
        #expect(!headers.hasToken("Connection", "upgrade"))
        #expect(!HTTPHeaders([("Connection", "closed")]).hasToken("Connection", "close"))
        #expect(headers.tokens("Connection") == ["keep-alive", "x-drop", "close"])
    }

    @Test("keep-alive from Connection tokens (RFC 9112 §9.3)")
    func keepAlive() {
        #expect(HTTPRequestHead(method: "GET", target: "/", headers: ["Connection": "Keep-Alive, close"]).keepAlive == false)
        #expect(HTTPRequestHead(method: "GET", target: "/", version: .http1_0, headers: ["Connection": "x, KEEP-ALIVE"]).keepAlive)
        #expect(HTTPRequestHead(method: "GET", target: "/", version: .http1_0).keepAlive == false)
        #expect(HTTPRequestHead(method: "GET", target: "/").keepAlive)
    }

    @Test("one Content-Length field: lists of the same length agree, anything else is refused")
    func contentLengthField() throws {
        #expect(try ContentLength.parse("42") == 42)
        #expect(try ContentLength.parse("42, 42,42") == 42)
        #expect(throws: HTTPParseError.conflictingContentLength) { try ContentLength.parse("42, 43") }
        for bad in ["", "4 2", "-1", "42,", ",42", "0x10", "99999999999999999999"] {
            #expect(throws: HTTPParseError.invalidContentLength) { try ContentLength.parse(bad) }
        }
    }

    @Test("trimming spaces and tabs only, on any string")
    func trimming() {
        #expect("\t a b \t".trimmingASCIIWhitespace() == "a b")
        #expect("   ".trimmingASCIIWhitespace() == "")
        #expect("\u{00A0}x\u{00A0}".trimmingASCIIWhitespace() == "\u{00A0}x\u{00A0}")
        #expect(" é ".trimmingASCIIWhitespace() == "é")
    }

    @Test("request ids print as loop-hexnumber")
    func requestID() {
        #expect(RequestID(loop: 1, number: 47).description == "1-2f")
    }

    @Test("request methods: the usual ones as literals, any other token as it is spelled", arguments: [
        "GET", "PUT", "POST", "HEAD", "PATCH", "DELETE", "OPTIONS", "get", "GETX", "PROPFIND", "M", "PUX", "DELETe",
    ])
    func methods(method: String) {
        let bytes = Array(method.utf8)
        let parsed = bytes.withUnsafeBytes { FieldText.method($0) }
        #expect(parsed == method)
        #expect(Array(parsed.utf8) == bytes)
    }
}

