import GatehouseEncoding

/// Why a request path is refused before the file system is ever asked.
enum PathRefusal: Error, Equatable, Sendable {
    /// A `%` not followed by two hex digits, or escapes that decode to invalid UTF-8 (answer `400`).
    case malformedEncoding
    /// A path that would leave the public folder or hides in it: `..`, an encoded `/`, a `\`, NUL or
    /// another control character, a dot-file, or an over-long name (answer `404`, as if absent).
    case forbidden(reason: String)
}

/// A request path decoded into file-name segments that are safe to join under the public root.
///
/// The raw path is split on `/` **before** decoding, so `%2f` can never create a separator; then
/// every segment is percent-decoded and checked. `..` is refused rather than normalised (there is no
/// legitimate reason for a browser to send it: browsers resolve dot segments themselves), which also
/// covers its encoded spellings (`%2e%2e`, `.%2e`).
struct RequestPath: Equatable, Sendable {
    /// Decoded segments, without empty or `.` segments. Empty for `/`.
    var segments: [String]

    /// Longest raw path accepted; beyond it the answer is `404` (Linux `PATH_MAX` is 4096).
    static let maximumLength = 4096
    /// Longest single file name (`NAME_MAX`).
    static let maximumSegmentLength = 255

    static func parse(_ rawPath: Substring) throws(PathRefusal) -> RequestPath {
        let raw = Array(rawPath.utf8)
        guard raw.first == UInt8(ascii: "/") else { throw .malformedEncoding }
        guard raw.count <= maximumLength else { throw .forbidden(reason: "path too long") }
        var segments: [String] = []
        // Segments are walked in place (empty ones skipped) and only those with a `%` are decoded
        // into new bytes: this runs on every static request.
        var start = 0
        while start < raw.count {
            let end = raw[start...].firstIndex(of: UInt8(ascii: "/")) ?? raw.count
            defer { start = end + 1 }
            guard end > start else { continue }
            let rawSegment = raw[start..<end]
            let bytes: ArraySlice<UInt8>
            if rawSegment.contains(UInt8(ascii: "%")) { bytes = try decode(rawSegment)[...] } else { bytes = rawSegment }
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "/"): throw .forbidden(reason: "encoded slash")
                case UInt8(ascii: "\\"): throw .forbidden(reason: "backslash")
                case 0: throw .forbidden(reason: "NUL byte")
                case ..<0x20, 0x7F: throw .forbidden(reason: "control character")
                default: continue
                }
            }
            guard let segment = String(validating: bytes, as: UTF8.self) else { throw .malformedEncoding }
            if segment == "." { continue }
            if segment == ".." { throw .forbidden(reason: "dot-dot segment") }
            // Dot-files (.git, .env, .DS_Store) are never part of an SPA; `.well-known` is the exception.
            if segment.hasPrefix(".") && segment != ".well-known" { throw .forbidden(reason: "dot-file") }
            guard bytes.count <= maximumSegmentLength else { throw .forbidden(reason: "name too long") }
            segments.append(segment)
        }
        return RequestPath(segments: segments)
    }

    /// Percent-decodes one segment (RFC 3986 §2.1). `+` stays `+`: it means space only in forms.
    private static func decode(_ raw: ArraySlice<UInt8>) throws(PathRefusal) -> [UInt8] {
        guard let decoded = PercentEncoding.decode(bytes: raw) else { throw .malformedEncoding }
        return decoded
    }
}
