/// Cross-origin access for an SPA served from another origin than the gateway
/// (`GATEHOUSE_CORS_ORIGINS`, SPEC "Behind the ingress you already run"): the exact origins that
/// may call the routes and `/user`, `/logout`, `/sessions`, `/sessions/revoke` with the session
/// cookie, and the fields that say so.
///
/// Exact origins only: never `*` (credentials forbid it anyway), never the request's own `Origin`
/// echoed unchecked, never `null` (sandboxed frames and `file:` pages send it, and anyone can
/// make one). A request from any other origin gets no CORS field, so the browser keeps the
/// answer from the page.
public struct CORSPolicy: Sendable, Equatable {
    /// Serialized origins (RFC 6454), lower-case: `https://app.example.com`, `http://localhost:5173`.
    public let origins: [String]

    public init(origins: [String]) { self.origins = origins }

    public static let none = CORSPolicy(origins: [])

    public var isEnabled: Bool { !origins.isEmpty }

    /// The listed origin the browser's `Origin` value names, as listed; nil for any other value.
    /// Browsers send origins serialized and lower-case, so the comparison is exact but for case.
    public func allowedOrigin(_ value: Substring) -> String? {
        let trimmed = value.trimmingASCIIWhitespace()
        guard !trimmed.isEmpty, trimmed.utf8.count <= 256 else { return nil }
        return origins.first { trimmed.asciiCaseInsensitiveEquals($0) }
    }

    /// The fields on an actual answer to `origin` (a listed one).
    public static func answerFields(origin: String) -> [(String, String)] {
        [("Access-Control-Allow-Origin", origin), ("Access-Control-Allow-Credentials", "true"), ("Vary", "Origin")]
    }

    /// The fields of a `204` preflight answer to `origin`: the methods the endpoint takes, and the
    /// headers a page may send: the anti-forgery header, `Content-Type`, and those the preflight
    /// asked for that are plain field names (at most 32).
    public static func preflightFields(origin: String, methods: String, csrfHeader: String,
                                       requestedHeaders: [Substring]) -> [(String, String)] {
        var headers = [csrfHeader, "Content-Type"]
        var seen: Set<String> = [csrfHeader.lowercased(), "content-type"]
        for list in requestedHeaders {
            for name in list.split(separator: ",") {
                let name = String(name.trimmingASCIIWhitespace())
                guard headers.count < 34, !name.isEmpty, name.utf8.count <= 64, HTTPToken.isValid(name),
                      seen.insert(name.lowercased()).inserted else { continue }
                headers.append(name)
            }
        }
        return [("Access-Control-Allow-Origin", origin), ("Access-Control-Allow-Credentials", "true"),
                ("Access-Control-Allow-Methods", methods), ("Access-Control-Allow-Headers", headers.joined(separator: ", ")),
                ("Access-Control-Max-Age", "600"),
                ("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")]
    }

    /// Why `text` cannot be one of `GATEHOUSE_CORS_ORIGINS`, or nil with its serialized form.
    public static func parseOrigin(_ text: String) -> Result<String, OriginProblem> {
        if text == "*" { return .failure(.wildcard) }
        if text.lowercased() == "null" { return .failure(.null) }
        guard let url = try? AbsoluteURL(parsing: text) else { return .failure(.notAnOrigin) }
        guard !url.hasUserInfo, url.path.isEmpty || url.path == "/", url.query == nil, url.fragment == nil else {
            return .failure(.notAnOrigin)
        }
        guard url.isHTTPS || url.isLoopbackHost else { return .failure(.plainHTTP) }
        return .success(url.origin)
    }

    public enum OriginProblem: Error, Equatable, CustomStringConvertible {
        case wildcard, null, notAnOrigin, plainHTTP

        public var description: String {
            switch self {
            case .wildcard: "is a wildcard: list each origin (credentials are never allowed to every origin)"
            case .null: "is the opaque origin that sandboxed frames and files send: any page can make one"
            case .notAnOrigin: "is not an origin (scheme://host[:port], no path, query or user)"
            case .plainHTTP: "is plain http: only https, or http on localhost and 127.0.0.0/8"
            }
        }
    }
}
