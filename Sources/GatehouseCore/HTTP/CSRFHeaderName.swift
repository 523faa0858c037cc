/// Which names can serve as the CSRF header. The header proves a request came from the SPA only if
/// a cross-site page cannot send it without a CORS preflight (which Gatehouse never grants), and
/// only if a page can set it at all (the Fetch standard's forbidden request-header names).
public enum CSRFHeaderName {
    /// CORS-safelisted request-header names (Fetch §2.2.2): a cross-site `fetch` or form sends them
    /// without a preflight. The client hints some browsers still safelist are included.
    public static let corsSafelisted: Set<String> = [
        "accept", "accept-language", "content-language", "content-type", "range",
        "dpr", "downlink", "save-data", "viewport-width", "width",
    ]

    /// Forbidden request-header names (Fetch §2.2.2) and hop-by-hop fields (RFC 9110 §7.6.1): a page
    /// cannot set them, or a proxy on the way removes them.
    public static let forbidden: Set<String> = [
        "accept-charset", "accept-encoding", "access-control-request-headers", "access-control-request-method",
        "connection", "content-length", "cookie", "cookie2", "date", "dnt", "expect", "host", "keep-alive",
        "origin", "referer", "set-cookie", "te", "trailer", "transfer-encoding", "upgrade", "via",
        "proxy-authorization", "proxy-connection",
    ]

    /// Why `name` cannot be the CSRF header, or nil when it can.
    public static func unsuitability(of name: String) -> String? {
        let lower = name.lowercased()
        if corsSafelisted.contains(lower) {
            return "is a CORS-safelisted header that any site may send cross-origin without a preflight"
        }
        if forbidden.contains(lower) || lower.hasPrefix("sec-") || lower.hasPrefix("proxy-") {
            return "is a header browsers do not let a page set (a forbidden or hop-by-hop name)"
        }
        return nil
    }
}
