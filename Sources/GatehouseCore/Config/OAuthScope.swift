/// RFC 6749 §3.3: `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`.
enum OAuthScope {
    /// True when `token` is one non-empty scope-token (no spaces, quotes or backslashes).
    static func isValidToken(_ token: Substring) -> Bool {
        !token.isEmpty && token.utf8.allSatisfy { $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }
    }
}
