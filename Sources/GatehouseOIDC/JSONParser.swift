/// Why a text is not a JSON value the gateway accepts.
public struct JSONParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Byte offset where the text stopped making sense.
    public let offset: Int
    public let reason: String

    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

extension JSONValue {
    /// Deepest nesting accepted: tokens, provider documents and key sets nest three or four levels;
    /// a deeper text is refused instead of recursing on an attacker's brackets.
    public static let maximumDepth = 64

    /// Parses one JSON text (RFC 8259) in a single pass over its UTF-8 bytes, without `Codable`:
    /// token responses, JWT headers and claims, UserInfo answers and key sets are read on every
    /// login, and `JSONDecoder` trying each kind in turn cost about 7 % of a login's CPU.
    ///
    /// Stricter than the RFC requires, where a lenient reading would be ambiguous: a name repeated
    /// in one object is refused (RFC 7519 §4 lets a JWT parser refuse it; "last one wins" would let a
    /// signed text mean two things), as are invalid UTF-8, unpaired surrogate escapes, a byte-order
    /// mark, nesting deeper than `maximumDepth` and anything but whitespace after the value.
    public static func parse<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(JSONParseError) -> JSONValue {
        let parsed: Result<JSONValue, JSONParseError>? = bytes.withContiguousStorageIfAvailable { buffer in
            var parser = JSONParser(buffer)
            do throws(JSONParseError) { return .success(try parser.document()) } catch { return .failure(error) }
        }
        if let parsed { return try parsed.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBufferPointer { buffer throws(JSONParseError) in
            var parser = JSONParser(buffer)
            return try parser.document()
        }
    }
}

/// The recursive-descent reader behind `JSONValue.parse`.
struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func document() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        let value = try self.value()
        skipWhitespace()
        guard index == bytes.count else { throw fail("text after the value") }
        return value
    }

    private func fail(_ reason: String) -> JSONParseError { JSONParseError(offset: index, reason: reason) }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func value() throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw fail("a value was expected") }
        switch bytes[index] {
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw fail("a value was expected")
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw fail("unknown literal") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw fail("unknown literal")
        }
        index += count
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        guard depth <= JSONValue.maximumDepth else { throw fail("nested deeper than \(JSONValue.maximumDepth) levels") }
    }

    private mutating func object() throws(JSONParseError) -> JSONValue {
        try enter()
        index += 1
        var members: [String: JSONValue] = [:]
        if leavesEmpty(closing: "}") { return .object(members) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("a member name was expected") }
            let nameOffset = index
            let name = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("':' was expected") }
            index += 1
            skipWhitespace()
            let member = try value()
            guard members.updateValue(member, forKey: name) == nil else {
                throw JSONParseError(offset: nameOffset, reason: "the name \"\(name.prefix(40))\" is repeated")
            }
            if try leaves(closing: "}", of: "object") { return .object(members) }
        }
    }

    private mutating func array() throws(JSONParseError) -> JSONValue {
        try enter()
        index += 1
        var elements: [JSONValue] = []
        if leavesEmpty(closing: "]") { return .array(elements) }
        while true {
            skipWhitespace()
            elements.append(try value())
            if try leaves(closing: "]", of: "array") { return .array(elements) }
        }
    }

    /// At the start of an object or array: true (and the container left) when it closes at once.
    private mutating func leavesEmpty(closing: Unicode.Scalar) -> Bool {
        skipWhitespace()
        guard index < bytes.count && bytes[index] == UInt8(ascii: closing) else { return false }
        index += 1
        depth -= 1
        return true
    }

    /// After a member or an element: false when a `,` announces another, true (and the container
    /// left) at the closing byte.
    private mutating func leaves(closing: Unicode.Scalar, of container: String) throws(JSONParseError) -> Bool {
        skipWhitespace()
        guard index < bytes.count else { throw fail("unterminated \(container)") }
        if bytes[index] == UInt8(ascii: ",") {
            index += 1
            return false
        }
        guard bytes[index] == UInt8(ascii: closing) else { throw fail("',' or '\(closing)' was expected") }
        index += 1
        depth -= 1
        return true
    }

    /// A string from its opening quote. Runs without escapes are taken as they are (validated
    /// UTF-8); escapes are decoded into a byte buffer only when one occurs.
    private mutating func string() throws(JSONParseError) -> String {
        index += 1
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let run = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return try validated(run, at: start)
            }
            if byte == UInt8(ascii: "\\") { return try escapedString(from: start) }
            if byte < 0x20 { throw fail("a control character in a string") }
            index += 1
        }
        throw fail("unterminated string")
    }

    private mutating func escapedString(from start: Int) throws(JSONParseError) -> String {
        var decoded = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return try decoded.withUnsafeBufferPointer { buffer throws(JSONParseError) in try validated(buffer, at: start) }
            }
            if byte < 0x20 { throw fail("a control character in a string") }
            guard byte == UInt8(ascii: "\\") else {
                decoded.append(byte)
                index += 1
                continue
            }
            index += 1
            guard index < bytes.count else { throw fail("unterminated escape") }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
            case UInt8(ascii: "b"): decoded.append(0x08)
            case UInt8(ascii: "f"): decoded.append(0x0C)
            case UInt8(ascii: "n"): decoded.append(0x0A)
            case UInt8(ascii: "r"): decoded.append(0x0D)
            case UInt8(ascii: "t"): decoded.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = UInt32(try hex4())
                if (0xD800...0xDBFF).contains(scalar) {
                    guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw fail("an unpaired surrogate escape")
                    }
                    index += 2
                    let low = UInt32(try hex4())
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("an unpaired surrogate escape") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw fail("an unpaired surrogate escape")
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw fail("an invalid escape") }
                decoded.append(contentsOf: String(Character(unicode)).utf8)
            default:
                throw fail("an invalid escape")
            }
        }
        throw fail("unterminated string")
    }

    private mutating func hex4() throws(JSONParseError) -> UInt16 {
        guard bytes.count - index >= 4 else { throw fail("a short \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("a non-hex digit in a \\u escape")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    private func validated(_ run: UnsafeBufferPointer<UInt8>, at offset: Int) throws(JSONParseError) -> String {
        guard let text = String(validating: run, as: UTF8.self) else {
            throw JSONParseError(offset: offset, reason: "a string that is not UTF-8")
        }
        return text
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, checked before conversion (Swift's
    /// `Double(_:)` would also take `inf`, `nan` and hexadecimal).
    private mutating func number() throws(JSONParseError) -> Double {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw fail("a digit was expected") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("a digit was expected after '.'") }
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            index += 1
            if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("a digit was expected in the exponent") }
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let number = Double(text), number.isFinite else {
            throw JSONParseError(offset: start, reason: "a number out of range")
        }
        return number
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}
