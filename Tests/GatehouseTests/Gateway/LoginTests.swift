import Foundation
import Testing

/// `/login`, `/callback`, `/user` and the cookies, end to end through real sockets.
@Suite("Gateway: login and session")
struct LoginTests {
    @Test("a full login: /login → provider → /callback → session cookie → /user")
    func fullLogin() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let start = try await browser.beginLogin()
            // SPEC /login: "answers 302 to the provider's authorization endpoint with response_type=code,
            // client_id, redirect_uri, scope, state, nonce, code_challenge, code_challenge_method=S256".
            #expect(start.status == 302)
            let authorize = try #require(start.location)
            #expect(authorize.hasPrefix(harness.issuer + "/authorize?"))
            #expect(Browser.queryValue("response_type", in: authorize) == "code")
            #expect(Browser.queryValue("client_id", in: authorize) == GatewayHarness.clientID)
            #expect(Browser.queryValue("redirect_uri", in: authorize) == harness.publicURL + "/callback")
            #expect(Browser.queryValue("code_challenge_method", in: authorize) == "S256")
            #expect(Browser.queryValue("code_challenge", in: authorize)?.count == 43)
            #expect((Browser.queryValue("state", in: authorize)?.count ?? 0) >= 22)
            #expect((Browser.queryValue("nonce", in: authorize)?.count ?? 0) >= 22)
            #expect(Browser.queryValue("scope", in: authorize)?.split(separator: " ").contains("openid") == true)

            let callback = try await browser.answerAtProvider(authorize)
            #expect(callback.hasPrefix(harness.publicURL + "/callback?"))
            let finish = try await browser.finishLogin(callback)
            // SPEC /callback: "a new session is created …, the session cookie is set, and the answer is
            // 302 to returnTo (default /)".
            #expect(finish.status == 302)
            #expect(finish.location == "/")
            #expect(browser.sessionCookie != nil)

            let user = try await browser.get("/user", csrf: true)
            #expect(user.status == 200)
            #expect(user.json?["sub"] as? String == "alice")
        }
    }

    @Test("/user has sub, claims, session times and logoutUrl, and never a token")
    func userShape() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let user = try await browser.get("/user", csrf: true)
            // SPEC /user: `{"sub": …, "claims": {…ID token claims…}, "session": {"expiresAt": <unix>,
            // "idleExpiresAt": <unix>}, "logoutUrl": "/logout?sid=<sid>"}` … "Tokens are never returned."
            #expect(user.status == 200)
            #expect(user.headers["Content-Type"]?.hasPrefix("application/json") == true)
            let json = try #require(user.json)
            #expect(Set(json.keys) == ["sub", "provider", "claims", "session", "logoutUrl"])
            #expect(json["sub"] as? String == "alice")
            #expect(json["provider"] as? String == "default")
            let claims = try #require(json["claims"] as? [String: Any])
            #expect(claims["sub"] as? String == "alice")
            #expect(claims["iss"] as? String == harness.issuer)
            let session = try #require(json["session"] as? [String: Any])
            let now = Int(Date().timeIntervalSince1970)
            let expiresAt = try #require(session["expiresAt"] as? Int)
            let idleExpiresAt = try #require(session["idleExpiresAt"] as? Int)
            #expect(expiresAt > now + 86_000 && expiresAt <= now + 86_401)
            #expect(idleExpiresAt > now + 3_500 && idleExpiresAt <= now + 3_601)
            let logoutURL = try #require(json["logoutUrl"] as? String)
            #expect(logoutURL.hasPrefix("/logout?sid=") && logoutURL.count > "/logout?sid=".count)
            for token in harness.tap.issuedTokens { #expect(!user.text.contains(token)) }
            #expect(!user.text.contains("access_token") && !user.text.contains("refresh_token"))
        }
    }

    @Test("/user without the CSRF header: 401 csrf_header_missing")
    func userWithoutCSRFHeader() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            // SPEC CSRF header: "Without it: 401 {"error":"csrf_header_missing"}, and nothing changes."
            let user = try await browser.get("/user")
            #expect(user.status == 401)
            #expect(user.json?["error"] as? String == "csrf_header_missing")
            #expect(user.json?["error_description"] is String)
            let wrongValue = try await browser.get("/user", headers: [("X-CSRF", "0")])
            #expect(wrongValue.status == 401)
            #expect(wrongValue.json?["error"] as? String == "csrf_header_missing")
        }
    }

    @Test("/user without a session: 401 unauthenticated")
    func userWithoutSession() async throws {
        try await GatewayHarness.with { harness in
            // SPEC /user: "401 {"error":"unauthenticated"} without a valid session".
            let none = try await harness.send("GET", "/user", headers: [("X-CSRF", "1")])
            #expect(none.status == 401)
            #expect(none.json?["error"] as? String == "unauthenticated")
            let forged = try await harness.send("GET", "/user", headers: [
                ("X-CSRF", "1"), ("Cookie", "\(harness.cookieName)=\(String(repeating: "A", count: 43))"),
            ])
            #expect(forged.status == 401)
            #expect(forged.json?["error"] as? String == "unauthenticated")
        }
    }

    @Test("the session cookie: opaque 256-bit value; Path=/; HttpOnly; SameSite=Strict; no Domain; no Secure on http")
    func sessionCookieAttributes() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let trace = try await browser.login()
            // SPEC Session cookie: "Set-Cookie: <name>=<opaque random id, ≥256 bits>; Path=/; HttpOnly;
            // SameSite=<Strict|Lax>, plus Secure when PUBLIC_URL is https; never a Domain attribute."
            let cookies = trace.finish.setCookies(named: "gatehouse")
            #expect(cookies.count == 1)
            let cookie = try #require(cookies.first)
            let attributes = Self.attributes(of: cookie)
            #expect(attributes.contains("path=/"))
            #expect(attributes.contains("httponly"))
            #expect(attributes.contains("samesite=strict"))
            #expect(!attributes.contains { $0.hasPrefix("domain") })
            #expect(!attributes.contains("secure"))
            #expect(!attributes.contains { $0.hasPrefix("max-age") || $0.hasPrefix("expires") })
            let value = trace.sessionCookie
            #expect(value.utf8.count >= 43)  // 32 bytes in base64url
            #expect(value.utf8.allSatisfy { b in
                (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || (b >= 48 && b <= 57) || b == 45 || b == 95
            })
        }
    }

    @Test("the login-binding cookie: HttpOnly; SameSite=Lax; short Max-Age; Path=/; no Domain")
    func bindingCookieAttributes() async throws {
        try await GatewayHarness.with { harness in
            let start = try await harness.browser().beginLogin()
            #expect(start.status == 302)
            // SPEC /login: "binds it to this browser with a short-lived HttpOnly cookie"; Configuration:
            // "the short-lived login-binding cookie is always Lax".
            let cookies = start.setCookies(named: harness.bindingCookieName)
            #expect(cookies.count == 1)
            let attributes = Self.attributes(of: try #require(cookies.first))
            #expect(attributes.contains("httponly"))
            #expect(attributes.contains("samesite=lax"))
            #expect(attributes.contains("path=/"))
            #expect(attributes.contains("max-age=600"))
            #expect(!attributes.contains { $0.hasPrefix("domain") })
            // No session cookie before the login completes.
            #expect(start.setCookies(named: harness.cookieName).isEmpty)
        }
    }

    @Test("a second login rotates the session id; the old cookie no longer works")
    func sessionRotation() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let first = try await browser.login()
            let second = try await browser.login()
            // SPEC /callback: "Then a **new** session is created (any session the browser had is deleted)".
            #expect(first.sessionCookie != second.sessionCookie)
            let old = try await harness.send("GET", "/user", headers: [
                ("X-CSRF", "1"), ("Cookie", "\(harness.cookieName)=\(first.sessionCookie)"),
            ])
            #expect(old.status == 401)
            let current = try await browser.get("/user", csrf: true)
            #expect(current.status == 200)
        }
    }

    /// Lowercased attributes after the name=value pair.
    static func attributes(of setCookie: String) -> [String] {
        setCookie.split(separator: ";").dropFirst().map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }
}
