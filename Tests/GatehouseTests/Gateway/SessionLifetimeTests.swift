import Foundation
import Testing
import TestSupport

/// Idle timeout, `slide=false`, and sessions surviving a restart.
@Suite("Gateway: session lifetime")
struct SessionLifetimeTests {
    @Test("GATEHOUSE_SESSION_IDLE=3s: an idle session ends; one in use keeps sliding")
    func idleTimeout() async throws {
        let clock = ManualClock()
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_SESSION_IDLE": "3s"], clock: clock)) { harness in
            let idle = harness.browser()
            let busy = harness.browser()
            try await idle.login()
            try await busy.login()
            // SPEC Session cookie: "A session ends at its idle timeout"; /user: "Every authenticated
            // request slides the idle timeout". One request a second keeps the busy one alive.
            for _ in 0..<3 {
                clock.advance(seconds: 1)
                #expect(try await busy.get("/user", csrf: true).status == 200)
            }
            let expired = try await idle.get("/user", csrf: true)
            #expect(expired.status == 401)
            #expect(expired.json?["error"] as? String == "unauthenticated")
            #expect(try await idle.get("/api/echo", csrf: true).status == 401)
            #expect(try await busy.get("/user", csrf: true).status == 200)
        }
    }

    @Test("GET /user?slide=false reports the session without extending idleExpiresAt")
    func slideFalse() async throws {
        let clock = ManualClock()
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_SESSION_IDLE": "6s"], clock: clock)) { harness in
            let browser = harness.browser()
            try await browser.login()
            func idleExpiresAt(_ target: String) async throws -> Int? {
                let response = try await browser.get(target, csrf: true)
                return (response.json?["session"] as? [String: Any])?["idleExpiresAt"] as? Int
            }
            // SPEC /user: "except GET /user?slide=false (for polling the session's state without keeping it alive)".
            let first = try #require(try await idleExpiresAt("/user?slide=false"))
            clock.advance(seconds: 2)
            #expect(try await idleExpiresAt("/user?slide=false") == first)
            // Polling did not keep it alive: at the first idle expiry the session is gone.
            clock.advance(seconds: Double(Int64(first) - clock.unixSeconds()))
            #expect(try await browser.get("/user?slide=false", csrf: true).status == 401)
        }
    }

    @Test("a sliding /user moves idleExpiresAt forward")
    func slideMovesExpiry() async throws {
        let clock = ManualClock()
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_SESSION_IDLE": "30s"], clock: clock)) { harness in
            let browser = harness.browser()
            try await browser.login()
            func idleExpiresAt(_ target: String) async throws -> Int? {
                let response = try await browser.get(target, csrf: true)
                return (response.json?["session"] as? [String: Any])?["idleExpiresAt"] as? Int
            }
            let first = try #require(try await idleExpiresAt("/user?slide=false"))
            clock.advance(seconds: 1)
            let slid = try #require(try await idleExpiresAt("/user"))
            #expect(slid == first + 1)
        }
    }

    @Test("a restart of the gateway with the same database keeps the session")
    func restartKeepsSession() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let before = try await browser.get("/user", csrf: true)
            #expect(before.status == 200)
            await harness.stopGateway()
            #expect((try? await browser.get("/user", csrf: true)) == nil)  // nothing listens now
            try harness.startGateway()
            try await harness.waitUntilProviderLoaded()
            let after = try await browser.get("/user", csrf: true)
            #expect(after.status == 200)
            #expect(after.json?["sub"] as? String == "alice")
            // The tokens decrypt after the restart: the API call carries the same bearer.
            let api = try await browser.get("/api/echo", csrf: true)
            #expect(api.status == 200)
            #expect(try ProxyTests.echoed(api).values("Authorization") == ["Bearer \(try #require(harness.tap.issuedTokens.first))"])
        }
    }

    @Test("GATEHOUSE_SESSION_PERSISTENT=true: the session cookie's Max-Age is the session's absolute lifetime")
    func persistentCookie() async throws {
        let clock = ManualClock()
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_SESSION_PERSISTENT": "true",
                                                                   "GATEHOUSE_SESSION_LIFETIME": "2h"], clock: clock)) { harness in
            let browser = harness.browser()
            let login = try await browser.login()
            let set = try #require(login.finish.setCookies(named: harness.cookieName).first)
            #expect(LoginTests.attributes(of: set).contains("max-age=7200"), "\(set)")
            // A new sign-in an hour later: a new session, its cookie good for its own two hours.
            clock.advance(seconds: 3600)
            let again = try await browser.login()
            let renewed = try #require(again.finish.setCookies(named: harness.cookieName).first)
            #expect(LoginTests.attributes(of: renewed).contains("max-age=7200"), "\(renewed)")
        }
    }
}
