import Foundation
import Testing
import TestSupport

/// The SQLite file stops taking writes (issue #38: "SQLite's locked and read-only database"): made
/// immutable (`chattr +i`, which holds even for root and even on descriptors already open), so every
/// write fails with an I/O error while reads go on.
@Suite("Gateway: a SQLite store that cannot be written")
struct ReadOnlyStoreTests {
    @Test("signed-in calls go on; login and logout answer 503 with Retry-After; all back once writable")
    func unwritableStore() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let cookie = try await browser.login().sessionCookie
            #expect(try await browser.get("/api/echo", csrf: true).status == 200)
            let files = [harness.databasePath, harness.databasePath + "-wal"]
            try Self.chattr("+i", files)
            do {
                // Reads still work: the signed-in browser goes on.
                #expect(try await browser.get("/api/echo", csrf: true).status == 200)
                #expect(try await browser.get("/user", csrf: true).status == 200)
                // What needs a write says so, and when to try again.
                let login = try await harness.browser().beginLogin()
                #expect(login.status == 503)
                #expect(login.headers["Retry-After"] != nil)
                let logout = try await browser.send("POST", "/logout", csrf: true)
                #expect(logout.status == 503)
                #expect(logout.headers["Retry-After"] != nil)
                #expect(logout.setCookies(named: harness.cookieName).isEmpty)
            } catch {
                try Self.chattr("-i", files)
                throw error
            }
            try Self.chattr("-i", files)
            #expect(try await browser.send("POST", "/logout", csrf: true).status == 302)
            let after = try await harness.send("GET", "/user", headers: [("X-CSRF", "1"), ("Cookie", "\(harness.cookieName)=\(cookie)")])
            #expect(after.status == 401)
            #expect(try await harness.browser().beginLogin().status == 302)
        }
    }

    static func chattr(_ flag: String, _ files: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        process.arguments = [flag] + files
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw HarnessError.unexpected("chattr \(flag) failed (exit \(process.terminationStatus)): the test needs an ext4-like file system")
        }
    }
}
