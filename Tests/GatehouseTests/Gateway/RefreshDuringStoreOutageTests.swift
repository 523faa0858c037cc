import Foundation
import Synchronization
import Testing
import TestSupport

/// The window between the provider's refresh answer and the store's write (issue #38): the provider
/// has rotated the refresh token, so the tokens it just gave are the only good copy. They are held
/// in memory, used by the session's requests, written as soon as the store answers, and the next
/// refresh presents the rotated refresh token, never the old one again.
@Suite("Gateway: a refresh the store cannot record")
struct RefreshDuringStoreOutageTests {
    @Test("the rotated tokens are held, served, stored once the store answers, and refreshed from")
    func rotatedTokensSurviveTheStore() async throws {
        try await GatewayHarness.with(RefreshTests.options()) { harness in
            let browser = harness.browser()
            try await RefreshTests.loginAndWaitForExpiry(browser, harness)
            let clock = try #require(harness.options.clock)
            let lock = HeldLock()
            let path = harness.databasePath
            // The store stops taking writes the moment the provider has answered the refresh.
            harness.tap.beforeTokenAnswer.withLock { hook in
                hook = { lock.value.withLock { $0 = try? SQLiteWriteLock(path: path) } }
            }
            let during = try await browser.get("/api/echo", csrf: true)
            harness.tap.beforeTokenAnswer.withLock { $0 = nil }
            #expect(during.status == 200, "served with the refreshed access token: \(during.text)")
            let refreshed = try ProxyTests.echoed(during).values("Authorization").first
            #expect(refreshed != nil && refreshed != "Bearer \(harness.tap.issuedTokens.first ?? "-")")
            #expect(harness.provider.statistics.refreshTokenGrants == 1)
            #expect(harness.logLines().contains { $0.contains("held in memory") })
            // Still the store's outage: the held access token serves the session.
            let again = try await browser.get("/api/echo", csrf: true)
            #expect(try ProxyTests.echoed(again).values("Authorization").first == refreshed)
            lock.value.withLock { $0?.release(); $0 = nil }
            // Written within seconds once the store answers.
            #expect(await eventually(timeout: 15) {
                harness.logLines().contains { $0.contains("held refreshed tokens stored") }
            })
            // The next refresh presents the rotated refresh token: the provider sees no reuse.
            clock.advance(seconds: 3)
            let after = try await browser.get("/api/echo", csrf: true)
            #expect(after.status == 200)
            #expect(harness.provider.statistics.refreshTokenGrants == 2)
            #expect(harness.provider.statistics.failedGrants == 0)
            #expect(try await browser.get("/user", csrf: true).status == 200)
        }
    }
}

/// The other process's write transaction, taken from the provider's answer and released by the test.
private final class HeldLock: Sendable {
    let value = Mutex<SQLiteWriteLock?>(nil)
}
