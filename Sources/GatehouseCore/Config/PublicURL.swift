/// The origin the browser uses to reach Gatehouse (`GATEHOUSE_PUBLIC_URL`).
///
/// Gatehouse owns the whole origin (its cookies are `Path=/`, `__Host-` on https), so the URL
/// must not carry a path other than `/`, a query, a fragment or user information.
public struct PublicURL: Sendable, Equatable, CustomStringConvertible {
    /// `http` or `https`.
    public var scheme: String
    /// Lowercased host, brackets kept for IPv6 (`[::1]`), as it appears in the origin.
    public var host: String
    /// The effective port (the scheme default when none was written).
    public var port: Int
    /// `scheme://host[:port]`, default port omitted, no trailing slash.
    public var origin: String

    /// True when the browser reaches Gatehouse over https: cookies get `Secure` and `__Host-`.
    public var isSecure: Bool { scheme == "https" }

    /// The OAuth `redirect_uri`: `{origin}/callback`.
    public var redirectURI: String { origin + "/callback" }

    public var description: String { origin }

    public enum ParseError: Error, Equatable, Sendable {
        case url(AbsoluteURL.ParseError)
        case hasPath
        case hasQueryOrFragment
        case hasUserInfo
    }

    public init(parsing text: String) throws(ParseError) {
        let url: AbsoluteURL
        do { url = try AbsoluteURL(parsing: String(text.trimmingConfigurationWhitespace())) } catch { throw .url(error) }
        guard !url.hasUserInfo else { throw .hasUserInfo }
        guard url.query == nil, url.fragment == nil else { throw .hasQueryOrFragment }
        guard url.path.isEmpty || url.path == "/" else { throw .hasPath }
        self.scheme = url.scheme
        self.host = url.isIPv6Literal ? "[\(url.host)]" : url.host
        self.port = url.port
        self.origin = url.origin
    }
}
