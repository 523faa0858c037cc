import Testing
import TestSupport
@testable import HTTP1

@Suite("Head and chunk encoders")
struct EncoderTests {
    /// The head the server writes for a handler's answer, without framing of its own.
    private func serverHead(_ status: Int, _ headers: HTTPHeaders, contentLength: Int? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        ResponseHeadEncoder.encodeServerHead(status: status, headers: headers, keepContentLength: false,
                                             contentLength: contentLength, chunked: false, connection: nil, into: &bytes)
        return bytes
    }

    private func upstreamHead(method: String = "GET", target: String = "/", host: String = "h", port: Int? = nil,
                              _ headers: HTTPHeaders, contentLength: Int? = nil, chunked: Bool = false) -> [UInt8] {
        RequestHeadEncoder.encodeUpstreamRequest(method: method, target: target, hostName: host, port: port, headers: headers,
                                                 contentLength: contentLength, chunked: chunked)
    }

    @Test("response head: status line, fields in order, empty line (RFC 9112 §4)")
    func responseHead() {
        var headers = HTTPHeaders()
        headers.add("Set-Cookie", "a=1")
        headers.add("Set-Cookie", "b=2")
        #expect(serverHead(200, headers, contentLength: 2)
            == wire("HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 2\r\n\r\n"))
    }

    @Test("unknown status reason; a status outside 100...599 is sent as 500")
    func reasonAndInvalidStatus() {
        #expect(serverHead(299, HTTPHeaders()) == wire("HTTP/1.1 299 Status 299\r\n\r\n"))
        #expect(serverHead(42, HTTPHeaders()) == wire("HTTP/1.1 500 Internal Server Error\r\n\r\n"))
    }

    @Test("fields that could split the response are dropped (RFC 9110 §5.5, response splitting)",
          arguments: [
              ("X-Evil", "a\r\nSet-Cookie: pwned=1"), ("X-Evil", "a\nb"), ("X-Evil", "a\rb"),
              ("X-Evil", "a\u{0}b"), ("X-Evil", "a\u{1B}b"), ("X-Evil", "a\u{7F}"),
              ("X-Evil: a\r\nY", "b"), ("Bad Name", "v"), ("", "v"), ("X:Y", "v"),
          ])
    func unsafeFieldsDropped(name: String, value: String) {
        var headers = HTTPHeaders()
        headers.add("Before", "1")
        headers.add(name, value)
        headers.add("After", "2")
        #expect(serverHead(204, headers) == wire("HTTP/1.1 204 No Content\r\nBefore: 1\r\nAfter: 2\r\n\r\n"))
        #expect(upstreamHead(headers) == wire("GET / HTTP/1.1\r\nHost: h\r\nBefore: 1\r\nAfter: 2\r\n\r\n"))
    }

    @Test("obs-text and HTAB values are kept")
    func obsTextKept() {
        #expect(serverHead(200, ["X": "caf\u{E9}\tok"]) == wire("HTTP/1.1 200 OK\r\nX: caf\u{E9}\tok\r\n\r\n"))
    }

    @Test("an encoded response parses back to the same head")
    func responseRoundTrip() {
        let head = HTTPResponseHead(status: 302, headers: HTTPHeaders([("Location", "/x?y=1"), ("Set-Cookie", "s=1; HttpOnly"),
                                                                      ("Content-Length", "0")]))
        let bytes = serverHead(302, HTTPHeaders([("Location", "/x?y=1"), ("Set-Cookie", "s=1; HttpOnly")]), contentLength: 0)
        var parser = ResponseHeadParser()
        #expect(parser.outcome(bytes[...]) == .complete(head, consumed: bytes.count))
    }

    @Test("an encoded request parses back to the same head")
    func requestRoundTrip() {
        let head = HTTPRequestHead(method: "POST", target: "/v1/items?x=%20", version: .http1_1,
                                   headers: HTTPHeaders([("Host", "up:9000"), ("Authorization", "Bearer t"),
                                                         ("Transfer-Encoding", "chunked")]))
        let bytes = upstreamHead(method: "POST", target: "/v1/items?x=%20", host: "up", port: 9000,
                                 ["Authorization": "Bearer t"], chunked: true)
        #expect(bytes == wire("POST /v1/items?x=%20 HTTP/1.1\r\nHost: up:9000\r\nAuthorization: Bearer t\r\nTransfer-Encoding: chunked\r\n\r\n"))
        var parser = RequestHeadParser()
        #expect(parser.outcome(bytes[...]) == .complete(head, consumed: bytes.count))
    }

    @Test("bytes outside the request line grammar are percent-encoded, never sent raw")
    func requestLineCannotBeSplit() {
        let bytes = upstreamHead(method: "GE T", target: "/a b\r\nX: y", HTTPHeaders())
        #expect(bytes == wire("GE%20T /a%20b%0D%0AX:%20y HTTP/1.1\r\nHost: h\r\n\r\n"))
    }

    @Test("heads at the edges of their computed size: every byte escaped, large and many fields, long numbers")
    func headSizes() {
        // Every byte of the method and target escaped (three bytes each), after bytes already in the buffer.
        let target = String(repeating: "\u{7F} \r", count: 2_000)
        var bytes = wire("kept")
        RequestHeadEncoder.encodeUpstreamRequest(method: "\u{1}\u{2}", target: target, hostName: "::1", port: Int.max,
                                                 headers: HTTPHeaders(), contentLength: Int.max, chunked: true, into: &bytes)
        let escaped = String(repeating: "%7F%20%0D", count: 2_000)
        #expect(bytes == wire("kept%01%02 \(escaped) HTTP/1.1\r\nHost: [::1]:\(Int.max)\r\n"
                              + "Content-Length: \(Int.max)\r\nTransfer-Encoding: chunked\r\n\r\n"))
        // A 60 KB value, a hundred fields, unsafe ones dropped; 0 and a negative length as decimals.
        var headers = HTTPHeaders()
        headers.add("Authorization", String(repeating: "b", count: 60_000))
        for i in 0..<100 { headers.add("X-\(i)", i % 10 == 0 ? "bad\r\nvalue" : "é\(i)") }
        let expected = "HTTP/1.1 200 OK\r\nAuthorization: \(String(repeating: "b", count: 60_000))\r\n"
            + (0..<100).filter { $0 % 10 != 0 }.map { "X-\($0): é\($0)\r\n" }.joined()
            + "Content-Length: 0\r\nConnection: close\r\n\r\n"
        var response: [UInt8] = []
        ResponseHeadEncoder.encodeServerHead(status: 200, headers: headers, keepContentLength: false, contentLength: 0,
                                             chunked: false, connection: "close", into: &response)
        #expect(response == wire(expected))
        #expect(upstreamHead(HTTPHeaders(), contentLength: -12) == wire("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: -12\r\n\r\n"))
        // Every digit count, at each power of ten and just below it.
        var lengths = [1, 9, Int.max]
        for exponent in 1...18 {
            let power = (0..<exponent).reduce(1) { product, _ in product * 10 }
            lengths += [power - 1, power, power + 1]
        }
        for length in lengths {
            #expect(upstreamHead(HTTPHeaders(), contentLength: length)
                    == wire("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: \(length)\r\n\r\n"), "\(length)")
        }
    }

    @Test("chunk header is hex size and CRLF; empty chunks are not representable (RFC 9112 §7.1)")
    func chunkHeader() {
        #expect(ChunkedEncoder.chunkHeader(255) == wire("ff\r\n"))
        #expect(ChunkedEncoder.chunkHeader(1) == wire("1\r\n"))
        #expect(ChunkedEncoder.chunkHeader(0) == [])
        #expect(ChunkedEncoder.chunkHeader(-3) == [])
        #expect(ChunkedEncoder.lastChunk == wire("0\r\n\r\n"))
        #expect(ChunkedEncoder.encodeChunk([UInt8]()) == [])
        #expect(ChunkedEncoder.encodeChunk(wire("hello")) == wire("5\r\nhello\r\n"))
    }

    @Test("encoded chunks decode back to the same body")
    func chunkRoundTrip() {
        let pieces = [wire("a"), [], wire(String(repeating: "z", count: 300)), wire("\r\n0\r\n\r\n")]
        var bytes: [UInt8] = []
        for piece in pieces { bytes += ChunkedEncoder.encodeChunk(piece) }
        bytes += ChunkedEncoder.lastChunk
        #expect(ChunkedFeeding.whole(bytes) == .decoded(body: pieces.flatMap { $0 }, consumed: bytes.count, complete: true))
    }
}
