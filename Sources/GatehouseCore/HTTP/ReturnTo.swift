import GatehouseEncoding
/// Validation of the `returnTo` parameter of `/login`: only a local absolute path, so the login
/// flow can never be turned into an open redirector (RFC 9700 §4.11).
public enum ReturnTo {
    public static let maxLength = 2048

    /// - Parameter raw: the query parameter, already percent-decoded once (nil when absent).
    /// - Returns: `/` for nil; the path itself when it is a safe local path; nil when it must be
    ///   refused (answer `400`, never redirect).
    ///
    /// Safe means: starts with `/`; the second character is neither `/` nor `\`; only URI
    /// characters (no spaces, controls or raw non-ASCII); no `\` anywhere; no `//` anywhere; and
    /// the same after further percent-decoding (`/%2f%2fevil.com`, `/%5cevil`, `/%09/evil`).
    public static func validate(_ raw: String?) -> String? {
        guard let raw else { return "/" }
        guard !raw.isEmpty, raw.utf8.count <= maxLength else { return nil }
        var current = Array(raw.utf8)
        guard current.allSatisfy(isAllowed), PercentEncoding.isWellFormed(raw) else { return nil }
        // Check the text as given and after each round of decoding, until decoding changes
        // nothing: whichever layer a later hop decodes, it is still a local path.
        for _ in 0..<4 {
            guard isLocalPath(current) else { return nil }
            guard current.contains(UInt8(ascii: "%")) else { return raw }
            guard let decoded = PercentEncoding.decode(String(decoding: current, as: UTF8.self)) else {
                // A layer below the first that is not valid percent-encoding is just data.
                return raw
            }
            if decoded == current { return raw }
            current = decoded
        }
        // Still changing after several rounds: someone is layering encodings; refuse.
        return nil
    }

    /// As above, and also an absolute URL on one of `allowedOrigins` (`GATEHOUSE_CORS_ORIGINS`:
    /// an SPA served from another origin returns there after login), written in its serialized
    /// form: no user information, no `\`, controls or spaces, the origin exactly as listed.
    public static func validate(_ raw: String?, allowedOrigins: [String]) -> String? {
        if let local = validate(raw) { return local }
        guard let raw, !allowedOrigins.isEmpty, raw.utf8.count <= maxLength,
              raw.utf8.allSatisfy(isAllowed),
              PercentEncoding.isWellFormed(raw),
              let url = try? AbsoluteURL(parsing: raw), !url.hasUserInfo,
              allowedOrigins.contains(url.origin) else { return nil }
        // The origin as written must be the serialized one (`https://APP.example.com:443` is refused):
        // then what follows it is a path the local rules check.
        guard raw.hasPrefix(url.origin) else { return nil }
        let rest = String(raw.dropFirst(url.origin.utf8.count))
        if rest.isEmpty { return raw }
        return validate(rest) == nil ? nil : raw
    }

    private static func isLocalPath(_ b: [UInt8]) -> Bool {
        guard b.first == UInt8(ascii: "/") else { return false }
        if b.count > 1, b[1] == UInt8(ascii: "/") || b[1] == UInt8(ascii: "\\") { return false }
        for (i, c) in b.enumerated() {
            if c < 0x20 || c == 0x7F || c == UInt8(ascii: "\\") { return false }
            if c == UInt8(ascii: "/"), i + 1 < b.count, b[i + 1] == UInt8(ascii: "/") { return false }
        }
        return true
    }

    /// RFC 3986 characters allowed in a path, query and fragment, plus `%` for escapes.
    private static func isAllowed(_ b: UInt8) -> Bool {
        URLBytes.isPathChar(b) || b == UInt8(ascii: "/") || b == UInt8(ascii: "?") || b == UInt8(ascii: "#")
            || b == UInt8(ascii: "%")
    }
}
