/// Hexadecimal digits: lowercase encoding (hashes stored in the database) and decoding of one digit
/// of either case (percent escapes).
public enum Hex {
    @usableFromInline static let lowercaseDigits: [UInt8] = Array("0123456789abcdef".utf8)
    @usableFromInline static let uppercaseDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Lowercase hex of `bytes`.
    ///
    /// For example: `Hex.encode([0x0f, 0xa0])` is `"0fa0"`.
    @inlinable
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            output.append(lowercaseDigits[Int(byte >> 4)])
            output.append(lowercaseDigits[Int(byte & 0x0f)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The value of one hex digit (`0-9`, `a-f`, `A-F`), nil for anything else.
    @inlinable
    public static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit &- UInt8(ascii: "A") &+ 10
        default: nil
        }
    }
}
