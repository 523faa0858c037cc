/// What a `Range` header asks of a representation of `length` bytes (RFC 9110 §14).
enum RangeRequest: Equatable, Sendable {
    /// No usable range: answer the whole representation with `200`. Covers a missing header, another
    /// unit, syntax errors and multiple ranges (a server may ignore a `Range` it does not support).
    case whole
    /// One satisfiable range, clamped to the length: answer `206`.
    case partial(Range<Int>)
    /// A well-formed range that lies outside the representation: answer `416`.
    case unsatisfiable

    /// Reads `bytes=a-b`, `bytes=a-` and `bytes=-n`.
    static func parse(_ value: String, length: Int) -> RangeRequest {
        let trimmed = value.trimmingASCIIWhitespace()
        guard trimmed.count > 6, trimmed.prefix(6).lowercased() == "bytes=" else { return .whole }
        let spec = trimmed.dropFirst(6).trimmingASCIIWhitespace()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash].trimmingASCIIWhitespace()
        let last = spec[spec.index(after: dash)...].trimmingASCIIWhitespace()

        if first.isEmpty {
            // suffix-range: the last n bytes.
            guard let suffix = position(last) else { return .whole }
            guard suffix > 0, length > 0 else { return .unsatisfiable }
            let count = min(suffix, length)
            return .partial((length - count)..<length)
        }
        guard let start = position(first) else { return .whole }
        var end = length - 1
        if !last.isEmpty {
            guard let lastPosition = position(last) else { return .whole }
            guard lastPosition >= start else { return .whole }  // invalid: ignore the field
            end = min(lastPosition, length - 1)
        }
        guard start < length else { return .unsatisfiable }
        return .partial(start..<(end + 1))
    }

    /// A byte position: digits only. A number too large for `Int` saturates, so `bytes=99999999999999999999-`
    /// is unsatisfiable rather than a crash or a silent whole answer.
    private static func position(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int(text) ?? Int.max
    }
}
