import Foundation
import Testing
import TestSupport

/// `GET /login?prompt=none` (SPEC "Silent login"): an SPA tries to sign in on load without showing
/// anything; when the provider needs the user, the browser comes back to `returnTo` with the reason
/// in the fragment, not an error page, and no session.
@Suite("Gateway: silent login")
struct SilentLoginTests {
    @Test("prompt=none passes without GATEHOUSE_LOGIN_PARAMS; login_required comes back as /app#error=login_required")
    func silentLoginFailsBackToTheSPA() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let start = try await browser.beginLogin(query: "prompt=none&returnTo=/app")
            #expect(start.status == 302)
            let authorize = try #require(start.location)
            #expect(Browser.queryValue("prompt", in: authorize) == "none")
            // The development provider never signs in silently: it answers login_required at once.
            let atProvider = try await RawHTTPClient.send(port: harness.providerPort, method: "GET",
                                                          target: try Browser.target(of: authorize, expectingPort: harness.providerPort))
            #expect(atProvider.status == 302)
            let callback = try #require(atProvider.location)
            #expect(Browser.queryValue("error", in: callback) == "login_required")
            let back = try await browser.finishLogin(callback)
            #expect(back.status == 302)
            #expect(back.location == "/app#error=login_required")
            #expect(back.setCookies(named: harness.cookieName).isEmpty, "no session")
            #expect(try await browser.get("/user", csrf: true).status == 401)
            // The pending login was used up: the same callback again is refused.
            #expect(try await browser.finishLogin(callback).status == 400)
        }
    }

    @Test("other prompt values still need GATEHOUSE_LOGIN_PARAMS; other provider errors still show the error page")
    func onlyPromptNoneIsAlwaysAllowed() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let start = try await browser.beginLogin(query: "prompt=login")
            #expect(Browser.queryValue("prompt", in: try #require(start.location)) == nil)
            let denied = try await browser.answerAtProvider(try #require(start.location), action: "deny")
            let page = try await browser.finishLogin(denied)
            #expect(page.status == 400)
            #expect(page.location == nil)
        }
    }
}
