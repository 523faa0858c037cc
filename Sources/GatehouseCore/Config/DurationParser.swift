/// Parses configuration durations: `90s`, `30m`, `8h`, `14d`, or a plain number of seconds.
///
/// Units are case-insensitive, surrounding whitespace is ignored, and the arithmetic cannot
/// overflow (a too-large value is an error, not a trap). Zero parses; callers that need a
/// positive value check that themselves.
///
/// For example: `try DurationParser.seconds("30m") == 1800`.
public enum DurationParser {
    public typealias ParseError = QuantityParseError

    /// The number of seconds `text` denotes.
    /// - Throws: ``ParseError``.
    public static func seconds(_ text: String) throws(ParseError) -> Int {
        try SuffixedNumber.parse(text, units: ["s": 1, "m": 60, "h": 3_600, "d": 86_400])
    }
}

/// Parses byte sizes: plain bytes, or a number with a binary suffix `k`, `m`, `g`
/// (KiB, MiB, GiB; case-insensitive). Overflow is an error, never a trap.
///
/// For example: `try ByteSizeParser.bytes("10m") == 10_485_760`.
public enum ByteSizeParser {
    public typealias ParseError = QuantityParseError

    public static func bytes(_ text: String) throws(ParseError) -> Int {
        try SuffixedNumber.parse(text, units: ["k": 1 << 10, "m": 1 << 20, "g": 1 << 30])
    }
}

/// Why a configured quantity (a duration, a byte size) was refused.
public enum QuantityParseError: Error, Equatable, Sendable {
    case empty
    case invalid
    case tooLarge
}

/// A decimal number with an optional one-letter unit suffix (case-insensitive) that multiplies it;
/// surrounding whitespace is ignored, overflow is an error.
enum SuffixedNumber {
    static func parse(_ text: String, units: [Character: Int]) throws(QuantityParseError) -> Int {
        let trimmed = text.trimmingConfigurationWhitespace()
        guard !trimmed.isEmpty else { throw .empty }
        var digits = trimmed
        var multiplier = 1
        if let last = trimmed.last, !last.isASCIIDigit {
            guard let unit = units[Character(last.lowercased())] else { throw .invalid }
            multiplier = unit
            digits = trimmed.dropLast()
        }
        let value = try UnsignedDecimal.parse(digits, invalid: QuantityParseError.invalid, tooLarge: .tooLarge)
        let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
        guard !overflow else { throw .tooLarge }
        return product
    }
}

/// ASCII decimal digits only: no sign, no spaces, no `_`, no other numerals (`Int("٣")` is nil,
/// but being explicit keeps the accepted grammar obvious).
enum UnsignedDecimal {
    static func parse<E: Error>(_ text: Substring, invalid: E, tooLarge: E) throws(E) -> Int {
        guard !text.isEmpty, text.utf8.allSatisfy(URLBytes.isDigit) else { throw invalid }
        var value = 0
        for b in text.utf8 {
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (a, o2) = m.addingReportingOverflow(Int(b - 0x30))
            guard !o1, !o2 else { throw tooLarge }
            value = a
        }
        return value
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && ("0"..."9").contains(self) }
}

extension StringProtocol {
    /// Trims spaces, tabs, CR and LF (what shells and `.env` files leave around values).
    func trimmingConfigurationWhitespace() -> Substring {
        let s = self[...]
        func ws(_ c: Character) -> Bool { c == " " || c == "\t" || c == "\r" || c == "\n" || c == "\r\n" }
        var start = s.startIndex, end = s.endIndex
        while start < end, ws(s[start]) { start = s.index(after: start) }
        while end > start, ws(s[s.index(before: end)]) { end = s.index(before: end) }
        return Substring(s[start..<end])
    }
}
