/// RFC 9110 §5.6.2 `token`: what a header field name or a cookie name (RFC 6265 §4.1.1) may be.
public enum HTTPToken {
    public static func isValid(_ text: some StringProtocol) -> Bool {
        !text.utf8.isEmpty && text.utf8.allSatisfy(isTChar)
    }

    static func isTChar(_ b: UInt8) -> Bool {
        if URLBytes.isAlpha(b) || URLBytes.isDigit(b) { return true }
        switch b {
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): return true
        default: return false
        }
    }
}
