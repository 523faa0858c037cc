import Foundation
import Testing
import TestSupport

/// Access-token refresh behind API calls (SPEC API routes: "The access token is refreshed with the
/// refresh token before it expires; concurrent requests of one session share one refresh.").
@Suite("Gateway: token refresh")
struct RefreshTests {
    /// Access tokens live 3 s at the provider. The gateway refreshes `min(GATEHOUSE_REFRESH_MARGIN,
    /// lifetime/10)` = 0 s before expiry, so a token needs a refresh once 3 seconds have passed on the
    /// clock the gateway and the provider share (which moves only when the test advances it).
    static func options() -> HarnessOptions { HarnessOptions(accessTokenLifetime: 3, clock: ManualClock()) }

    /// Logs in, then moves the shared clock to the first token's expiry.
    static func loginAndWaitForExpiry(_ browser: Browser, _ harness: GatewayHarness) async throws {
        try await browser.login()
        try #require(harness.options.clock).advance(seconds: 3)
    }

    @Test("20 concurrent API requests at expiry all succeed with one refresh grant")
    func concurrentRequestsShareOneRefresh() async throws {
        try await GatewayHarness.with(Self.options()) { harness in
            let browser = harness.browser()
            try await Self.loginAndWaitForExpiry(browser, harness)
            let firstToken = try #require(harness.tap.issuedTokens.first)
            let statuses = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        let response = try await browser.get("/api/echo", csrf: true)
                        let echo = try? ProxyTests.echoed(response)
                        return (response.status, echo?.values("Authorization").first)
                    }
                }
                var all: [(Int, String?)] = []
                for try await result in group { all.append(result) }
                return all
            }
            #expect(statuses.allSatisfy { $0.0 == 200 }, "\(statuses.map(\.0))")
            let bearers = Set(statuses.compactMap(\.1))
            #expect(bearers.count == 1)
            #expect(!bearers.contains("Bearer \(firstToken)"))
            // With rotation a second grant would spend a used refresh token and revoke the family.
            #expect(harness.provider.statistics.refreshTokenGrants == 1)
            #expect(harness.provider.statistics.failedGrants == 0)
            #expect(try await browser.get("/user", csrf: true).status == 200)
        }
    }

    @Test("a refused refresh (invalid_grant) ends the session: 401")
    func refusedRefreshEndsSession() async throws {
        try await GatewayHarness.with(Self.options()) { harness in
            let browser = harness.browser()
            try await Self.loginAndWaitForExpiry(browser, harness)
            let cookie = try #require(browser.sessionCookie)
            harness.provider.setRefreshBehaviour(.refuse)
            // SPEC API routes: "A refused refresh (invalid_grant) ends the session: 401."
            let api = try await browser.get("/api/echo", csrf: true)
            #expect(api.status == 401)
            #expect(api.json?["error"] as? String == "unauthenticated")
            #expect(api.setCookies(named: harness.cookieName).first.map { LoginTests.attributes(of: $0).contains("max-age=0") } == true)
            #expect(harness.provider.statistics.refreshTokenGrants == 1)
            let user = try await harness.send("GET", "/user", headers: [("X-CSRF", "1"), ("Cookie", "\(harness.cookieName)=\(cookie)")])
            #expect(user.status == 401)
            #expect(harness.upstream.requests.isEmpty)
        }
    }

    @Test("a refresh refused with another session-ending code ends the session too: 401, and /user stops answering 200",
          arguments: ["invalid_request", "unauthorized_client", "invalid_scope"])
    func otherRefusalsEndSession(code: String) async throws {
        try await GatewayHarness.with(Self.options()) { harness in
            let browser = harness.browser()
            try await Self.loginAndWaitForExpiry(browser, harness)
            let cookie = try #require(browser.sessionCookie)
            // LemonLDAP::NG answers `invalid_request` for a refresh token it no longer knows.
            harness.provider.setRefreshBehaviour(.refuseWith(code: code))
            let api = try await browser.get("/api/echo", csrf: true)
            #expect(api.status == 401)
            #expect(api.json?["error"] as? String == "unauthenticated")
            let user = try await harness.send("GET", "/user", headers: [("X-CSRF", "1"), ("Cookie", "\(harness.cookieName)=\(cookie)")])
            #expect(user.status == 401)
            #expect(harness.upstream.requests.isEmpty)
        }
    }

    @Test("a refresh refused with invalid_client keeps the session: 502, /user still 200")
    func invalidClientKeepsSession() async throws {
        try await GatewayHarness.with(Self.options()) { harness in
            let browser = harness.browser()
            try await Self.loginAndWaitForExpiry(browser, harness)
            harness.provider.setRefreshBehaviour(.refuseWith(code: "invalid_client"))
            let api = try await browser.get("/api/echo", csrf: true)
            #expect(api.status == 502)
            #expect(api.json?["error"] as? String == "token_refresh_failed")
            #expect(try await browser.get("/user", csrf: true).status == 200)
            harness.provider.setRefreshBehaviour(.normal)
            #expect(try await browser.get("/api/echo", csrf: true).status == 200)
        }
    }

    @Test("the provider down while the token has expired: 502, the session is kept and works again later")
    func providerDownDuringRefresh() async throws {
        try await GatewayHarness.with(Self.options()) { harness in
            let browser = harness.browser()
            try await browser.login()
            await harness.stopProvider()
            try #require(harness.options.clock).advance(seconds: 3)
            // SPEC: the refresh cannot be asked, which is not a refusal: 502, and the session stays.
            let failed = try await browser.get("/api/echo", csrf: true)
            #expect(failed.status == 502)
            #expect(failed.json?["error"] is String)
            #expect(try await browser.get("/user", csrf: true).status == 200)
            #expect(harness.upstream.requests.isEmpty)

            try harness.startProvider()
            let recovered = try await browser.get("/api/echo", csrf: true)
            #expect(recovered.status == 200)
            #expect(harness.provider.statistics.refreshTokenGrants == 1)
        }
    }
}
