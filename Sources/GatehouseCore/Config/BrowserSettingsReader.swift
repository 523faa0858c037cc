import GatehouseEncoding

/// The browser-facing settings: the session cookie's name and `SameSite`, the anti-forgery and
/// assertion header names, and where the provider returns the browser after logout.
extension EnvironmentReader {
    mutating func cookieName(publicURL: PublicURL?) -> String? {
        let name = "GATEHOUSE_COOKIE_NAME"
        guard let text = value(name) else {
            return (publicURL?.isSecure ?? false) ? "__Host-Http-gatehouse" : "gatehouse"
        }
        guard HTTPToken.isValid(text) else {
            fail(name, "\(ConfigurationIssue.quote(text)) is not a valid cookie name (letters, digits and !#$%&'*+-.^_`|~)")
            return nil
        }
        let lower = text.lowercased()
        if lower.hasPrefix("__host-") || lower.hasPrefix("__secure-"), let publicURL, !publicURL.isSecure {
            fail(name, "\(ConfigurationIssue.quote(text)) needs a Secure cookie, but GATEHOUSE_PUBLIC_URL is not https")
            return nil
        }
        // Without the exact `__Host-` prefix a sibling subdomain (or an http page of the same host)
        // can plant a same-named cookie that the browser sends beside ours (cookie tossing).
        if let publicURL, publicURL.isSecure, !text.hasPrefix("__Host-") {
            fail(name, "\(ConfigurationIssue.quote(text)) must start with __Host- when GATEHOUSE_PUBLIC_URL is https "
                 + "(the prefix stops other subdomains from planting a cookie of the same name)")
            return nil
        }
        return text
    }

    mutating func sameSite() -> SameSitePolicy? {
        let name = "GATEHOUSE_COOKIE_SAMESITE"
        guard let text = value(name) else { return .strict }
        switch text.lowercased() {
        case "strict": return .strict
        case "lax": return .lax
        default:
            fail(name, "\(ConfigurationIssue.quote(text)) is not Strict or Lax")
            return nil
        }
    }

    /// Header names the proxy or the server depend on: using one as the CSRF header would strip
    /// it from every forwarded request or confuse framing.
    static let reservedHeaders: Set<String> = ["host", "cookie", "authorization", "content-length", "content-type",
                                               "transfer-encoding", "connection", "te", "upgrade", "expect",
                                               "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto",
                                               "accept", "origin", "referer"]

    mutating func csrfHeader() -> String? {
        let name = "GATEHOUSE_CSRF_HEADER"
        guard let text = value(name) else { return "X-CSRF" }
        guard HTTPToken.isValid(text) else {
            fail(name, "\(ConfigurationIssue.quote(text)) is not a valid header name")
            return nil
        }
        guard !Self.reservedHeaders.contains(text.lowercased()) else {
            fail(name, "\(ConfigurationIssue.quote(text)) is a standard header Gatehouse relies on; use a custom name such as X-CSRF")
            return nil
        }
        if let why = CSRFHeaderName.unsuitability(of: text) {
            fail(name, "\(ConfigurationIssue.quote(text)) \(why); use a custom name such as X-CSRF")
            return nil
        }
        return text
    }

    /// `GATEHOUSE_ASSERTION_HEADER`: a custom header name, never one the gateway or browsers rely on
    /// (it is removed from every browser request, so `Cookie` would silently disappear).
    mutating func assertionHeader(csrfHeader: String?) -> String? {
        let name = "GATEHOUSE_ASSERTION_HEADER"
        guard let text = value(name) else { return "Gatehouse-Assertion" }
        guard HTTPToken.isValid(text) else {
            fail(name, "\(ConfigurationIssue.quote(text)) is not a valid header name")
            return nil
        }
        let lowered = text.lowercased()
        guard !Self.reservedHeaders.contains(lowered), !ProxyHeaderPolicy.hopByHop.contains(lowered),
              !["traceparent", "tracestate", "dpop"].contains(lowered) else {
            fail(name, "\(ConfigurationIssue.quote(text)) is a standard header Gatehouse relies on; use a custom name such as Gatehouse-Assertion")
            return nil
        }
        if let csrfHeader, csrfHeader.lowercased() == lowered {
            fail(name, "\(ConfigurationIssue.quote(text)) is the CSRF header (GATEHOUSE_CSRF_HEADER)")
            return nil
        }
        return text
    }

    mutating func postLogoutRedirectURI(publicURL: PublicURL?) -> String? {
        let name = "GATEHOUSE_POST_LOGOUT_REDIRECT_URI"
        guard let text = value(name) else { return publicURL.map { $0.origin + "/" } }
        do {
            let url = try AbsoluteURL(parsing: text)
            if url.hasUserInfo {
                fail(name, "\(ConfigurationIssue.quote(text)) must not contain user information (user@)")
                return nil
            }
            if url.fragment != nil {
                fail(name, "\(ConfigurationIssue.quote(text)) must not have a fragment")
                return nil
            }
            return text
        } catch {
            fail(name, "\(ConfigurationIssue.quote(text)) \(error.description)")
            return nil
        }
    }
}
