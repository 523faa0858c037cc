import Foundation
import Testing

/// `/callback` refusals and `returnTo`, through the real provider redirects.
@Suite("Gateway: callback and returnTo")
struct CallbackTests {
    @Test("a replayed state is refused with 400 HTML and sets no session cookie")
    func replayedState() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let trace = try await browser.login()
            // SPEC /callback: "the pending login must exist for state …; it is consumed whatever happens next."
            let replay = try await browser.finishLogin(trace.callbackURL)
            #expect(replay.status == 400)
            #expect(replay.headers["Content-Type"]?.hasPrefix("text/html") == true)
            #expect(replay.setCookies(named: harness.cookieName).isEmpty)
            // The session from the first, legitimate completion is untouched.
            #expect(try await browser.get("/user", csrf: true).status == 200)
        }
    }

    @Test("a callback without the login-binding cookie is refused with 400 and creates no session")
    func callbackWithoutBindingCookie() async throws {
        try await GatewayHarness.with { harness in
            let victim = harness.browser()
            let start = try await victim.beginLogin()
            let callback = try await victim.answerAtProvider(try #require(start.location))
            // SPEC /callback: the pending login must "belong to this browser's binding cookie".
            let attacker = harness.browser()
            let stolen = try await attacker.finishLogin(callback)
            #expect(stolen.status == 400)
            #expect(stolen.headers["Content-Type"]?.hasPrefix("text/html") == true)
            #expect(stolen.setCookies(named: harness.cookieName).isEmpty)
            #expect(attacker.sessionCookie == nil)
            // Consumed "whatever happens next": the right browser cannot use it afterwards either.
            let late = try await victim.finishLogin(callback)
            #expect(late.status == 400)
            #expect(victim.sessionCookie == nil)
        }
    }

    @Test("error=access_denied from the provider: 400 and no session")
    func accessDenied() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let start = try await browser.beginLogin()
            let callback = try await browser.answerAtProvider(try #require(start.location), action: "deny")
            #expect(Browser.queryValue("error", in: callback) == "access_denied")
            // SPEC /callback: "Failures (error from the provider, …) answer an HTML error page with status 400".
            let finish = try await browser.finishLogin(callback)
            #expect(finish.status == 400)
            #expect(finish.headers["Content-Type"]?.hasPrefix("text/html") == true)
            #expect(browser.sessionCookie == nil)
        }
    }

    @Test("an iss that is not the issuer: 400 and no session (RFC 9207)")
    func wrongIssuer() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let start = try await browser.beginLogin()
            let callback = try await browser.answerAtProvider(try #require(start.location))
            var components = try #require(URLComponents(string: callback))
            #expect(components.queryItems?.first { $0.name == "iss" }?.value == harness.issuer)
            components.queryItems = components.queryItems?.map {
                $0.name == "iss" ? URLQueryItem(name: "iss", value: "http://127.0.0.1:1/evil") : $0
            }
            // SPEC /callback: "If iss is present it must equal the issuer (RFC 9207)".
            let finish = try await browser.finishLogin(try #require(components.string))
            #expect(finish.status == 400)
            #expect(browser.sessionCookie == nil)
            #expect(harness.provider.statistics.authorizationCodeGrants == 0)
        }
    }

    @Test("returnTo that could leave the site is refused with 400, never redirected",
          arguments: ["https%3A%2F%2Fevil.example", "%2F%2Fevil.example", "%2F%5Cevil.example", "%5C%5Cevil.example",
                      "evil.example", "%2F%252F%252Fevil.example", "%2F%2509%2Fevil.example", "javascript%3Aalert(1)",
                      "", "%2Fok&returnTo=%2Fother"])
    func openRedirectRefused(payload: String) async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            // SPEC /login: "returnTo must be a local absolute path (/ followed by anything but / or \);
            // anything else is refused with 400 (never redirected to)."
            let start = try await browser.beginLogin(query: "returnTo=" + payload)
            #expect(start.status == 400, "returnTo=\(payload)")
            #expect(start.location == nil)
            #expect(start.setCookies(named: harness.bindingCookieName).isEmpty)
        }
    }

    @Test("a local returnTo is where the browser lands after the callback")
    func returnToHonoured() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let trace = try await browser.login(query: "returnTo=%2Finbox%2F42%3Ftab%3Dunread")
            // SPEC /callback: "the answer is 302 to returnTo (default /)".
            #expect(trace.finish.status == 302)
            #expect(trace.finish.location == "/inbox/42?tab=unread")
        }
    }

    @Test("two logins pending in one browser (two tabs) both complete")
    func twoPendingLogins() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            // SPEC /login: "Several logins may be pending in one browser (tabs)."
            let first = try await browser.beginLogin(query: "returnTo=%2Fone")
            let second = try await browser.beginLogin(query: "returnTo=%2Ftwo")
            let firstCallback = try await browser.answerAtProvider(try #require(first.location))
            let secondCallback = try await browser.answerAtProvider(try #require(second.location))
            let firstFinish = try await browser.finishLogin(firstCallback)
            #expect(firstFinish.status == 302)
            #expect(firstFinish.location == "/one")
            #expect(firstFinish.setCookies(named: harness.cookieName).count == 1)
            let secondFinish = try await browser.finishLogin(secondCallback)
            #expect(secondFinish.status == 302)
            #expect(secondFinish.location == "/two")
            #expect(secondFinish.setCookies(named: harness.cookieName).count == 1)
            #expect(try await browser.get("/user", csrf: true).status == 200)
        }
    }
}
