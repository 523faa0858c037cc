import Testing
import TestSupport
@testable import HTTP1

/// Slow or oversized heads must be refused cheaply (slowloris, huge header lines).
@Suite("Head limits and linear scanning")
struct ParserLimitsTests {
    /// A request line and one header line of a mebibyte, never ended.
    private static let hugeHeaderLine = wire("GET / HTTP/1.1\r\nX-Huge: ") + [UInt8](repeating: 0x61, count: 1 << 20)

    @Test("a 1 MiB header line fed in 4 KiB steps is refused once the buffer passes 16 KiB (RFC 6585 §5)")
    func hugeHeaderLineRefusedAtLimit() {
        let bytes = Self.hugeHeaderLine
        var parser = RequestHeadParser()
        var refusedAt: Int?
        var error: HTTPParseError?
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            var length = 0
            while length < bytes.count {
                length = min(bytes.count, length + 4096)
                let outcome = parser.outcome(bytes[..<length])
                if case .failed(let e) = outcome {
                    refusedAt = length
                    error = e
                    break
                }
                #expect(outcome == .incomplete)
            }
        }
        #expect(error == .headTooLarge(limit: 16 * 1024))
        #expect(refusedAt == 20 * 1024)
        #expect(parser.scannedByteCount <= 16 * 1024)
        #expect(elapsed < .seconds(1))
    }

    @Test("a 1 MiB buffer at once is refused after scanning only the first 16 KiB")
    func hugeBufferScansOnlyTheLimit() {
        var parser = RequestHeadParser()
        let outcome = parser.outcome(Self.hugeHeaderLine[...])
        #expect(outcome == .failed(.headTooLarge(limit: 16 * 1024)))
        #expect(parser.scannedByteCount <= 16 * 1024)
    }

    @Test("a head sent one byte per call is scanned once in total (slowloris stays O(n))")
    func byteAtATimeIsLinear() throws {
        var text = "GET / HTTP/1.1\r\nHost: a\r\n"
        for i in 0..<200 { text += "X-Field-\(i): \(String(repeating: "v", count: 50))\r\n" }
        text += "\r\n"
        let bytes = wire(text)
        #expect(bytes.count < 16 * 1024)
        var parser = RequestHeadParser()
        var completedAt: Int?
        for length in 1...bytes.count {
            if case .complete(let head, let consumed) = parser.outcome(bytes[..<length]) {
                completedAt = length
                #expect(consumed == bytes.count)
                #expect(head.headers.count == 201)
                break
            }
        }
        #expect(completedAt == bytes.count)
        #expect(parser.scannedByteCount == bytes.count)
    }

    @Test("the default limit allows 256 fields and refuses 257 (RFC 6585 §5)")
    func defaultHeaderCount() {
        func request(fields: Int) -> [UInt8] {
            var text = "GET / HTTP/1.1\r\nHost: a\r\n"
            for i in 1..<fields { text += "X\(i): v\r\n" }
            return wire(text + "\r\n")
        }
        if case .complete(let head, _) = HeadFeeding.whole(request(fields: 256), as: RequestHeadParser.self) {
            #expect(head.headers.count == 256)
        } else {
            Issue.record("256 fields refused")
        }
        #expect(HeadFeeding.whole(request(fields: 257), as: RequestHeadParser.self)
            == .failed(.tooManyHeaders(limit: 256)))
    }

    @Test("the response parser has the same head limit")
    func responseHeadLimit() {
        let bytes = wire("HTTP/1.1 200 OK\r\nX: ") + [UInt8](repeating: 0x62, count: 20_000)
        var parser = ResponseHeadParser()
        #expect(parser.outcome(bytes[...]) == .failed(.headTooLarge(limit: 16 * 1024)))
        #expect(parser.scannedByteCount <= 16 * 1024)
    }
}
