/// Percent-encoding (RFC 3986 §2.1) for URL queries, paths and form bodies
/// (application/x-www-form-urlencoded), without Foundation. Decoding refuses malformed escapes
/// instead of guessing: `%zz` or a lone `%` is an error, never passed through.
public enum PercentEncoding {
    // MARK: Encoding

    /// RFC 3986 §2.3 unreserved: `ALPHA / DIGIT / "-" / "." / "_" / "~"`.
    @inlinable
    public static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    /// A query name or value: everything but unreserved characters is `%XX` (space is `%20`).
    public static func encodeQueryComponent(_ string: String) -> String {
        encode(string, spaceAsPlus: false)
    }

    /// A form field name or value (WHATWG URL §5.2, as RFC 6749 Appendix B requires): space is `+`,
    /// everything but unreserved characters is `%XX`.
    public static func encodeFormComponent(_ string: String) -> String {
        encode(string, spaceAsPlus: true)
    }

    /// `name=value&…` with ``encodeQueryComponent(_:)``.
    public static func query(_ parameters: [(String, String)]) -> String {
        parameters.map { encodeQueryComponent($0.0) + "=" + encodeQueryComponent($0.1) }.joined(separator: "&")
    }

    /// `name=value&…` with ``encodeFormComponent(_:)``, as bytes for a request body.
    public static func formBody(_ parameters: [(String, String)]) -> [UInt8] {
        Array(parameters.map { encodeFormComponent($0.0) + "=" + encodeFormComponent($0.1) }
            .joined(separator: "&").utf8)
    }

    /// Appends query parameters to a URL that may already carry a query (RFC 6749 §3.1: the
    /// endpoint's own query "MUST be retained"). The URL must have no fragment.
    public static func appendingQuery(_ parameters: [(String, String)], to url: String) -> String {
        guard !parameters.isEmpty else { return url }
        let query = query(parameters)
        guard url.contains("?") else { return url + "?" + query }
        if url.hasSuffix("?") || url.hasSuffix("&") { return url + query }
        return url + "&" + query
    }

    private static func encode(_ string: String, spaceAsPlus: Bool) -> String {
        // Written straight into the new string (at most three bytes per byte): a login encodes a
        // few hundred bytes of parameters, and an array per escape cost more than the rest.
        var string = string
        return string.withUTF8 { bytes in
            String(unsafeUninitializedCapacity: bytes.count * 3) { output in
                var count = 0
                for byte in bytes {
                    if isUnreserved(byte) {
                        output[count] = byte
                        count += 1
                    } else if spaceAsPlus && byte == UInt8(ascii: " ") {
                        output[count] = UInt8(ascii: "+")
                        count += 1
                    } else {
                        output[count] = UInt8(ascii: "%")
                        output[count + 1] = Hex.uppercaseDigits[Int(byte >> 4)]
                        output[count + 2] = Hex.uppercaseDigits[Int(byte & 0x0f)]
                        count += 3
                    }
                }
                return count
            }
        }
    }

    // MARK: Decoding

    /// True when every `%` starts a `%XX` escape.
    public static func isWellFormed(_ text: some StringProtocol) -> Bool {
        isWellFormed(bytes: text.utf8)
    }

    /// True when every `%` in `bytes` starts a `%XX` escape.
    @inlinable
    public static func isWellFormed(bytes: some Collection<UInt8>) -> Bool {
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if bytes[index] == UInt8(ascii: "%") {
                guard escapedByte(in: bytes, at: &index) != nil else { return false }
            } else {
                bytes.formIndex(after: &index)
            }
        }
        return true
    }

    /// Decodes `%XX` escapes (and `+` as a space when `plusAsSpace`, as in form/query syntax; a
    /// path keeps `+`).
    /// - Returns: the decoded bytes, or nil when an escape is malformed.
    @inlinable
    public static func decode(bytes: some Collection<UInt8>, plusAsSpace: Bool = false) -> [UInt8]? {
        // Contiguous bytes (every native string's) are read through a buffer pointer: the
        // generic indexing of a `Substring.UTF8View` slice costs several times the decoding.
        if let decoded = bytes.withContiguousStorageIfAvailable({ decodeContiguous($0, plusAsSpace: plusAsSpace) }) {
            return decoded
        }
        return decodeContiguous(bytes, plusAsSpace: plusAsSpace)
    }

    @inlinable
    static func decodeContiguous(_ bytes: some Collection<UInt8>, plusAsSpace: Bool) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard let decoded = escapedByte(in: bytes, at: &index) else { return nil }
                output.append(decoded)
                continue
            }
            output.append(plusAsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            bytes.formIndex(after: &index)
        }
        return output
    }

    /// ``decode(bytes:plusAsSpace:)`` over the UTF-8 of `text`.
    public static func decode(_ text: some StringProtocol, plusAsSpace: Bool = false) -> [UInt8]? {
        decode(bytes: text.utf8, plusAsSpace: plusAsSpace)
    }

    /// Decodes to a String; nil when an escape is malformed or the result is not UTF-8.
    public static func decodeString(_ text: some StringProtocol, plusAsSpace: Bool = false) -> String? {
        decodeString(bytes: text.utf8, plusAsSpace: plusAsSpace)
    }

    /// As ``decodeString(_:plusAsSpace:)``, from UTF-8 bytes.
    public static func decodeString(bytes text: some Collection<UInt8>, plusAsSpace: Bool = false) -> String? {
        guard let bytes = decode(bytes: text, plusAsSpace: plusAsSpace) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The byte of the `%XX` escape starting at `index`, which then moves past it; nil (index
    /// unchanged) when the escape is cut short or not hex.
    @inlinable
    static func escapedByte<Bytes: Collection<UInt8>>(in bytes: Bytes, at index: inout Bytes.Index) -> UInt8? {
        let first = bytes.index(after: index)
        guard first != bytes.endIndex else { return nil }
        let second = bytes.index(after: first)
        guard second != bytes.endIndex, let high = Hex.value(of: bytes[first]), let low = Hex.value(of: bytes[second]) else {
            return nil
        }
        index = bytes.index(after: second)
        return high << 4 | low
    }
}
