#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import GatehouseEncoding

/// A strictly parsed absolute `http(s)` URL, as operators write them in configuration.
///
/// Deliberately narrower than RFC 3986: no user information, an ASCII host (a DNS name, an IPv4
/// literal or a bracketed IPv6 literal), an optional numeric port, then path, query and fragment.
/// Anything ambiguous is refused, because these URLs decide where tokens are sent.
///
/// For example: `try AbsoluteURL(parsing: "https://idp.example.com:8443/realms/a")`.
public struct AbsoluteURL: Sendable, Equatable, CustomStringConvertible {
    /// Lowercased scheme (`http` or `https` for every URL Gatehouse accepts).
    public var scheme: String
    /// Lowercased host without brackets: `example.com`, `127.0.0.1`, `::1`.
    public var host: String
    /// True when the host was written as a bracketed IPv6 literal.
    public var isIPv6Literal: Bool
    /// The port written in the URL, nil when absent.
    public var explicitPort: Int?
    /// The path exactly as written (still percent-encoded); empty when absent.
    public var path: String
    public var query: String?
    public var fragment: String?
    /// True when the text contained `user@` before the host.
    public var hasUserInfo: Bool

    public var isHTTPS: Bool { scheme == "https" }

    /// The port to connect to: the explicit one or the scheme's default.
    public var port: Int { explicitPort ?? (scheme == "https" ? 443 : 80) }

    /// `host[:port]` as it belongs in a `Host` header, the default port left out.
    public var authority: String {
        let h = isIPv6Literal ? "[\(host)]" : host
        if let p = explicitPort, p != (scheme == "https" ? 443 : 80) { return "\(h):\(p)" }
        return h
    }

    /// The serialized origin (RFC 6454): `scheme://host[:port]`, no trailing slash.
    public var origin: String { "\(scheme)://\(authority)" }

    /// True for `localhost`, `127.0.0.0/8` and `::1`: the hosts that may use plain `http`
    /// (`LoopbackHost`, the one loopback rule of the gateway).
    public var isLoopbackHost: Bool { LoopbackHost.contains(host) }

    public var description: String {
        var s = origin + path
        if let query { s += "?" + query }
        if let fragment { s += "#" + fragment }
        return s
    }

    /// Why a URL was refused; `description` is phrased for an operator.
    public enum ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        case notAbsolute
        case unsupportedScheme(String)
        case invalidCharacter
        case emptyHost
        case invalidHost
        case invalidPort
        case invalidPercentEncoding

        public var description: String {
            switch self {
            case .notAbsolute: "is not an absolute URL (expected scheme://host[:port][/path])"
            case .unsupportedScheme(let s): "has scheme \"\(s)\"; only http and https are supported"
            case .invalidCharacter: "contains whitespace, control or non-ASCII characters"
            case .emptyHost: "has no host"
            case .invalidHost: "has an invalid host"
            case .invalidPort: "has an invalid port (1-65535)"
            case .invalidPercentEncoding: "has a malformed percent-encoding"
            }
        }
    }

    /// Parses `text`; only `http` and `https` are accepted.
    /// - Throws: ``ParseError`` naming the first problem.
    public init(parsing text: String) throws(ParseError) {
        let bytes = Array(text.utf8)
        for b in bytes where b <= 0x20 || b >= 0x7F { throw .invalidCharacter }
        guard let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") else { throw .notAbsolute }
        let rawScheme = String(text[..<colon])
        guard !rawScheme.isEmpty, rawScheme.utf8.allSatisfy({ URLBytes.isAlpha($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E || URLBytes.isDigit($0) }) else {
            throw .notAbsolute
        }
        let scheme = rawScheme.lowercased()
        guard scheme == "http" || scheme == "https" else { throw .unsupportedScheme(scheme) }

        let rest = text[colon...].dropFirst(3)
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        var remainder = rest[authorityEnd...]

        var hasUserInfo = false
        if let at = authority.lastIndex(of: "@") {
            hasUserInfo = true
            authority = authority[authority.index(after: at)...]
        }
        guard !authority.isEmpty else { throw .emptyHost }

        var host: Substring
        var portText: Substring?
        var isIPv6 = false
        if authority.first == "[" {
            guard let close = authority.firstIndex(of: "]") else { throw .invalidHost }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":" else { throw .invalidHost }
                portText = after.dropFirst()
            }
            guard IPAddress.parse(String(host))?.count == 16 else { throw .invalidHost }
            isIPv6 = true
        } else {
            if let colon = authority.firstIndex(of: ":") {
                host = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            } else {
                host = authority
            }
            guard !host.isEmpty else { throw .emptyHost }
            guard host.utf8.allSatisfy({ URLBytes.isAlpha($0) || URLBytes.isDigit($0) || $0 == 0x2D || $0 == 0x2E || $0 == 0x5F }),
                  !host.hasPrefix("."), !host.contains("..")
            else { throw .invalidHost }
        }

        var port: Int?
        if let portText {
            guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy(URLBytes.isDigit),
                  let p = Int(portText), p >= 1, p <= 65535
            else { throw .invalidPort }
            port = p
        }

        var fragment: String?
        if let hash = remainder.firstIndex(of: "#") {
            fragment = String(remainder[remainder.index(after: hash)...])
            remainder = remainder[..<hash]
        }
        var query: String?
        if let q = remainder.firstIndex(of: "?") {
            query = String(remainder[remainder.index(after: q)...])
            remainder = remainder[..<q]
        }
        guard PercentEncoding.isWellFormed(remainder) else { throw .invalidPercentEncoding }

        self.scheme = scheme
        self.host = host.lowercased()
        self.isIPv6Literal = isIPv6
        self.explicitPort = port
        self.path = String(remainder)
        self.query = query
        self.fragment = fragment
        self.hasUserInfo = hasUserInfo
    }
}

/// Byte classes of RFC 3986.
enum URLBytes {
    static func isAlpha(_ b: UInt8) -> Bool { (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) }
    static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
    static func isUnreserved(_ b: UInt8) -> Bool {
        isAlpha(b) || isDigit(b) || b == 0x2D || b == 0x2E || b == 0x5F || b == 0x7E
    }
    static func isSubDelim(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
             UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
             UInt8(ascii: "="): true
        default: false
        }
    }
    /// pchar without `%` (RFC 3986 §3.3).
    static func isPathChar(_ b: UInt8) -> Bool {
        isUnreserved(b) || isSubDelim(b) || b == UInt8(ascii: ":") || b == UInt8(ascii: "@")
    }
}
