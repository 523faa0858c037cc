import Testing
import TestSupport
@testable import HTTP1

/// One chunked body (possibly followed by the next message) and what decoding it must give.
struct ChunkedVector: Sendable, CustomTestStringConvertible {
    var name: String
    var bytes: [UInt8]
    var limits = HTTPParserLimits()
    var expected: ChunkedOutcome
    var testDescription: String { name }

    /// A body that decodes to `body`; `consumed` nil means every byte, `complete` false means the input
    /// ends mid-body.
    static func decode(_ name: String, _ text: String, body: String, consumed: Int? = nil,
                       complete: Bool = true, limits: HTTPParserLimits = .init()) -> ChunkedVector {
        let bytes = wire(text)
        return ChunkedVector(name: name, bytes: bytes, limits: limits,
                             expected: .decoded(body: wire(body), consumed: consumed ?? bytes.count, complete: complete))
    }

    static func refuse(_ name: String, _ bytes: [UInt8], _ error: HTTPParseError,
                       limits: HTTPParserLimits = .init()) -> ChunkedVector {
        ChunkedVector(name: name, bytes: bytes, limits: limits, expected: .failed(error))
    }

    static func refuse(_ name: String, _ text: String, _ error: HTTPParseError,
                       limits: HTTPParserLimits = .init()) -> ChunkedVector {
        refuse(name, wire(text), error, limits: limits)
    }
}

let chunkedVectors: [ChunkedVector] = [
    .decode("one chunk (RFC 9112 §7.1)", "5\r\nhello\r\n0\r\n\r\n", body: "hello"),
    .decode("several chunks, upper and lower case hex (RFC 9112 §7.1)",
            "A\r\n0123456789\r\nc\r\n hello world\r\n1\r\n!\r\n0\r\n\r\n", body: "0123456789 hello world!"),
    .decode("empty body: last chunk only (RFC 9112 §7.1)", "0\r\n\r\n", body: ""),
    .decode("leading zeros in chunk-size (RFC 9112 §7.1)", "0005\r\nhello\r\n000\r\n\r\n", body: "hello"),
    .decode("chunk extensions ignored (RFC 9112 §7.1.1)",
            "5;name=value;flag\r\nhello\r\n3 ; q=\"a b;c\"\r\nabc\r\n0;last\r\n\r\n", body: "helloabc"),
    .decode("trailer fields parsed and discarded (RFC 9112 §7.1.2)",
            "3\r\nabc\r\n0\r\nExpires: never\r\nX-Checksum:\tab  cd \r\n\r\n", body: "abc"),
    .decode("CRLF bytes inside chunk data are data (RFC 9112 §7.1)", "4\r\n\r\n\r\n\r\n0\r\n\r\n", body: "\r\n\r\n"),
    .decode("consumed stops at the end of the body; the next message stays",
            "2\r\nhi\r\n0\r\n\r\nGET / HTTP/1.1\r\n", body: "hi", consumed: wire("2\r\nhi\r\n0\r\n\r\n").count),
    .decode("input ending inside chunk data is incomplete", "5\r\nhel", body: "hel", complete: false),
    .decode("input ending inside the trailer section is incomplete", "1\r\na\r\n0\r\nX: y\r\n", body: "a",
            complete: false),
    .decode("size line of exactly maxChunkLineBytes accepted", "5;abcdef\r\nhello\r\n0\r\n\r\n", body: "hello",
            limits: HTTPParserLimits(maxChunkLineBytes: 8)),
    .decode("largest chunk-size accepted is 2^53 (incomplete data)", "20000000000000\r\nab", body: "ab",
            complete: false),

    .refuse("empty chunk-size (RFC 9112 §7.1)", "\r\nhello\r\n", .invalidChunkSize),
    .refuse("non-hex chunk-size (RFC 9112 §7.1)", "g\r\n", .invalidChunkSize),
    .refuse("signed chunk-size (RFC 9112 §7.1)", "-5\r\nhello\r\n", .invalidChunkSize),
    .refuse("0x prefix in chunk-size (RFC 9112 §7.1)", "0x5\r\nhello\r\n", .invalidChunkSize),
    .refuse("more than 16 hex digits (overflow guard)", "00000000000000005\r\nhello\r\n", .invalidChunkSize),
    .refuse("chunk-size above 2^53 (overflow guard)", "20000000000001\r\n", .invalidChunkSize),
    .refuse("chunk-size of 2^64 (overflow guard)", "10000000000000000\r\n", .invalidChunkSize),
    .refuse("whitespace after size without extension (RFC 9112 §7.1.1)", "5 \r\nhello\r\n0\r\n\r\n", .invalidChunkSize),
    .refuse("extension without semicolon (RFC 9112 §7.1.1)", "5 x\r\nhello\r\n", .invalidChunkSize),
    .refuse("semicolon without size (RFC 9112 §7.1)", ";x\r\n", .invalidChunkSize),
    .refuse("control byte in extension (RFC 9112 §7.1.1)", wire("5;a") + [0x01] + wire("\r\nhello\r\n"),
            .invalidChunkExtension),
    .refuse("size line over maxChunkLineBytes", "5;abcdefg\r\nhello\r\n0\r\n\r\n", .chunkLineTooLong(limit: 8),
            limits: HTTPParserLimits(maxChunkLineBytes: 8)),
    .refuse("bare LF after chunk-size (RFC 9112 §7.1)", "5\nhello\r\n0\r\n\r\n", .invalidChunkFraming),
    .refuse("bare LF after extension (RFC 9112 §7.1)", "5;x\nhello\r\n0\r\n\r\n", .invalidChunkFraming),
    .refuse("CR without LF after chunk-size (RFC 9112 §7.1)", "5\rhello\r\n0\r\n\r\n", .invalidChunkFraming),
    .refuse("data longer than the chunk-size (RFC 9112 §7.1)", "5\r\nhelloX\r\n0\r\n\r\n", .invalidChunkFraming),
    .refuse("bare LF after chunk data (RFC 9112 §7.1)", "5\r\nhello\n0\r\n\r\n", .invalidChunkFraming),
    .refuse("CR without LF after chunk data (RFC 9112 §7.1)", "5\r\nhello\r0\r\n\r\n", .invalidChunkFraming),
    .refuse("bare LF ends the body (RFC 9112 §7.1)", "0\r\n\n", .invalidChunkFraming),
    .refuse("bare LF ends a trailer line (RFC 9112 §7.1.2)", "0\r\nX: y\n\r\n", .invalidChunkFraming),
    .refuse("CR without LF ends the body (RFC 9112 §7.1)", "0\r\n\rX", .invalidChunkFraming),
    .refuse("whitespace before colon in a trailer (RFC 9112 §5.1)", "0\r\nX : y\r\n\r\n", .invalidTrailer),
    .refuse("obs-fold in a trailer (RFC 9112 §5.2)", "0\r\nX: y\r\n z\r\n\r\n", .invalidTrailer),
    .refuse("trailer line without colon (RFC 9112 §5)", "0\r\nNoColon\r\n\r\n", .invalidTrailer),
    .refuse("NUL in a trailer value (RFC 9110 §5.5)", wire("0\r\nX: a") + [0] + wire("\r\n\r\n"), .invalidTrailer),
    .refuse("trailer section over maxTrailerBytes", "0\r\nX-Long: 0123456789\r\n\r\n", .trailerTooLarge(limit: 16),
            limits: HTTPParserLimits(maxTrailerBytes: 16)),
]

@Suite("Chunked transfer coding (RFC 9112 §7.1)")
struct ChunkedDecoderTests {
    @Test("chunked vectors: whole, byte by byte and split everywhere agree", arguments: chunkedVectors)
    func vector(_ vector: ChunkedVector) {
        let problems = ChunkedFeeding.disagreements(vector.bytes, limits: vector.limits)
        #expect(problems.isEmpty, "\(problems)")
        #expect(ChunkedFeeding.whole(vector.bytes, limits: vector.limits) == vector.expected)
    }

    @Test("body bytes are slices of the input, not copies")
    func dataIsZeroCopy() throws {
        let bytes = wire("5\r\nhello\r\n0\r\n\r\n")
        var decoder = ChunkedDecoder()
        bytes.withUnsafeBytes { raw in
            var pieces: [UnsafeRawBufferPointer] = []
            #expect(throws: Never.self) { _ = try decoder.decode(raw) { pieces.append($0) } }
            #expect(pieces.count == 1)
            #expect(pieces.first?.baseAddress == raw.baseAddress.map { $0 + 3 })
            #expect(pieces.first?.count == 5)
        }
    }

    @Test("a large chunk split across reads is reported piece by piece")
    func largeChunkAcrossReads() throws {
        let data = [UInt8]((0..<100_000).map { UInt8(truncatingIfNeeded: $0) })
        let bytes = ChunkedEncoder.encodeChunk(data) + ChunkedEncoder.lastChunk
        var decoder = ChunkedDecoder()
        var body: [UInt8] = []
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + 4096)
            let used = try ChunkedFeeding.decode(&decoder, bytes[offset..<end], into: &body)
            #expect(used == end - offset)
            offset = end
        }
        #expect(decoder.isComplete)
        #expect(body == data)
    }
}
