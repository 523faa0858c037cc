import Foundation
import GatehouseSessions
import Testing
@testable import Gatehouse

/// Issue 13 through the running gateway: GATEHOUSE_REQUIRE_CLAIMS, GATEHOUSE_LOGIN_PARAMS, and the
/// end of a session that has no refresh token.
@Suite("Gateway: provider profile options")
struct ProviderProfileGatewayTests {
    @Test("A missing required claim fails the login: 400 page, no session, logins_failed_total{reason=\"claim\"}")
    func requiredClaimMissing() async throws {
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_REQUIRE_CLAIMS": "hd=example.com"])) { harness in
            let browser = harness.browser()
            let start = try await browser.beginLogin()
            let callback = try await browser.answerAtProvider(try #require(start.location))
            let finish = try await browser.finishLogin(callback)
            #expect(finish.status == 400)
            #expect(finish.text.contains("not one this site admits"))
            #expect(browser.sessionCookie == nil)
            let metrics = try await browser.get("/metrics")
            #expect(metrics.text.contains("gatehouse_logins_failed_total{reason=\"claim\"} 1"))
        }
    }

    @Test("Listed /login parameters reach the authorization request; others, and reserved names, do not")
    func loginParameters() async throws {
        let options = HarnessOptions(environment: ["GATEHOUSE_LOGIN_PARAMS": "login_hint,ui_locales"])
        try await GatewayHarness.with(options) { harness in
            let browser = harness.browser()
            let start = try await browser.beginLogin(query: "login_hint=ada%40example.com&prompt=consent&state=forged&returnTo=/x")
            let authorize = try #require(start.location)
            #expect(Browser.queryValue("login_hint", in: authorize) == "ada@example.com")
            // `prompt` is not listed: only `prompt=none` (the silent sign-in) passes anyway.
            #expect(Browser.queryValue("prompt", in: authorize) == nil)
            #expect(Browser.queryValue("state", in: authorize) != "forged")
            #expect(authorize.components(separatedBy: "state=").count == 2)
            let repeated = try await browser.beginLogin(query: "login_hint=a&login_hint=b")
            #expect(repeated.status == 400)
        }
    }

    @Test("Without a refresh token a session ends with its access token")
    func accessTokenExpiry() {
        var tokens = TokenSet(accessToken: "at", refreshToken: nil, accessTokenExpiresAt: 100)
        #expect(!AccessTokenExpiry.hasEnded(tokens, now: 99))
        #expect(AccessTokenExpiry.hasEnded(tokens, now: 100))
        tokens.refreshToken = "rt"
        #expect(!AccessTokenExpiry.hasEnded(tokens, now: 1_000))
        tokens.refreshToken = nil
        tokens.accessTokenExpiresAt = nil
        #expect(!AccessTokenExpiry.hasEnded(tokens, now: 1_000))
        #expect(AccessTokenExpiry.expired.status == 401)
        #expect(String(decoding: AccessTokenExpiry.expired.body, as: UTF8.self).contains("\"error\":\"session_expired\""))
    }
}
