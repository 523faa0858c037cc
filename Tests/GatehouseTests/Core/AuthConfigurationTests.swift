import GatehouseCore
import HTTP1
import Testing

/// Issue 10, items 7 and 10: the cookie name, the CSRF header and `GATEHOUSE_HSTS` at startup.
@Suite("Configuration: cookie prefix, CSRF header, HSTS")
struct AuthConfigurationTests {
    static let base = ["GATEHOUSE_ISSUER": "https://login.example.com", "GATEHOUSE_CLIENT_ID": "c"]

    static func load(_ extra: [String: String]) -> Result<GatehouseConfiguration, ConfigurationErrors> {
        GatehouseConfiguration.load(environment: base.merging(extra) { _, new in new }, requireSecretKey: false)
    }

    /// The issue for `variable`, failing the test when the configuration loads.
    static func issue(_ extra: [String: String], _ variable: String) -> String? {
        switch load(extra) {
        case .success: return nil
        case .failure(let errors): return errors.issues.first { $0.variable == variable }?.message
        }
    }

    @Test("On https a cookie name without the __Host- prefix is refused, naming the variable")
    func cookieNeedsHostPrefixOnHTTPS() throws {
        let https = "https://app.example.com"
        for name in ["gatehouse", "sid", "__Secure-sid", "__host-sid"] {
            let message = try #require(Self.issue(["GATEHOUSE_PUBLIC_URL": https, "GATEHOUSE_COOKIE_NAME": name],
                                                  "GATEHOUSE_COOKIE_NAME"), "\(name)")
            #expect(message.contains("__Host-"))
        }
        let ok = try Self.load(["GATEHOUSE_PUBLIC_URL": https, "GATEHOUSE_COOKIE_NAME": "__Host-sid"]).get()
        #expect(ok.cookieName == "__Host-sid")
        #expect(try Self.load(["GATEHOUSE_PUBLIC_URL": https]).get().cookieName == "__Host-Http-gatehouse")
        // On http there is no Secure cookie, so no prefix can be asked for.
        #expect(try Self.load(["GATEHOUSE_PUBLIC_URL": "http://localhost:8080", "GATEHOUSE_COOKIE_NAME": "sid"])
            .get().cookieName == "sid")
    }

    @Test("A CSRF header a cross-site page can send without a preflight is refused (CORS-safelisted names, any case)",
          arguments: ["Accept", "accept-language", "Content-Language", "CONTENT-TYPE", "Range", "Save-Data"])
    func safelistedCSRFHeaderRefused(name: String) throws {
        let message = try #require(Self.issue(["GATEHOUSE_CSRF_HEADER": name], "GATEHOUSE_CSRF_HEADER"))
        #expect(message.contains(name))
    }

    @Test("A CSRF header a page cannot set (forbidden, hop-by-hop, Sec-*, Proxy-*) is refused",
          arguments: ["Cookie", "Host", "Connection", "Origin", "Referer", "Keep-Alive", "Via", "DNT",
                      "Sec-Fetch-Site", "sec-custom", "Proxy-Whatever", "Accept-Encoding"])
    func forbiddenCSRFHeaderRefused(name: String) throws {
        #expect(Self.issue(["GATEHOUSE_CSRF_HEADER": name], "GATEHOUSE_CSRF_HEADER") != nil)
    }

    @Test("Custom CSRF header names are accepted")
    func customCSRFHeaderAccepted() throws {
        for name in ["X-CSRF", "X-Requested-By", "X-Range", "Secure-Token", "Proxyish"] {
            #expect(try Self.load(["GATEHOUSE_CSRF_HEADER": name]).get().csrfHeader == name)
        }
    }

    @Test("GATEHOUSE_HSTS: max-age=31536000 by default on https, nothing on http, off disables")
    func hstsDefaults() throws {
        #expect(try Self.load(["GATEHOUSE_PUBLIC_URL": "https://app.example.com"]).get().strictTransportSecurity
            == "max-age=31536000")
        #expect(try Self.load(["GATEHOUSE_PUBLIC_URL": "http://localhost:8080"]).get().strictTransportSecurity == nil)
        #expect(try Self.load(["GATEHOUSE_PUBLIC_URL": "http://localhost:8080", "GATEHOUSE_HSTS": "max-age=5"])
            .get().strictTransportSecurity == nil, "never sent on http")
        #expect(try Self.load(["GATEHOUSE_PUBLIC_URL": "https://app.example.com", "GATEHOUSE_HSTS": "OFF"])
            .get().strictTransportSecurity == nil)
    }

    @Test("GATEHOUSE_HSTS accepts max-age=N[; includeSubDomains][; preload], normalised",
          arguments: [("max-age=0", "max-age=0"),
                      ("max-age=63072000; includeSubDomains; preload", "max-age=63072000; includeSubDomains; preload"),
                      ("MAX-AGE=60;includesubdomains", "max-age=60; includeSubDomains"),
                      ("max-age=60 ; preload", "max-age=60; preload"), ("max-age=60;", "max-age=60")])
    func hstsValid(text: String, sent: String) throws {
        let config = try Self.load(["GATEHOUSE_PUBLIC_URL": "https://app.example.com", "GATEHOUSE_HSTS": text]).get()
        #expect(config.strictTransportSecurity == sent)
    }

    @Test("Any other GATEHOUSE_HSTS value stops startup naming the variable (on http too)",
          arguments: ["max-age", "max-age=", "max-age=-1", "max-age=1y", "max-age=\"60\"", "includeSubDomains",
                      "max-age=60; max-age=61", "max-age=60; preload; preload", "max-age=60; always",
                      "max-age=99999999999", "on", "max-age=60, preload"])
    func hstsInvalid(text: String) throws {
        for url in ["https://app.example.com", "http://localhost:8080"] {
            let message = try #require(Self.issue(["GATEHOUSE_PUBLIC_URL": url, "GATEHOUSE_HSTS": text], "GATEHOUSE_HSTS"))
            #expect(message.contains("max-age=N"))
        }
    }

    @Test("serve --help lists GATEHOUSE_HSTS with its default")
    func helpTable() throws {
        let row = try #require(GatehouseConfiguration.variables.first { $0.name == "GATEHOUSE_HSTS" })
        #expect(row.default.contains("max-age=31536000"))
        #expect(GatehouseConfiguration.unknownVariables(in: ["GATEHOUSE_HSTS": "off"]).isEmpty)
    }

    @Test("Security headers: Strict-Transport-Security only when given, once, never duplicated")
    func securityHeadersHSTS() {
        var headers = HTTPHeadersFixture.json
        SecurityHeaders.apply(to: &headers, html: false)
        #expect(headers["Strict-Transport-Security"] == nil)
        SecurityHeaders.apply(to: &headers, html: false, strictTransportSecurity: "max-age=1")
        SecurityHeaders.apply(to: &headers, html: false, strictTransportSecurity: "max-age=1")
        #expect(headers.values("Strict-Transport-Security") == ["max-age=1"])
    }
}

enum HTTPHeadersFixture {
    static var json: HTTPHeaders { ["Content-Type": "application/json"] }
}
