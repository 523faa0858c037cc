#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Testing
import TestSupport
@testable import HTTP1

@Suite("Parser fuzzing (seeded: FUZZ_SEED, FUZZ_ITERATIONS)")
struct ParserFuzzTests {
    static let requestSeeds: [[UInt8]] = [
        wire("GET /index.html?q=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nCookie: a=b\r\n\r\n"),
        wire("\r\nPOST /api/items HTTP/1.1\r\nHost: a:8080\r\nContent-Length: 5\r\nX-CSRF: 1\r\n\r\nhello"),
        wire("PUT /u HTTP/1.1\r\nHost: [::1]\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
        wire("OPTIONS * HTTP/1.0\r\nX:  v \t\r\n\r\nGET / HTTP/1.1\r\nHost: b\r\n\r\n"),
    ]

    static let responseSeeds: [[UInt8]] = [
        wire("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nSet-Cookie: a=1\r\n\r\nhi"),
        wire("HTTP/1.0 404\r\nServer: x\r\n\r\n"),
        wire("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"),
    ]

    static let chunkedSeeds: [[UInt8]] = [
        wire("5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: y\r\n\r\nNEXT"),
        wire("1\r\na\r\n0\r\n\r\n"),
    ]

    @Test("Mutated requests (45% of FUZZ_ITERATIONS): no crash, whole and split parsing agree")
    func mutatedRequests() async {
        let problems = await FuzzRun.offPool { Self.mutatedRequestsProblems() }
        #expect(problems.isEmpty, "\(problems); \(FuzzRun.reproduce)")
    }

    static func mutatedRequestsProblems() -> [String] {
        var rng = FuzzRun.generator(0x6761_7465_686F_7573)
        var problems: [String] = []
        for iteration in 0..<FuzzRun.iterations(share: 0.45) {
            let seed = Self.requestSeeds[iteration % Self.requestSeeds.count]
            let bytes = Mutator.mutate(seed, using: &rng)
            let whole = HeadFeeding.whole(bytes, as: RequestHeadParser.self)
            let offset = Int.random(in: 0...bytes.count, using: &rng)
            let split = HeadFeeding.split(bytes, at: offset, as: RequestHeadParser.self)
            if split != whole { problems.append("#\(iteration) split at \(offset): \(split) vs \(whole) for \(bytes)") }
            if iteration % 200 == 0 {
                let (perByte, _) = HeadFeeding.byteByByte(bytes, as: RequestHeadParser.self)
                if perByte != whole { problems.append("#\(iteration) byte by byte: \(perByte) vs \(whole)") }
            }
            if case .complete(let head, let consumed) = whole {
                if consumed > bytes.count { problems.append("#\(iteration) consumed \(consumed) of \(bytes.count)") }
                _ = try? BodyFramingRules.request(head)
            }
            if problems.count > 5 { break }
        }
        return problems
    }

    @Test("Mutated responses (10% of FUZZ_ITERATIONS): no crash, whole and split parsing agree")
    func mutatedResponses() async {
        let problems = await FuzzRun.offPool { Self.mutatedResponsesProblems() }
        #expect(problems.isEmpty, "\(problems); \(FuzzRun.reproduce)")
    }

    static func mutatedResponsesProblems() -> [String] {
        var rng = FuzzRun.generator(0x7570_7374_7265_616D)
        var problems: [String] = []
        for iteration in 0..<FuzzRun.iterations(share: 0.10) {
            let bytes = Mutator.mutate(Self.responseSeeds[iteration % Self.responseSeeds.count], using: &rng)
            let whole = HeadFeeding.whole(bytes, as: ResponseHeadParser.self)
            let offset = Int.random(in: 0...bytes.count, using: &rng)
            let split = HeadFeeding.split(bytes, at: offset, as: ResponseHeadParser.self)
            if split != whole { problems.append("#\(iteration) split at \(offset): \(split) vs \(whole) for \(bytes)") }
            if case .complete(let head, _) = whole {
                _ = try? BodyFramingRules.response(head, requestMethod: "GET")
            }
            if problems.count > 5 { break }
        }
        return problems
    }

    @Test("Mutated chunked bodies (20% of FUZZ_ITERATIONS): no crash, whole, split and byte-by-byte decoding agree")
    func mutatedChunkedBodies() async {
        let problems = await FuzzRun.offPool { Self.mutatedChunkedBodiesProblems() }
        #expect(problems.isEmpty, "\(problems); \(FuzzRun.reproduce)")
    }

    static func mutatedChunkedBodiesProblems() -> [String] {
        var rng = FuzzRun.generator(0x6368_756E_6B65_6421)
        var problems: [String] = []
        for iteration in 0..<FuzzRun.iterations(share: 0.20) {
            let bytes = Mutator.mutate(Self.chunkedSeeds[iteration % Self.chunkedSeeds.count], using: &rng)
            let whole = ChunkedFeeding.whole(bytes)
            let offset = Int.random(in: 0...bytes.count, using: &rng)
            let split = ChunkedFeeding.split(bytes, at: offset)
            if split != whole { problems.append("#\(iteration) split at \(offset): \(split) vs \(whole) for \(bytes)") }
            if iteration % 10 == 0 {
                let perByte = ChunkedFeeding.byteByByte(bytes)
                if perByte != whole { problems.append("#\(iteration) byte by byte: \(perByte) vs \(whole)") }
            }
            if problems.count > 5 { break }
        }
        return problems
    }
}
