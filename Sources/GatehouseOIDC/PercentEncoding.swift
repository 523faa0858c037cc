/// Percent-encoding for URL queries (RFC 3986) and form bodies (application/x-www-form-urlencoded).
public enum PercentEncoding {
    /// RFC 3986 §2.3 unreserved: `ALPHA / DIGIT / "-" / "." / "_" / "~"`.
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

    private static let hex = Array("0123456789ABCDEF".utf8)

    private static func encode(_ string: String, spaceAsPlus: Bool) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(string.utf8.count)
        for byte in string.utf8 {
            if isUnreserved(byte) {
                output.append(byte)
            } else if spaceAsPlus && byte == UInt8(ascii: " ") {
                output.append(UInt8(ascii: "+"))
            } else {
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
