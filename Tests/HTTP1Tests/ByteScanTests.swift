import CByteScan
import Testing
import TestSupport
@testable import HTTP1

/// The C scans (`CByteScan`) that parse and write every head agree with the plain Swift byte
/// classes they stand in for, at every length and position: the vector steps take 16 bytes at a
/// time, so a wrong byte at the end of a step, or in the tail after the last one, must still count.
@Suite("Byte scans")
struct ByteScanTests {
    /// A fixed pseudo-random sequence (SplitMix64): the same bytes on every run.
    struct Bytes {
        var state: UInt64
        mutating func next() -> UInt8 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return UInt8(truncatingIfNeeded: z ^ (z >> 31))
        }
        /// `count` bytes drawn from `allowed`.
        mutating func run(_ count: Int, from allowed: [UInt8]) -> [UInt8] {
            (0..<count).map { _ in allowed[Int(next()) % allowed.count] }
        }
    }

    static let tokenBytes = (0...255).map(UInt8.init).filter(ASCII.isTokenChar)
    static let valueBytes = (0...255).map(UInt8.init).filter(ASCII.isFieldValueChar)

    @Test("each byte's class is the same in C and in Swift")
    func classes() {
        for byte in 0...255 {
            let b = UInt8(byte)
            #expect((gatehouse_is_tchar(b) != 0) == ASCII.isTokenChar(b), "tchar \(b)")
            #expect((gatehouse_is_field_value([b], 1) != 0) == ASCII.isFieldValueChar(b), "field value \(b)")
            #expect((gatehouse_is_ascii([b], 1) != 0) == (b < 0x80), "ascii \(b)")
            #expect((gatehouse_find_control([b], 0, 1) == 0) == (b <= 0x0D), "control \(b)")
        }
    }

    @Test("field values: one bad byte anywhere in 0 to 70 bytes is found", arguments: [0x00, 0x0A, 0x0D, 0x1F, 0x7F] as [UInt8])
    func fieldValues(bad: UInt8) {
        var random = Bytes(state: UInt64(bad))
        for count in 0...70 {
            let good = random.run(count, from: Self.valueBytes)
            #expect(gatehouse_is_field_value(good, count) != 0, "\(count) good bytes")
            for position in 0..<count {
                var spoiled = good
                spoiled[position] = bad
                #expect(gatehouse_is_field_value(spoiled, count) == 0, "\(bad) at \(position) of \(count)")
            }
        }
    }

    @Test("controls: the first byte at or below CR is found from any start")
    func controls() {
        var random = Bytes(state: 7)
        let visible = (0x0E...0xFF).map(UInt8.init)
        for count in 0...70 {
            let line = random.run(count, from: visible)
            #expect(gatehouse_find_control(line, 0, count) == count)
            for position in 0..<count {
                for control in [0x09, 0x0A, 0x0D] as [UInt8] {
                    var marked = line
                    marked[position] = control
                    for start in [0, position / 2, position] {
                        #expect(gatehouse_find_control(marked, start, count) == position, "\(control) at \(position) of \(count) from \(start)")
                    }
                    #expect(gatehouse_find_control(marked, position + 1, count) == count)
                }
            }
        }
    }

    @Test("tokens and ASCII: the prefix ends at the first byte outside the class")
    func tokensAndASCII() {
        var random = Bytes(state: 11)
        for count in 0...40 {
            let name = random.run(count, from: Self.tokenBytes)
            #expect(gatehouse_token_prefix(name, count) == count)
            #expect(gatehouse_is_ascii(name, count) != 0)
            for position in 0..<count {
                for other in [0x20, 0x3A, 0x22, 0x80, 0x00] as [UInt8] {
                    var broken = name
                    broken[position] = other
                    #expect(gatehouse_token_prefix(broken, count) == position)
                    #expect((gatehouse_is_ascii(broken, count) != 0) == (other < 0x80))
                }
            }
        }
    }

    @Test("find_byte and ByteSearch: the first occurrence in the range, or its end")
    func findByte() {
        var random = Bytes(state: 13)
        let others = (0...255).map(UInt8.init).filter { $0 != UInt8(ascii: ";") }
        for count in 0...70 {
            let line = random.run(count, from: others)
            line.withUnsafeBufferPointer { bytes in
                #expect(ByteSearch.firstIndex(of: UInt8(ascii: ";"), in: bytes, from: 0, to: count) == count)
            }
            for position in 0..<count {
                var marked = line
                marked[position] = UInt8(ascii: ";")
                marked.withUnsafeBufferPointer { bytes in
                    #expect(ByteSearch.firstIndex(of: UInt8(ascii: ";"), in: bytes, from: 0, to: count) == position)
                    #expect(ByteSearch.firstIndex(of: UInt8(ascii: ";"), in: bytes, from: position, to: count) == position)
                    #expect(ByteSearch.firstIndex(of: UInt8(ascii: ";"), in: bytes, from: 0, to: position) == position)
                    #expect(ByteSearch.firstIndex(of: UInt8(ascii: ";"), in: bytes, from: position + 1, to: count) == count)
                }
            }
        }
        #expect(ByteSearch.firstIndex(of: 0x3B, in: UnsafeBufferPointer(start: nil, count: 0), from: 0, to: 0) == 0)
    }

    @Test("bytes_equal compares exactly the given length")
    func equalBytes() {
        let a = Array("Accept-Encoding: gzip, deflate, br".utf8)
        var b = a
        #expect(gatehouse_bytes_equal(a, b, a.count) != 0)
        b[a.count - 1] ^= 0x20
        #expect(gatehouse_bytes_equal(a, b, a.count) == 0)
        #expect(gatehouse_bytes_equal(a, b, a.count - 1) != 0)
        #expect(gatehouse_bytes_equal(a, b, 0) != 0)
        a.withUnsafeBufferPointer { x in
            b.withUnsafeBufferPointer { y in
                #expect(!ByteSearch.equal(x, y))
                #expect(ByteSearch.equal(UnsafeBufferPointer(rebasing: x.dropLast()), UnsafeBufferPointer(rebasing: y.dropLast())))
                #expect(!ByteSearch.equal(x, UnsafeBufferPointer(rebasing: y.dropLast())))
                #expect(ByteSearch.equal(UnsafeBufferPointer(start: nil, count: 0), UnsafeBufferPointer(rebasing: y.prefix(0))))
            }
        }
    }
}

/// Fields the parser checked, or that were added as `HTTPField.Checked`, are written without a
/// second check; every other field is still checked (and dropped when unsafe) when written.
@Suite("Checked header fields")
struct CheckedFieldTests {
    static func parsed(_ text: String) throws -> HTTPHeaders {
        var parser = RequestHeadParser()
        let bytes = wire(text)
        let result = try bytes.withUnsafeBytes { raw throws(HTTPParseError) in try parser.parse(raw) }
        guard case .complete(let head, _) = result else { Issue.record("incomplete"); return HTTPHeaders() }
        return head.headers
    }

    @Test("parsed fields are marked; fields added by name and value are not")
    func marks() throws {
        var headers = try Self.parsed("GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nX-B: caf\u{e9}\r\n\r\n")
        #expect((0..<3).allSatisfy(headers.isChecked(at:)))
        headers.add("X-C", "3")
        #expect(!headers.isChecked(at: 3))
        headers.add(HTTPField.Checked(name: "X-D", value: "4")!)
        #expect(headers.isChecked(at: 4))
        #expect(!HTTPHeaders([("Host", "a")]).isChecked(at: 0))
    }

    @Test("a connection's next head keeps the marks: repeated, changed, added and missing lines")
    func marksOnRepeatedHeads() throws {
        var parser = ResponseHeadParser()
        func parse(_ date: String, _ extra: String = "") throws -> HTTPHeaders {
            let bytes = wire("HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: \(date)\r\nContent-Type: application/json\r\n\(extra)Content-Length: 2\r\n\r\n")
            let result = try bytes.withUnsafeBytes { raw throws(HTTPParseError) in try parser.parse(raw) }
            parser.reset()
            guard case .complete(let head, _) = result else { Issue.record("incomplete"); return HTTPHeaders() }
            return head.headers
        }
        for headers in [try parse("one"), try parse("one"), try parse("two"), try parse("two", "X-A: 1\r\n"), try parse("three")] {
            #expect((0..<headers.count).allSatisfy(headers.isChecked(at:)), "\(headers.fields)")
        }
    }

    @Test("the marks move with their fields: copied one by one, removed, replaced")
    func marksFollowFields() throws {
        let source = try Self.parsed("GET / HTTP/1.1\r\nHost: a\r\nCookie: c=1\r\nX-A: 1\r\n\r\n")
        var copy = HTTPHeaders()
        copy.add("X-Unchecked", "0")
        for index in 0..<source.count { copy.add(fieldAt: index, of: source) }
        #expect(copy.fields.map(\.name) == ["X-Unchecked", "Host", "Cookie", "X-A"])
        #expect([false, true, true, true] == (0..<4).map(copy.isChecked(at:)))
        copy.remove("Cookie")
        #expect(copy.fields.map(\.name) == ["X-Unchecked", "Host", "X-A"])
        #expect([false, true, true] == (0..<3).map(copy.isChecked(at:)))
        copy.set("Host", "b")
        #expect(copy.fields.map(\.name) == ["X-Unchecked", "X-A", "Host"])
        #expect([false, true, false] == (0..<3).map(copy.isChecked(at:)))
    }

    @Test("equality is about the fields, not the marks")
    func equality() throws {
        #expect(try Self.parsed("GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n\r\n") == HTTPHeaders([("Host", "a"), ("X-A", "1")]))
    }

    @Test("only writable fields can be made Checked", arguments: [
        ("Bad Name", "v"), ("", "v"), ("X-Evil", "a\r\nSet-Cookie: x=1"), ("X-Nul", "a\u{0}b"), ("X-Del", "\u{7f}"),
    ])
    func refused(name: String, value: String) {
        #expect(HTTPField.Checked(name: name, value: value) == nil)
    }

    @Test("checkAll marks the writable fields of a list built by name and value, and only those")
    func checkAll() {
        var headers = HTTPHeaders([("Content-Type", "text/plain"), ("X-Evil", "a\r\nSet-Cookie: x=1"), ("Bad Name", "v"), ("ETag", "\"1\"")])
        headers.checkAll()
        #expect([true, false, false, true] == (0..<4).map(headers.isChecked(at:)))
        var bytes: [UInt8] = []
        ResponseHeadEncoder.encodeServerHead(status: 200, headers: headers, keepContentLength: false, contentLength: 0,
                                             chunked: false, connection: nil, into: &bytes)
        #expect(bytes == wire("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nETag: \"1\"\r\nContent-Length: 0\r\n\r\n"))
    }

    @Test("fields past the 64th are checked when written")
    func manyFields() {
        var headers = HTTPHeaders()
        for i in 0..<70 { headers.add(HTTPField.Checked(name: "X-\(i)", value: "\(i)")!) }
        #expect(headers.isChecked(at: 63) && !headers.isChecked(at: 64) && !headers.isChecked(at: 69))
        headers.add("X-Evil", "a\r\nb")
        var bytes: [UInt8] = []
        ResponseHeadEncoder.encodeServerHead(status: 200, headers: headers, keepContentLength: false, contentLength: 0,
                                             chunked: false, connection: nil, into: &bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("X-69: 69\r\n") && !text.contains("X-Evil"))
    }
}

/// ``HTTPHeaders`` keeps its fields as the bytes of their lines: what that must not change.
@Suite("Header fields as bytes")
struct HeaderBytesTests {
    @Test("a value that is not UTF-8 reads as ISO-8859-1 and is written as the bytes it came with")
    func obsTextBytes() throws {
        var bytes = wire("GET / HTTP/1.1\r\nHost: a\r\nX-Name: caf")
        bytes += [0xE9]
        bytes += wire("\r\n\r\n")
        var parser = RequestHeadParser()
        let result = try bytes.withUnsafeBytes { raw throws(HTTPParseError) in try parser.parse(raw) }
        guard case .complete(let head, _) = result else { Issue.record("incomplete"); return }
        #expect(head.headers["X-Name"] == "caf\u{E9}")
        #expect(head.headers == HTTPHeaders([("Host", "a"), ("X-Name", "caf\u{E9}")]))
        var out: [UInt8] = []
        RequestHeadEncoder.encodeUpstreamRequest(method: "GET", target: "/", hostName: "u", port: nil, headers: head.headers,
                                                 contentLength: nil, chunked: false, into: &out)
        #expect(out == wire("GET / HTTP/1.1\r\nHost: u\r\nX-Name: caf") + [0xE9] + wire("\r\n\r\n"))
    }

    @Test("look-ups ignore case, find names of any length, and see fields added, copied and removed")
    func lookUps() {
        let long = String(repeating: "x", count: 70)
        var headers = HTTPHeaders([("Content-Type", "a"), (long, "1"), (long + "y", "2"), ("content-type", "b")])
        #expect(headers.values("CONTENT-TYPE") == ["a", "b"])
        #expect(headers[long.uppercased()] == "1" && headers[long + "Y"] == "2")
        #expect(headers[String(repeating: "x", count: 64)] == nil)
        #expect(headers["Content-Typf"] == nil && headers["X"] == nil && !headers.contains(""))
        headers.remove("Content-Type")
        #expect(headers.fields.map(\.value) == ["1", "2"])
        var copy = HTTPHeaders()
        copy.append(fieldsOf: headers) { index, _, _ in index == 1 }
        #expect(copy.fields == [HTTPField(name: long + "y", value: "2")])
        #expect(copy[long] == nil)
        var tokens: [String] = []
        HTTPHeaders([("Connection", " keep-alive ,, Upgrade"), ("connection", "close")]).forEachTokenBytes("Connection") {
            tokens.append(String(decoding: $0, as: UTF8.self))
            return true
        }
        #expect(tokens == ["keep-alive", "Upgrade", "close"])
    }

    @Test("fields copied by runs keep their order, values and marks")
    func runs() throws {
        let source = try CheckedFieldTests.parsed("GET / HTTP/1.1\r\nHost: a\r\nCookie: c=1\r\nX-A: 1\r\nX-B: 2\r\nX-C: 3\r\n\r\n")
        var copy = HTTPHeaders()
        copy.add("X-First", "0")
        copy.append(fieldsOf: source) { _, name, _ in !ByteSearch.equalIgnoringASCIICase(name, "cookie") }
        copy.add("X-Last", "9")
        #expect(copy.fields.map(\.name) == ["X-First", "Host", "X-A", "X-B", "X-C", "X-Last"])
        #expect(copy.fields.map(\.value) == ["0", "a", "1", "2", "3", "9"])
        #expect([false, true, true, true, true, false] == (0..<6).map(copy.isChecked(at:)))
        #expect(copy.encodedSize == wire("X-First: 0\r\nHost: a\r\nX-A: 1\r\nX-B: 2\r\nX-C: 3\r\nX-Last: 9\r\n").count)
    }
}
