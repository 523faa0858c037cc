/// Writes claims as `JSONEncoder` does with `[.sortedKeys, .withoutEscapingSlashes]`, byte for byte,
/// without its generic `Encodable` machinery (about a tenth of a login's CPU, for one claims
/// object). The bytes are observable: `/user` returns the stored claims as they were written.
///
/// `JSONEncoder`'s output, as this writer reproduces it: keys sorted by their UTF-8 bytes; strings
/// with `"` and `\` escaped, `\b \t \n \f \r` for those controls and `\u00xx` (lowercase hex) for the
/// other bytes below 0x20, everything else (`/`, DEL, non-ASCII) as it is; integral numbers as
/// integers. A number it does not write the same way for sure (a fraction, `-0`, a magnitude of
/// 10^15 or more) makes it answer nil, and the caller uses `JSONEncoder`.
public enum JSONValueWriter {
    /// The object's JSON, or nil when it holds a number this writer leaves to `JSONEncoder`.
    public static func sortedKeys(_ object: [String: JSONValue]) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        return write(object, to: &out) ? out : nil
    }

    private static func write(_ value: JSONValue, to out: inout [UInt8]) -> Bool {
        switch value {
        case .string(let text): writeString(text, to: &out)
        case .number(let number):
            guard number.isFinite, number == number.rounded(), abs(number) < 1e15,
                  !(number == 0 && number.sign == .minus) else { return false }
            out.append(contentsOf: String(Int64(number)).utf8)
        case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .null: out.append(contentsOf: "null".utf8)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                guard write(item, to: &out) else { return false }
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            return write(members, to: &out)
        }
        return true
    }

    private static func write(_ object: [String: JSONValue], to out: inout [UInt8]) -> Bool {
        out.append(UInt8(ascii: "{"))
        let sorted = object.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        for (index, member) in sorted.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            writeString(member.key, to: &out)
            out.append(UInt8(ascii: ":"))
            guard write(member.value, to: &out) else { return false }
        }
        out.append(UInt8(ascii: "}"))
        return true
    }

    /// `text` as a JSON string, escaped as the claims writer escapes it.
    public static func quoted(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + 2)
        writeString(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    private static func writeString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x00..<0x20:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                        hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
