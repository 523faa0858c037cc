import Testing
import TestSupport
@testable import HTTP1

/// A parser reuses the checked lines (and, for an identical head, the whole field list) of the
/// previous head it parsed: keep-alive clients and upstreams repeat most field lines. Reuse must never
/// change what a head parses to; a line is checked unless its bytes are those of a line that
/// passed the same checks in the previous head. The bytes of a connection's heads are kept from
/// its second head on (`RepeatedFieldLines`), so reuse shows from the third: the tests parse a
/// first head before the ones they compare.
@Suite("Field lines reused from the previous head")
struct HeadFieldReuseTests {
    private static let cookie = "gatehouse=0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEF"

    private func request(_ fields: String) -> [UInt8] {
        wire("GET /api/hello HTTP/1.1\r\nHost: a.example\r\n\(fields)\r\n")
    }

    private func parse(_ bytes: [UInt8], with parser: inout RequestHeadParser) throws(HTTPParseError) -> HTTPRequestHead? {
        let outcome = parser.outcome(bytes[...])
        parser.reset()
        switch outcome {
        case .complete(let head, _): return head
        case .failed(let error): throw error
        case .incomplete: return nil
        }
    }

    private func fieldStorage(_ headers: HTTPHeaders) -> UnsafeRawPointer? {
        headers.storageAddress
    }

    @Test("an identical head shares the previous field list; a fresh parser gives the same fields")
    func identicalHead() throws {
        var parser = RequestHeadParser()
        let bytes = request("Cookie: \(Self.cookie)\r\nX-CSRF: 1\r\n")
        _ = try parse(bytes, with: &parser)
        let first = try #require(try parse(bytes, with: &parser))
        let second = try #require(try parse(bytes, with: &parser))
        #expect(first == second)
        #expect(fieldStorage(first.headers) == fieldStorage(second.headers))
        var fresh = RequestHeadParser()
        #expect(try parse(bytes, with: &fresh) == second)
    }

    @Test("with the speed layer off (remembering: false) every head is parsed afresh, to the same fields")
    func notRemembering() throws {
        var parser = RequestHeadParser()
        let bytes = request("Cookie: \(Self.cookie)\r\nX-CSRF: 1\r\n")
        func parseAfresh() throws -> HTTPRequestHead {
            let outcome = try bytes.withUnsafeBytes { buffer throws(HTTPParseError) in try parser.parse(buffer, remembering: false) }
            parser.reset()
            guard case .complete(let head, _) = outcome else { throw HTTPParseError.invalidRequestLine }
            return head
        }
        _ = try parse(bytes, with: &parser)
        _ = try parse(bytes, with: &parser)
        let remembered = try #require(try parse(bytes, with: &parser))
        let afresh = try parseAfresh()
        let afreshAgain = try parseAfresh()
        #expect(afresh == remembered && afreshAgain == remembered)
        #expect(fieldStorage(afresh.headers) != fieldStorage(remembered.headers))
        #expect(fieldStorage(afresh.headers) != fieldStorage(afreshAgain.headers), "nothing kept between heads")

        var responses = ResponseHeadParser()
        let answer = wire("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n")
        var heads: [HTTPResponseHead] = []
        for remembering in [true, true, true, false] {
            let outcome = try answer.withUnsafeBytes { buffer throws(HTTPParseError) in try responses.parse(buffer, remembering: remembering) }
            responses.reset()
            guard case .complete(let head, _) = outcome else { throw HTTPParseError.invalidStatusLine }
            heads.append(head)
        }
        #expect(Set(heads.map(\.status)) == [200] && heads[3].headers == heads[2].headers)
        #expect(fieldStorage(heads[2].headers) == fieldStorage(heads[1].headers))
        #expect(fieldStorage(heads[3].headers) != fieldStorage(heads[2].headers))
    }

    @Test("a head with the previous head's field lines is found by comparing them: the same end, the same verdicts")
    func repeatedLinesBoundary() throws {
        let limits = HTTPParserLimits(maxHeadBytes: 120)
        var parser = RequestHeadParser(limits: limits)
        let fields = "Cookie: c=1\r\nX-CSRF: 1\r\n"
        let head = request(fields)
        _ = try parse(head, with: &parser)
        _ = try parse(head, with: &parser)
        // Another request pipelined behind it: only this head is consumed.
        let pipelined = head + wire("GET /next HTTP/1.1\r\n")
        let outcome = parser.outcome(pipelined[...])
        parser.reset()
        guard case .complete(let parsed, let consumed) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(consumed == head.count)
        #expect(parsed.headers["X-CSRF"] == "1" && parsed.headers.count == 3)
        // Not all there yet: incomplete, whatever the lines so far.
        #expect(try parse(Array(head.dropLast(2)), with: &parser) == nil)
        // Other start lines before the same field lines: what a fresh parser says, error or head.
        for startLine in ["GET /\(String(repeating: "a", count: 80)) HTTP/1.1",  // past the size limit
                          "GET /a\nb HTTP/1.1", "GET /a\rb HTTP/1.1", "GET /a\u{01}b HTTP/1.1",
                          "GET /other?x=1 HTTP/1.1", "POST /api HTTP/1.0", "\r\nGET / HTTP/1.1"] {
            let bytes = wire("\(startLine)\r\nHost: a.example\r\n\(fields)\r\n")
            _ = try parse(head, with: &parser)
            let reused = parser.outcome(bytes[...])
            parser.reset()
            var fresh = RequestHeadParser(limits: limits)
            #expect(reused == fresh.outcome(bytes[...]), "\(startLine)")
        }
        #expect(throws: HTTPParseError.headTooLarge(limit: 120)) {
            _ = try parse(wire("GET /\(String(repeating: "a", count: 80)) HTTP/1.1\r\nHost: a.example\r\n\(fields)\r\n"),
                          with: &parser)
        }
    }

    @Test("the Host rule of the same fields under another version is checked again")
    func hostRulePerVersion() throws {
        var parser = RequestHeadParser()
        let old = wire("GET / HTTP/1.0\r\nX-A: 1\r\n\r\n")
        for _ in 0..<3 { #expect(try parse(old, with: &parser) != nil) }
        #expect(throws: HTTPParseError.missingHost) { _ = try parse(wire("GET / HTTP/1.1\r\nX-A: 1\r\n\r\n"), with: &parser) }
        #expect(try parse(old, with: &parser) != nil)
    }

    @Test("a changed line gets its own bytes; the head parses as with a fresh parser")
    func changedLine() throws {
        var parser = RequestHeadParser()
        _ = try parse(request("Cookie: \(Self.cookie)\r\nX-Request: one-long-value-of-the-first\r\n"), with: &parser)
        let first = try #require(try parse(request("Cookie: \(Self.cookie)\r\nX-Request: one-long-value-of-the-first\r\n"),
                                           with: &parser))
        let second = try #require(try parse(request("Cookie: \(Self.cookie)\r\nX-Request: two-long-value-of-the-second\r\n"),
                                            with: &parser))
        #expect(second.headers["X-Request"] == "two-long-value-of-the-second")
        #expect(second.headers["Cookie"] == Self.cookie)
        #expect(second.headers.count == 3)
        #expect(fieldStorage(first.headers) != fieldStorage(second.headers))
        var fresh = RequestHeadParser()
        #expect(try parse(request("Cookie: \(Self.cookie)\r\nX-Request: two-long-value-of-the-second\r\n"), with: &fresh) == second)
    }

    @Test("fewer, more, reordered and renamed lines parse exactly as with a fresh parser",
          arguments: [
              "Cookie: \(cookie)\r\n",
              "Cookie: \(cookie)\r\nX-CSRF: 1\r\nAccept: */*\r\n",
              "X-CSRF: 1\r\nCookie: \(cookie)\r\n",
              "cookie: \(cookie)\r\nX-CSRF: 1\r\n",
              "Cookie: \(cookie) \r\nX-CSRF:1\r\n",
              "",
          ])
    func variations(_ fields: String) throws {
        var parser = RequestHeadParser()
        _ = try parse(request("Cookie: \(Self.cookie)\r\nX-CSRF: 1\r\n"), with: &parser)
        _ = try parse(request("Cookie: \(Self.cookie)\r\nX-CSRF: 1\r\n"), with: &parser)
        let reused = try parse(request(fields), with: &parser)
        var fresh = RequestHeadParser()
        let expected = try parse(request(fields), with: &fresh)
        #expect(reused == expected)
        // Field names keep the spelling of the head they came in.
        #expect(reused?.headers.fields.map(\.name) == expected?.headers.fields.map(\.name))
    }

    @Test("duplicate framing fields after a head with one are kept, and refused by the framing rules")
    func duplicateContentLength() throws {
        var parser = RequestHeadParser()
        let once = "Content-Length: 5\r\n"
        _ = try parse(request(once), with: &parser)
        let twice = try #require(try parse(request(once + "Content-Length: 6\r\n"), with: &parser))
        #expect(twice.headers.values("Content-Length") == ["5", "6"])
        #expect(throws: HTTPParseError.self) { try BodyFramingRules.request(twice) }
    }

    @Test("a line that differs from the previous head's is checked, wherever it stands",
          arguments: [
              ("X-CSRF: 1\r\n \tfolded\r\n", HTTPParseError.obsoleteLineFolding(line: 4)),
              ("X-CSRF : 1\r\n", HTTPParseError.whitespaceBeforeColon(line: 3)),
              ("X-CSRF: 1\r\nBad\u{7F}Name: x\r\n", HTTPParseError.invalidFieldName(line: 4)),
              ("X-CSRF: 1\r\nX-Ctl: a\u{01}b\r\n", HTTPParseError.invalidFieldValue(name: "X-Ctl")),
              ("X-CSRF: 1\r\nNoColon\r\n", HTTPParseError.missingColon(line: 4)),
          ])
    func malformedAfterGoodHead(_ fields: String, _ error: HTTPParseError) throws {
        var parser = RequestHeadParser()
        _ = try parse(request("X-CSRF: 1\r\nX-Ctl: ab\r\n"), with: &parser)
        _ = try parse(request("X-CSRF: 1\r\nX-Ctl: ab\r\n"), with: &parser)
        #expect(throws: error) { _ = try parse(request(fields), with: &parser) }
        // And the parser still works (and compares with the last good head) afterwards.
        var fresh = RequestHeadParser()
        #expect(try parse(request("X-CSRF: 1\r\n"), with: &parser) == parse(request("X-CSRF: 1\r\n"), with: &fresh))
    }

    @Test("a value that is not UTF-8 (read as ISO-8859-1) is never taken for the same bytes twice")
    func obsText() throws {
        var parser = RequestHeadParser()
        var bytes = wire("GET / HTTP/1.1\r\nHost: a\r\nX-Name: caf")
        bytes += [0xE9]
        bytes += wire("\r\n\r\n")
        let first = try #require(try parse(bytes, with: &parser))
        let second = try #require(try parse(bytes, with: &parser))
        #expect(first.headers["X-Name"] == "caf\u{E9}")
        #expect(second == first)
        // The String "café" spelled in UTF-8 is other bytes than the line's single 0xE9.
        var utf8 = wire("GET / HTTP/1.1\r\nHost: a\r\nX-Name: caf\u{E9}\r\n\r\n")
        #expect(try parse(utf8, with: &parser)?.headers["X-Name"] == "caf\u{E9}")
        utf8 = bytes
        #expect(try parse(utf8, with: &parser)?.headers["X-Name"] == "caf\u{E9}")
    }

    @Test("an upstream's answers: the response parser reuses the same way")
    func responses() throws {
        var parser = ResponseHeadParser()
        func parse(_ text: String) throws(HTTPParseError) -> HTTPResponseHead? {
            let outcome = parser.outcome(wire(text)[...])
            parser.reset()
            switch outcome {
            case .complete(let head, _): return head
            case .failed(let error): throw error
            case .incomplete: return nil
            }
        }
        _ = try parse("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Tue, 24 Nov 2026 22:45:31 GMT\r\nContent-Length: 2\r\n\r\n")
        let a = try #require(try parse("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Tue, 24 Nov 2026 22:45:32 GMT\r\nContent-Length: 2\r\n\r\n"))
        let b = try #require(try parse("HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nDate: Tue, 24 Nov 2026 22:45:33 GMT\r\nContent-Length: 2\r\n\r\n"))
        #expect(b.status == 404)
        #expect(b.headers["Date"] == "Tue, 24 Nov 2026 22:45:33 GMT")
        #expect(a.headers["Content-Type"] == b.headers["Content-Type"])
        #expect(a.headers["Content-Length"] == b.headers["Content-Length"])
    }

    @Test("Mutated heads through one long-lived parser parse exactly as with a fresh parser each (seeded)")
    func fuzzedSequence() {
        var rng = FuzzRun.generator(0x7265_7573_6564_0001)
        var connection = RequestHeadParser()
        var upstream = ResponseHeadParser()
        var problems: [String] = []
        for iteration in 0..<FuzzRun.iterations(share: 0.05) {
            // Half the time the seed itself: the next mutation then differs from a head just parsed.
            let request = Self.input(ParserFuzzTests.requestSeeds, iteration, &rng)
            problems += Self.disagreement(&connection, request, iteration)
            if case .complete(let a, _) = connection.outcome(request[...]), case .complete(let b, _) = Self.fresh(RequestHeadParser.self, request),
               a.headers.fields.map(\.name) != b.headers.fields.map(\.name) {
                problems.append("#\(iteration) request names differ: \(a.headers) vs \(b.headers)")
            }
            connection.reset()
            problems += Self.disagreement(&upstream, Self.input(ParserFuzzTests.responseSeeds, iteration, &rng), iteration)
            if problems.count > 5 { break }
        }
        #expect(problems.isEmpty, "\(problems); \(FuzzRun.reproduce)")
    }

    private static func input(_ seeds: [[UInt8]], _ iteration: Int, _ rng: inout SplitMix64) -> [UInt8] {
        let seed = seeds[iteration % seeds.count]
        return iteration % 2 == 0 ? seed : Mutator.mutate(seed, using: &rng)
    }

    private static func fresh<Parser: HeadParsing>(_: Parser.Type, _ bytes: [UInt8]) -> HeadOutcome<Parser.Head> {
        var parser = Parser(limits: HTTPParserLimits())
        return parser.outcome(bytes[...])
    }

    /// `parser` (which parsed the previous input) against a fresh parser on `bytes`; leaves
    /// `parser` ready for the next head.
    private static func disagreement<Parser: HeadParsing & ResettableHeadParsing>(
        _ parser: inout Parser, _ bytes: [UInt8], _ iteration: Int
    ) -> [String] {
        let reused = parser.outcome(bytes[...])
        parser.reset()
        let expected = fresh(Parser.self, bytes)
        return reused == expected ? [] : ["#\(iteration) \(bytes): \(reused) vs \(expected)"]
    }
}

/// Both head parsers forget a partial head with `reset()`.
protocol ResettableHeadParsing { mutating func reset() }
extension RequestHeadParser: ResettableHeadParsing {}
extension ResponseHeadParser: ResettableHeadParsing {}
