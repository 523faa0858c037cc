import GatehouseEncoding

/// The browser-facing settings: the session cookie's name and `SameSite`, the anti-forgery and
/// assertion header names, and where the provider returns the browser after logout.
extension EnvironmentReader {
    /// - Parameter domain: `GATEHOUSE_COOKIE_DOMAIN`: a cookie with a `Domain` cannot be `__Host-`,
    ///   so on https its name starts `__Secure-` instead.
    mutating func cookieName(publicURL: PublicURL?, domain: String? = nil) -> String? {
        let name = "GATEHOUSE_COOKIE_NAME"
        let secure = publicURL?.isSecure ?? false
        guard let text = value(name) else {
            guard secure else { return "gatehouse" }
            return domain == nil ? "__Host-Http-gatehouse" : "__Secure-gatehouse"
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
        if domain != nil {
            if lower.hasPrefix("__host-") {
                fail(name, "\(ConfigurationIssue.quote(text)) starts with __Host-, which forbids the Domain GATEHOUSE_COOKIE_DOMAIN sets; use __Secure-")
                return nil
            }
            if secure, !text.hasPrefix("__Secure-") {
                fail(name, "\(ConfigurationIssue.quote(text)) must start with __Secure- when GATEHOUSE_PUBLIC_URL is https "
                     + "(the prefix stops plain-http pages from planting a cookie of the same name)")
                return nil
            }
            return text
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

    /// `GATEHOUSE_COOKIE_DOMAIN`, checked against the public URL's host (`CookieDomain`).
    mutating func cookieDomain(publicURL: PublicURL?) -> String?? {
        let name = "GATEHOUSE_COOKIE_DOMAIN"
        guard let text = value(name) else { return .some(nil) }
        switch CookieDomain.parse(text, publicHost: publicURL?.host) {
        case .success(let domain): return .some(domain)
        case .failure(let problem):
            fail(name, "\(ConfigurationIssue.quote(text)) \(problem)")
            return nil
        }
    }

    /// `GATEHOUSE_CORS_ORIGINS`: exact origins, comma-separated (`CORSPolicy`).
    mutating func corsPolicy(publicURL: PublicURL?) -> CORSPolicy? {
        let name = "GATEHOUSE_CORS_ORIGINS"
        guard let text = value(name) else { return CORSPolicy.none }
        var origins: [String] = []
        for entry in text.split(separator: ",") {
            let entry = String(entry.trimmingConfigurationWhitespace())
            guard !entry.isEmpty else { continue }
            switch CORSPolicy.parseOrigin(entry) {
            case .success(let origin):
                if origin == publicURL?.origin {
                    fail(name, "\(ConfigurationIssue.quote(entry)) is GATEHOUSE_PUBLIC_URL's own origin, which needs no CORS")
                    return nil
                }
                if !origins.contains(origin) { origins.append(origin) }
            case .failure(let problem):
                fail(name, "\(ConfigurationIssue.quote(entry)) \(problem)")
                return nil
            }
        }
        return CORSPolicy(origins: origins)
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
