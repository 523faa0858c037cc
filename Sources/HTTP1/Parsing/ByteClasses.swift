/// Byte classes of the HTTP grammar (RFC 9110 §5.6, RFC 5234 Appendix B.1).
enum ASCII {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A
    static let semicolon: UInt8 = 0x3B
    static let comma: UInt8 = 0x2C
    static let slash: UInt8 = 0x2F
    static let dot: UInt8 = 0x2E
    static let star: UInt8 = 0x2A
    static let crlf: [UInt8] = [0x0D, 0x0A]

    /// `tchar`: the bytes of a token (methods, field names, transfer codings).
    @inline(__always)
    static func isTokenChar(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true  // DIGIT / ALPHA
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: true
        default: false
        }
    }

    /// SP / HTAB: optional whitespace (OWS) around values.
    @inline(__always)
    static func isWhitespace(_ b: UInt8) -> Bool { b == space || b == tab }

    /// VCHAR: visible ASCII, the only bytes a request-target may hold.
    @inline(__always)
    static func isVisible(_ b: UInt8) -> Bool { b >= 0x21 && b <= 0x7E }

    /// Visible ASCII that RFC 3986 does not allow in a path: `"`, `#`, `<`, `>`, `\`, `^`, `` ` ``,
    /// `{`, `|`, `}` (bit b of the pair for byte b < 128).
    @inline(__always)
    static func isExcludedFromPath(_ b: UInt8) -> Bool {
        let low: UInt64 = 1 << 0x22 | 1 << 0x23 | 1 << 0x3C | 1 << 0x3E
        let high: UInt64 = 1 << (0x5C - 64) | 1 << (0x5E - 64) | 1 << (0x60 - 64) | 1 << (0x7B - 64) | 1 << (0x7C - 64)
            | 1 << (0x7D - 64)
        guard b < 128 else { return false }
        return (b < 64 ? low : high) >> (b & 63) & 1 == 1
    }

    /// Bytes of a field value (and reason phrase): VCHAR, obs-text, SP, HTAB. Everything else is a
    /// control character, DEL or NUL, which RFC 9110 §5.5 lets a recipient reject.
    @inline(__always)
    static func isFieldValueChar(_ b: UInt8) -> Bool { b >= 0x20 ? b != 0x7F : b == tab }

    @inline(__always)
    static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    /// The value of a hexadecimal digit, or nil.
    @inline(__always)
    static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: Int(b - 0x30)
        case 0x41...0x46: Int(b - 0x41 + 10)
        case 0x61...0x66: Int(b - 0x61 + 10)
        default: nil
        }
    }
}

/// Framing values above this are refused: 2^53 is far beyond any body we accept and stays exact in a
/// Double, so no arithmetic on it can overflow.
let maxFramingLength = 1 << 53
