import Foundation
import Testing

/// Idle timeout, `slide=false`, and sessions surviving a restart.
@Suite("Gateway: session lifetime")
struct SessionLifetimeTests {
    @Test("GATEHOUSE_SESSION_IDLE=3s: an idle session ends; one in use keeps sliding")
    func idleTimeout() async throws {
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_SESSION_IDLE": "3s"])) { harness in
            let idle = harness.browser()
            let busy = harness.browser()
            try await idle.login()
            try await busy.login()
            // SPEC Session cookie: "A session ends at its idle timeout"; /user: "Every authenticated
            // request slides the idle timeout". The gateway counts whole seconds, so a slide at t keeps
            // the session until at least t+2: polling every 0.5 s keeps it alive even on a busy machine.
            let idleSince = Date()
            while Date().timeIntervalSince(idleSince) < 3.6 {
                try await Task.sleep(for: .milliseconds(500))
                #expect(try await busy.get("/user", csrf: true).status == 200)
            }
            let expired = try await idle.get("/user", csrf: true)
            #expect(expired.status == 401)
            #expect(expired.json?["error"] as? String == "unauthenticated")
            #expect(try await idle.get("/api/echo", csrf: true).status == 401)
        }
    }

    @Test("GET /user?slide=false reports the session without extending idleExpiresAt")
    func slideFalse() async throws {
        // 6 s idle: the polls below happen well before the idle expiry even on a busy machine.
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_SESSION_IDLE": "6s"])) { harness in
            let browser = harness.browser()
            try await browser.login()
            func idleExpiresAt(_ target: String) async throws -> Int? {
                let response = try await browser.get(target, csrf: true)
                return (response.json?["session"] as? [String: Any])?["idleExpiresAt"] as? Int
            }
            // SPEC /user: "except GET /user?slide=false (for polling the session's state without keeping it alive)".
            let first = try #require(try await idleExpiresAt("/user?slide=false"))
            try await Task.sleep(for: .milliseconds(1_100))
            #expect(try await idleExpiresAt("/user?slide=false") == first)
            // Polling did not keep it alive: past the first idle expiry the session is gone.
            let until = Date(timeIntervalSince1970: TimeInterval(first) + 0.1)
            try await Task.sleep(for: .seconds(max(0, until.timeIntervalSinceNow)))
            #expect(try await browser.get("/user?slide=false", csrf: true).status == 401)
        }
    }

    @Test("a sliding /user moves idleExpiresAt forward")
    func slideMovesExpiry() async throws {
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_SESSION_IDLE": "30s"])) { harness in
            let browser = harness.browser()
            try await browser.login()
            func idleExpiresAt(_ target: String) async throws -> Int? {
                let response = try await browser.get(target, csrf: true)
                return (response.json?["session"] as? [String: Any])?["idleExpiresAt"] as? Int
            }
            let first = try #require(try await idleExpiresAt("/user?slide=false"))
            try await Task.sleep(for: .milliseconds(1_100))
            let slid = try #require(try await idleExpiresAt("/user"))
            #expect(slid > first)
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
}
