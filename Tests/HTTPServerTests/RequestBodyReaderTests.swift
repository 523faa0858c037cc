import HTTP1
import Testing
@testable import HTTPServer

/// The connection's body consumption as a value over byte buffers, without sockets.
@Suite("Server: request body reader")
struct RequestBodyReaderTests {
    /// Feeds `input` to the reader as the connection does: what it consumes leaves the buffer.
    private static func take(_ reader: inout RequestBodyReader, _ input: inout [UInt8]) -> Result<[UInt8]?, HTTPBodyError>? {
        let (consumed, result) = input.withUnsafeBytes { reader.take($0) }
        input.removeFirst(consumed)
        return result
    }

    @Test("a Content-Length body stops at its length: the next request's bytes stay buffered")
    func contentLength() throws {
        var reader = RequestBodyReader(maxBodyBytes: 100)
        reader.start(.contentLength(5))
        #expect(reader.declaredLength == 5)
        #expect(!reader.isComplete)
        var input = Array("hel".utf8)
        #expect(try Self.take(&reader, &input)?.get() == Array("hel".utf8))
        #expect(reader.remaining == 2)
        input = Array("loGET / HTTP/1.1\r\n".utf8)
        #expect(try Self.take(&reader, &input)?.get() == Array("lo".utf8))
        #expect(reader.isComplete)
        #expect(input == Array("GET / HTTP/1.1\r\n".utf8))
        #expect(try Self.take(&reader, &input)?.get() == .some(nil))
        #expect(input.count == 16)
    }

    @Test("no body: complete at once, declared length 0")
    func noBody() throws {
        var reader = RequestBodyReader(maxBodyBytes: 100)
        reader.start(.none)
        #expect(reader.isComplete)
        #expect(reader.declaredLength == 0)
        var input = Array("x".utf8)
        #expect(try Self.take(&reader, &input)?.get() == .some(nil))
        #expect(input.count == 1)
    }

    @Test("a chunked body is decoded piece by piece, nil while a chunk is incomplete, then its end")
    func chunked() throws {
        var reader = RequestBodyReader(maxBodyBytes: 100)
        reader.start(.chunked)
        #expect(reader.declaredLength == nil)
        var input = Array("5\r\nhel".utf8)
        let first = try #require(Self.take(&reader, &input)).get()
        var body = first ?? []
        input += Array("lo\r\n".utf8)
        if let piece = try Self.take(&reader, &input)?.get() { body += piece }
        #expect(body == Array("hello".utf8))
        #expect(!reader.isComplete)
        input = Array("0\r\n\r\nNEXT".utf8)
        #expect(try Self.take(&reader, &input)?.get() == .some(nil))
        #expect(reader.isComplete)
        #expect(input == Array("NEXT".utf8))
    }

    @Test("a chunked body over the limit fails with tooLarge")
    func chunkedTooLarge() {
        var reader = RequestBodyReader(maxBodyBytes: 4)
        reader.start(.chunked)
        var input = Array("5\r\nhello\r\n".utf8)
        guard case .failure(.tooLarge(let limit))? = Self.take(&reader, &input) else {
            Issue.record("expected tooLarge")
            return
        }
        #expect(limit == 4)
    }

    @Test("broken chunked framing fails as malformed and consumes nothing")
    func chunkedMalformed() {
        var reader = RequestBodyReader(maxBodyBytes: 100)
        reader.start(.chunked)
        var input = Array("zz\r\nhello\r\n".utf8)
        guard case .failure(.malformed)? = Self.take(&reader, &input) else {
            Issue.record("expected malformed")
            return
        }
        #expect(input.count == 11)
    }

    @Test("a refused request's body is abandoned: nothing more is read of it")
    func abandoned() throws {
        var reader = RequestBodyReader(maxBodyBytes: 100)
        reader.start(.contentLength(10))
        reader.abandon()
        var input = Array("0123456789".utf8)
        #expect(try Self.take(&reader, &input)?.get() == .some(nil))
        #expect(input.count == 10)
    }
}
