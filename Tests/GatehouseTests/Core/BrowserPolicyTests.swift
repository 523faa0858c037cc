import Gatehouse
import HTTP1
import Testing
@testable import GatehouseCore

@Suite("Session cookie")
struct SessionCookieTests {
    @Test("secure session cookie on https")
    func secure() {
        let cookie = SessionCookie(name: "__Host-Http-gatehouse", sameSite: .strict, secure: true)
        #expect(cookie.set("abc", sessionExpiresAt: 2_000, now: 1_000) == "__Host-Http-gatehouse=abc; Path=/; HttpOnly; SameSite=Strict; Secure")
        #expect(!cookie.set("abc", sessionExpiresAt: 2_000, now: 1_000).contains("Domain"))
        #expect(!cookie.set("abc", sessionExpiresAt: 2_000, now: 1_000).contains("Max-Age"))
        #expect(!cookie.set("abc", sessionExpiresAt: 2_000, now: 1_000).contains("Expires"))
    }

    @Test("plain-http session cookie has no Secure")
    func plain() {
        let cookie = SessionCookie(name: "gatehouse", sameSite: .lax, secure: false)
        #expect(cookie.set("abc", sessionExpiresAt: 2_000, now: 1_000) == "gatehouse=abc; Path=/; HttpOnly; SameSite=Lax")
    }

    @Test("GATEHOUSE_SESSION_PERSISTENT=true: Max-Age is the session's remaining absolute lifetime")
    func persistent() throws {
        var cookie = SessionCookie(name: "gatehouse", sameSite: .strict, secure: false)
        cookie.persistence = .untilSessionEnds
        #expect(cookie.set("abc", sessionExpiresAt: 87_400, now: 1_000) == "gatehouse=abc; Path=/; HttpOnly; SameSite=Strict; Max-Age=86400")
        #expect(cookie.set("abc", sessionExpiresAt: 900, now: 1_000).hasSuffix("; Max-Age=0"))
        let base = ["GATEHOUSE_ISSUER": "https://idp.example.com", "GATEHOUSE_CLIENT_ID": "spa"]
        let loaded = try GatehouseConfiguration.load(environment: base.merging(["GATEHOUSE_SESSION_PERSISTENT": "true"]) { $1 },
                                                    requireSecretKey: false).get()
        #expect(SessionCookie(configuration: loaded).persistence == .untilSessionEnds)
        let plain = try GatehouseConfiguration.load(environment: base, requireSecretKey: false).get()
        #expect(SessionCookie(configuration: plain).persistence == .browserSession)
        guard case .failure(let errors) = GatehouseConfiguration.load(
            environment: base.merging(["GATEHOUSE_SESSION_PERSISTENT": "yes"]) { $1 }, requireSecretKey: false) else {
            Issue.record("GATEHOUSE_SESSION_PERSISTENT=yes accepted")
            return
        }
        #expect(errors.issues.contains { $0.variable == "GATEHOUSE_SESSION_PERSISTENT" })
    }

    @Test("expiring the session cookie")
    func expire() {
        let cookie = SessionCookie(name: "gatehouse", sameSite: .strict, secure: false)
        #expect(cookie.expire() == "gatehouse=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT")
    }

    @Test("login-binding cookie keeps the __Host- prefix, is Lax and short-lived")
    func loginBinding() {
        let cookie = SessionCookie(name: "__Host-Http-gatehouse", sameSite: .strict, secure: true)
        #expect(cookie.loginBindingName == "__Host-Http-gatehouse-login")
        #expect(cookie.setLoginBinding("xyz") == "__Host-Http-gatehouse-login=xyz; Path=/; HttpOnly; SameSite=Lax; Secure; Max-Age=600")
    }

    @Test("built from the configuration")
    func fromConfiguration() throws {
        let config = try GatehouseConfiguration.load(environment: [
            "GATEHOUSE_ISSUER": "https://idp", "GATEHOUSE_CLIENT_ID": "c", "GATEHOUSE_PUBLIC_URL": "https://app",
            "GATEHOUSE_COOKIE_SAMESITE": "LAX",
        ], requireSecretKey: false).get()
        #expect(SessionCookie(configuration: config) == SessionCookie(name: "__Host-Http-gatehouse", sameSite: .lax, secure: true))
    }
}

@Suite("Cookie parsing")
struct CookieParserTests {
    @Test("finds a cookie among others, tolerant of spacing", arguments: [
        "a=1; sid=abc; b=2", "sid=abc", "a=1;sid=abc", "  sid = abc  ;", "x; sid=abc", "=; ;; sid=abc", "sid=\"abc\"",
        "sid=abc; sid=other",
    ])
    func finds(header: String) {
        #expect(CookieParser.value(named: "sid", in: ["Cookie": header]) == "abc")
    }

    @Test("absent or differently named", arguments: ["", ";", "SID=abc", "sidx=abc", "xsid=abc", "a=sid=abc", "sid"])
    func absent(header: String) {
        #expect(CookieParser.value(named: "sid", in: ["Cookie": header]) == nil)
    }

    @Test("searches every Cookie header in order")
    func severalHeaders() {
        let headers: HTTPHeaders = HTTPHeaders([("Cookie", "a=1"), ("cookie", "sid=first"), ("Cookie", "sid=second")])
        #expect(CookieParser.value(named: "sid", in: headers) == "first")
        #expect(CookieParser.values(named: "sid", in: headers) == ["first", "second"])
    }

    @Test("values keep = signs and may be empty")
    func values() {
        #expect(CookieParser.value(named: "t", in: ["Cookie": "t=a=b=="]) == "a=b==")
        #expect(CookieParser.value(named: "t", in: ["Cookie": "t="]) == "")
    }

    @Test("hostile input does not crash")
    func hostile() {
        let junk = String(repeating: ";=\"", count: 10_000) + "\u{0}\u{FFFF}é=é"
        #expect(CookieParser.value(named: "sid", in: ["Cookie": junk]) == nil)
        #expect(CookieParser.value(named: "sid", in: ["Cookie": "sid=\""]) == "\"")
    }
}

@Suite("CSRF header")
struct CSRFPolicyTests {
    @Test("accepts exactly 1", arguments: ["1", " 1 "])
    func accepts(value: String) {
        #expect(CSRFPolicy.check(["X-CSRF": value], headerName: "X-CSRF"))
        #expect(CSRFPolicy.check(["x-csrf": value], headerName: "X-CSRF"))
    }

    @Test("refuses anything else", arguments: ["", "0", "true", "11", "1, 1", "yes", "1;"])
    func refuses(value: String) {
        #expect(!CSRFPolicy.check(["X-CSRF": value], headerName: "X-CSRF"))
    }

    @Test("refuses a missing or duplicated header")
    func missing() {
        #expect(!CSRFPolicy.check([:], headerName: "X-CSRF"))
        #expect(!CSRFPolicy.check(["X-Other": "1"], headerName: "X-CSRF"))
        #expect(!CSRFPolicy.check(HTTPHeaders([("X-CSRF", "1"), ("X-CSRF", "1")]), headerName: "X-CSRF"))
    }

    @Test("uses the configured name")
    func customName() {
        #expect(CSRFPolicy.check(["X-Requested-By": "1"], headerName: "X-Requested-By"))
        #expect(!CSRFPolicy.check(["X-CSRF": "1"], headerName: "X-Requested-By"))
    }
}

@Suite("returnTo (open-redirect defence)")
struct ReturnToTests {
    @Test("absent means /")
    func absent() {
        #expect(ReturnTo.validate(nil) == "/")
    }

    @Test("local paths are returned unchanged", arguments: [
        "/", "/dashboard", "/a/b?c=d&e=f", "/a#frag", "/search?q=%20x", "/%E2%9C%93", "/a.b/c-d_e~f", "/x:y@z",
        "/a/%2e%2e/b", "/?x=/y",
    ])
    func accepts(path: String) {
        #expect(ReturnTo.validate(path) == path)
    }

    @Test("open-redirect payloads are refused", arguments: [
        "", "//evil.com", "///evil.com", "////evil.com", "/\\evil.com", "\\\\evil.com", "\\/evil.com",
        "https://evil.com", "http://evil.com/", "evil.com", "javascript:alert(1)", "data:text/html,x",
        "/%2f%2fevil.com", "/%2F%2Fevil.com", "/%2fevil.com", "/%5cevil.com", "/%5Cevil.com", "/\\/evil.com",
        "/%09/evil.com", "/\t/evil.com", "/\n/evil.com", "/\r\nLocation: https://evil.com", "/%0d%0aSet-Cookie:x=1",
        "/ /evil.com", " /x", "/x\u{0}", "/%00", "/a//b", "/a/%2f/b", "/%252f%252fevil.com", "/%25252f%25252fevil.com",
        "/%2525252f%2525252fevil.com", "/\u{3000}/evil.com", "/é", "/x%zz", "/x%", "./x", "?x", "#x",
        "/.\\evil.com", "%2f%2fevil.com", "/\u{FF0F}evil.com", "/x\u{7F}",
        "/" + String(repeating: "a", count: 2048),
    ])
    func refuses(payload: String) {
        #expect(ReturnTo.validate(payload) == nil, "\(payload.debugDescription)")
    }

    @Test("a path of exactly the maximum length is fine")
    func maxLength() {
        let path = "/" + String(repeating: "a", count: ReturnTo.maxLength - 1)
        #expect(ReturnTo.validate(path) == path)
    }
}

@Suite("Security headers")
struct SecurityHeadersTests {
    @Test("non-HTML responses get the three static headers")
    func nonHTML() {
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        SecurityHeaders.apply(to: &headers, html: false)
        #expect(headers["X-Content-Type-Options"] == "nosniff")
        #expect(headers["Referrer-Policy"] == "no-referrer")
        #expect(headers["X-Frame-Options"] == "DENY")
        #expect(!headers.contains("Content-Security-Policy"))
    }

    @Test("HTML gets the strict CSP (images also from https origins: the providers' profile pictures)")
    func html() {
        var headers = HTTPHeaders()
        SecurityHeaders.apply(to: &headers, html: true)
        #expect(headers["Content-Security-Policy"] ==
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
        // GATEHOUSE_CSP replaces the whole policy.
        var configured = HTTPHeaders()
        SecurityHeaders.apply(to: &configured, html: true,
                              contentSecurityPolicy: SecurityHeaders.contentSecurityPolicyField("default-src 'none'"))
        #expect(configured["Content-Security-Policy"] == "default-src 'none'")
    }

    @Test("headers already present are not duplicated or replaced")
    func noDuplicates() {
        var headers: HTTPHeaders = ["x-frame-options": "SAMEORIGIN", "Content-Security-Policy": "default-src 'none'"]
        SecurityHeaders.apply(to: &headers, html: true)
        SecurityHeaders.apply(to: &headers, html: true)
        #expect(headers.values("X-Frame-Options") == ["SAMEORIGIN"])
        #expect(headers.values("Content-Security-Policy") == ["default-src 'none'"])
        #expect(headers.values("X-Content-Type-Options").count == 1)
        #expect(headers.count == 4)
    }
}

@Suite("JSON errors")
struct JSONErrorTests {
    @Test("body shape")
    func shape() {
        #expect(String(decoding: JSONError.body(error: "unauthenticated", description: "No session."), as: UTF8.self)
            == #"{"error":"unauthenticated","error_description":"No session."}"#)
    }

    @Test("escapes quotes, backslashes and control characters")
    func escaping() {
        let body = String(decoding: JSONError.body(error: "a\"b", description: "c\\d\ne\u{1}\u{2028}"), as: UTF8.self)
        #expect(body == #"{"error":"a\"b","error_description":"c\\d\ne\u0001\u2028"}"#)
    }

    @Test("response carries JSON and no-store")
    func response() {
        let r = HTTPResponse.jsonError(status: 401, error: "csrf_header_missing", description: "The X-CSRF: 1 header is required.")
        #expect(r.status == 401)
        #expect(r.headers["Content-Type"] == "application/json")
        #expect(r.headers["Cache-Control"] == "no-store")
        #expect(r.body == JSONError.body(error: "csrf_header_missing", description: "The X-CSRF: 1 header is required."))
    }
}
