/// Unpadded base64url (RFC 4648 §5), as JWS (RFC 7515 §2), PKCE (RFC 7636 §3) and the session
/// cookie use it. Decoding is strict: padding, foreign characters, an impossible length and
/// non-canonical trailing bits are refused, so each byte string has exactly one accepted encoding.
///
/// `@inlinable` because the session cookie is decoded on every proxied request.
public enum Base64URL {
    /// Encodes bytes as base64url with no `=` padding.
    ///
    /// For example: `Base64URL.encode([0xfb, 0xff])` is `"-_8"`.
    @inlinable
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Base64Alphabet.encode(bytes, alphabet: Base64Alphabet.urlSafe, padding: false)
    }

    /// Appends the base64url of `bytes` to `output` (a JWS written as bytes, without a String per part).
    @inlinable
    public static func append(_ bytes: some Sequence<UInt8>, to output: inout [UInt8]) {
        Base64Alphabet.append(bytes, alphabet: Base64Alphabet.urlSafe, padding: false, to: &output)
    }

    /// Decodes unpadded base64url; nil for anything but its canonical form.
    @inlinable
    public static func decode(_ string: some StringProtocol) -> [UInt8]? {
        Base64Alphabet.decode(string.utf8, acceptsStandard: false, acceptsURLSafe: true)
    }

    /// Decodes unpadded base64url bytes; nil for anything but their canonical form.
    @inlinable
    public static func decode(_ bytes: some Collection<UInt8>) -> [UInt8]? {
        Base64Alphabet.decode(bytes, acceptsStandard: false, acceptsURLSafe: true)
    }
}

/// Base64 (RFC 4648 §4) for keys given in the environment: padding is optional, and the URL-safe
/// alphabet of §5 is accepted as well; whitespace, stray characters and non-zero trailing bits are
/// refused rather than silently skipped.
public enum Base64 {
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var bytes = Array(text.utf8)
        let total = bytes.count
        while bytes.last == UInt8(ascii: "=") { bytes.removeLast() }
        let padding = total - bytes.count
        guard padding <= 2, padding == 0 || total % 4 == 0 else { return nil }
        return Base64Alphabet.decode(bytes, acceptsStandard: true, acceptsURLSafe: true)
    }

    /// Standard base64 with padding.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Base64Alphabet.encode(bytes, alphabet: Base64Alphabet.standard, padding: true)
    }
}

/// The shared bit-shuffling of ``Base64URL`` and ``Base64``.
@usableFromInline
enum Base64Alphabet {
    @usableFromInline static let standard: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    @usableFromInline static let urlSafe: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    @inlinable
    static func encode(_ bytes: some Sequence<UInt8>, alphabet: [UInt8], padding: Bool) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.underestimatedCount + 2) / 3 * 4)
        append(bytes, alphabet: alphabet, padding: padding, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    @inlinable
    static func append(_ bytes: some Sequence<UInt8>, alphabet: [UInt8], padding: Bool, to output: inout [UInt8]) {
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = iterator.next()
            output.append(alphabet[Int(first >> 2)])
            output.append(alphabet[Int((first & 0x03) << 4 | (second ?? 0) >> 4)])
            guard let second else {
                if padding { output += [UInt8(ascii: "="), UInt8(ascii: "=")] }
                break
            }
            output.append(alphabet[Int((second & 0x0f) << 2 | (third ?? 0) >> 6)])
            guard let third else {
                if padding { output.append(UInt8(ascii: "=")) }
                break
            }
            output.append(alphabet[Int(third & 0x3f)])
        }
    }

    /// Decodes unpadded input; nil for a foreign character, an impossible length or non-zero
    /// trailing bits.
    @inlinable
    static func decode(_ input: some Collection<UInt8>, acceptsStandard: Bool, acceptsURLSafe: Bool) -> [UInt8]? {
        guard input.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits: UInt32 = 0
        for character in input {
            let value: UInt8
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = character &- UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = character &- UInt8(ascii: "a") &+ 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character &- UInt8(ascii: "0") &+ 52
            case UInt8(ascii: "-") where acceptsURLSafe, UInt8(ascii: "+") where acceptsStandard: value = 62
            case UInt8(ascii: "_") where acceptsURLSafe, UInt8(ascii: "/") where acceptsStandard: value = 63
            default: return nil
            }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> bits))
                accumulator &= (1 << bits) - 1
            }
        }
        // Leftover bits must be zero, or two strings would decode to the same bytes.
        guard accumulator == 0 else { return nil }
        return output
    }
}
