import TestSupport
@testable import HTTP1


/// The three feeding strategies of picohttpparser's and NIO's tests.
enum HeadFeeding {
    /// The whole message in one call.
    static func whole<P: HeadParsing>(_ bytes: [UInt8], as _: P.Type, limits: HTTPParserLimits = .init()) -> HeadOutcome<P.Head> {
        var parser = P(limits: limits)
        return parser.outcome(bytes[...])
    }

    /// One parser, called with a buffer that grows one byte at a time until it answers.
    /// Returns the outcome and the buffer length at which it came.
    static func byteByByte<P: HeadParsing>(_ bytes: [UInt8], as _: P.Type,
                                           limits: HTTPParserLimits = .init()) -> (HeadOutcome<P.Head>, at: Int) {
        var parser = P(limits: limits)
        for length in 0...bytes.count {
            let result = parser.outcome(bytes[..<length])
            if !result.isIncomplete { return (result, length) }
        }
        return (.incomplete, bytes.count)
    }

    /// A fresh parser called with the first `offset` bytes, then (if still incomplete) with all of them.
    static func split<P: HeadParsing>(_ bytes: [UInt8], at offset: Int, as _: P.Type,
                                      limits: HTTPParserLimits = .init()) -> HeadOutcome<P.Head> {
        var parser = P(limits: limits)
        let first = parser.outcome(bytes[..<offset])
        if !first.isIncomplete { return first }
        return parser.outcome(bytes[...])
    }

    /// Runs all three and returns the problems found (empty when they agree): the whole answer must be
    /// reached by every strategy, and nothing may answer before the byte that decides it.
    static func disagreements<P: HeadParsing>(_ bytes: [UInt8], as type: P.Type,
                                              limits: HTTPParserLimits = .init()) -> [String] {
        var problems: [String] = []
        let expected = whole(bytes, as: type, limits: limits)
        let (perByte, decidedAt) = byteByByte(bytes, as: type, limits: limits)
        if perByte != expected { problems.append("byte by byte: \(perByte) at \(decidedAt), whole: \(expected)") }
        if case .complete(_, let consumed) = expected, decidedAt != consumed {
            problems.append("byte by byte completed at \(decidedAt), consumed \(consumed)")
        }
        for offset in 0...bytes.count {
            let result = split(bytes, at: offset, as: type, limits: limits)
            if result != expected { problems.append("split at \(offset): \(result), whole: \(expected)") }
            // A fresh parser on a prefix shorter than the deciding length must still be waiting.
            var fresh = P(limits: limits)
            let prefix = fresh.outcome(bytes[..<offset])
            if offset < decidedAt, !prefix.isIncomplete {
                problems.append("prefix of \(offset) answered \(prefix) before byte \(decidedAt)")
            }
            if problems.count > 5 { break }
        }
        return problems
    }
}

/// What a chunked decoder produced: the body, the bytes consumed, and whether it reached the end.
enum ChunkedOutcome: Equatable, Sendable {
    case decoded(body: [UInt8], consumed: Int, complete: Bool)
    case failed(HTTPParseError)
}

enum ChunkedFeeding {
    static func whole(_ bytes: [UInt8], limits: HTTPParserLimits = .init()) -> ChunkedOutcome {
        split(bytes, at: bytes.count, limits: limits)
    }

    /// Decodes `bytes[..<offset]`, then whatever the first call left.
    static func split(_ bytes: [UInt8], at offset: Int, limits: HTTPParserLimits = .init()) -> ChunkedOutcome {
        var decoder = ChunkedDecoder(limits: limits)
        var body: [UInt8] = []
        do {
            let first = try decode(&decoder, bytes[..<offset], into: &body)
            let second = try decode(&decoder, bytes[first...], into: &body)
            return .decoded(body: body, consumed: first + second, complete: decoder.isComplete)
        } catch {
            return .failed(error)
        }
    }

    /// One byte per call; bytes after completion are offered too and must be refused (0 consumed).
    static func byteByByte(_ bytes: [UInt8], limits: HTTPParserLimits = .init()) -> ChunkedOutcome {
        var decoder = ChunkedDecoder(limits: limits)
        var body: [UInt8] = []
        var consumed = 0
        do {
            for index in bytes.indices {
                let used = try decode(&decoder, bytes[index...index], into: &body)
                consumed += used
                if used == 0 { break }
            }
            return .decoded(body: body, consumed: consumed, complete: decoder.isComplete)
        } catch {
            return .failed(error)
        }
    }

    static func disagreements(_ bytes: [UInt8], limits: HTTPParserLimits = .init()) -> [String] {
        var problems: [String] = []
        let expected = whole(bytes, limits: limits)
        let perByte = byteByByte(bytes, limits: limits)
        if perByte != expected { problems.append("byte by byte: \(perByte), whole: \(expected)") }
        for offset in 0...bytes.count {
            let result = split(bytes, at: offset, limits: limits)
            if result != expected { problems.append("split at \(offset): \(result), whole: \(expected)") }
            if problems.count > 5 { break }
        }
        return problems
    }

    static func decode(_ decoder: inout ChunkedDecoder, _ slice: ArraySlice<UInt8>,
                               into body: inout [UInt8]) throws(HTTPParseError) -> Int {
        let result: Result<Int, HTTPParseError> = slice.withUnsafeBytes { raw in
            do throws(HTTPParseError) {
                return .success(try decoder.decode(raw) { piece in body.append(contentsOf: piece) })
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}
