import CSQLite
import Foundation
import Testing
import TestSupport

/// An ending that did not happen is never reported as done (issue #38, found by an outside review):
/// with the session store unable to write, `POST /logout` answered `302` and expired the cookie
/// while the row stayed, so the cookie worked again once the store was back; a back-channel logout
/// recorded its `jti` before a deletion that then failed, so the provider's retry was refused as a
/// replay. Here the store is SQLite held by another process's write transaction, as in the review.
@Suite("Gateway: endings during a store outage fail closed")
struct StoreOutageEndingTests {
    @Test("POST /logout while the store cannot write: 503, cookie kept, session still there; afterwards it ends")
    func logoutDuringOutage() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let cookie = try await browser.login().sessionCookie
            let lock = try SQLiteWriteLock(path: harness.databasePath)
            let refused = try await browser.send("POST", "/logout", csrf: true)
            lock.release()
            #expect(refused.status == 503)
            #expect(refused.json?["error"] as? String == "session_store_unavailable")
            #expect(refused.headers["Retry-After"] != nil)
            #expect(refused.setCookies(named: harness.cookieName).isEmpty, "the cookie is not cleared")
            #expect(harness.provider.statistics.revocations == 0)
            #expect(harness.logLines().contains { $0.contains("nothing ended") })
            // Nothing was claimed, and nothing changed: the session is as it was.
            #expect(try await browser.get("/user", csrf: true).status == 200)
            // Once the store writes again the logout happens and the cookie stops working.
            #expect(try await browser.send("POST", "/logout", csrf: true).status == 302)
            let after = try await harness.send("GET", "/user", headers: [("X-CSRF", "1"), ("Cookie", "\(harness.cookieName)=\(cookie)")])
            #expect(after.status == 401)
        }
    }

    @Test("A logout answered 503 at the store timeout does not happen later: the retry does the whole job")
    func timedOutLogoutDoesNotHappenLater() async throws {
        // A store timeout (1 s) below SQLite's busy timeout (5 s): the delete is still waiting for
        // the lock when the browser is answered 503, and gets it when the lock goes at once after.
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_STORE_TIMEOUT": "1s"])) { harness in
            let browser = harness.browser()
            let cookie = try await browser.login().sessionCookie
            let lock = try SQLiteWriteLock(path: harness.databasePath)
            let refused = try await browser.send("POST", "/logout", csrf: true)
            lock.release()
            #expect(refused.status == 503)
            // SQLite's busy handler retries at most every 100 ms: the late delete has run by now,
            // and rolled back, since its caller was answered already.
            try await Task.sleep(for: .milliseconds(500))
            let retry = try await browser.send("POST", "/logout", csrf: true)
            #expect(retry.status == 302)
            #expect(retry.location?.hasPrefix(harness.issuer + "/logout?") == true, "the provider's session is ended too")
            #expect(harness.provider.statistics.revocations == 2, "the refresh and access tokens are revoked")
            let after = try await harness.send("GET", "/user", headers: [("X-CSRF", "1"), ("Cookie", "\(harness.cookieName)=\(cookie)")])
            #expect(after.status == 401)
        }
    }

    @Test("GET /logout?sid= while the store cannot write: a 503 page, and the session is not reported ended")
    func getLogoutDuringOutage() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let logoutURL = try #require(try await browser.get("/user", csrf: true).json?["logoutUrl"] as? String)
            let lock = try SQLiteWriteLock(path: harness.databasePath)
            let refused = try await browser.get(logoutURL)
            lock.release()
            #expect(refused.status == 503)
            #expect(refused.headers["Content-Type"]?.hasPrefix("text/html") == true)
            #expect(refused.location == nil)
            #expect(try await browser.get("/user", csrf: true).status == 200)
        }
    }

    @Test("A back-channel logout whose deletion fails is not recorded: the provider's retry ends the session")
    func backchannelRetryAfterOutage() async throws {
        let clock = ManualClock()
        try await GatewayHarness.with(HarnessOptions(clock: clock)) { harness in
            let browser = harness.browser()
            try await browser.login()
            let lock = try SQLiteWriteLock(path: harness.databasePath)
            // The provider hears a 503 (a failure to retry), not a 200.
            await #expect(throws: (any Error).self) { try await harness.provider.backchannelLogout(sub: "alice", sid: nil) }
            lock.release()
            #expect(harness.provider.statistics.backchannelLogoutsDelivered == 0, "the gateway did not answer 200")
            let delivered = try #require(harness.backchannel.bodies.first)
            clock.advance(seconds: 1)
            #expect(try await browser.get("/user", csrf: true).status == 200, "nothing ended during the outage")
            // The provider retries the same token: not a replay, since nothing was recorded.
            let retry = try await harness.send("POST", "/backchannel-logout",
                                               headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                               body: .bytes(delivered))
            #expect(retry.status == 200)
            clock.advance(seconds: 1)
            #expect(try await browser.get("/user", csrf: true).status == 401)
            // And now it is a replay.
            let replay = try await harness.send("POST", "/backchannel-logout",
                                                headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                                body: .bytes(delivered))
            #expect(replay.status == 400)
        }
    }
}

/// Another process's write transaction on a SQLite file: readers go on (WAL), writers wait out the
/// busy timeout and fail.
final class SQLiteWriteLock {
    private var handle: OpaquePointer?

    init(path: String) throws {
        guard sqlite3_open(path, &handle) == SQLITE_OK, sqlite3_exec(handle, "BEGIN EXCLUSIVE", nil, nil, nil) == SQLITE_OK else {
            sqlite3_close(handle)
            throw HarnessError.unexpected("could not lock \(path)")
        }
    }

    func release() {
        guard let handle else { return }
        sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
        sqlite3_close(handle)
        self.handle = nil
    }

    deinit { release() }
}
