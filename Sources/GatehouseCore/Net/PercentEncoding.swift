/// Percent-decoding (RFC 3986 §2.1) without Foundation, refusing malformed escapes instead of
/// guessing: `%zz` or a lone `%` is an error, never passed through.
public enum PercentEncoding {
    /// True when every `%` starts a `%XX` escape.
    public static func isWellFormed(_ text: some StringProtocol) -> Bool {
        let bytes = Array(text.utf8)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%") {
                guard i + 2 < bytes.count, URLBytes.isHex(bytes[i + 1]), URLBytes.isHex(bytes[i + 2]) else { return false }
                i += 3
            } else {
                i += 1
            }
        }
        return true
    }

    /// Decodes `%XX` escapes (and `+` as a space when `plusAsSpace`, as in form/query syntax).
    /// - Returns: the decoded bytes, or nil when an escape is malformed.
    public static func decode(_ text: some StringProtocol, plusAsSpace: Bool = false) -> [UInt8]? {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "%") {
                guard i + 2 < bytes.count, let hi = hexValue(bytes[i + 1]), let lo = hexValue(bytes[i + 2]) else { return nil }
                out.append(hi << 4 | lo)
                i += 3
            } else if plusAsSpace && b == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
                i += 1
            } else {
                out.append(b)
                i += 1
            }
        }
        return out
    }

    /// Decodes to a String; nil when an escape is malformed or the result is not UTF-8.
    public static func decodeString(_ text: some StringProtocol, plusAsSpace: Bool = false) -> String? {
        guard let bytes = decode(text, plusAsSpace: plusAsSpace) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: b - 0x30
        case 0x41...0x46: b - 0x41 + 10
        case 0x61...0x66: b - 0x61 + 10
        default: nil
        }
    }
}
