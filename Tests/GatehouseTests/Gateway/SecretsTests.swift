import Foundation
import Logging
import Testing
import TestSupport

/// Nothing secret on disk in plaintext, nothing secret in the logs.
@Suite("Gateway: secrets stay secret")
struct SecretsTests {
    /// Runs a login, an API call, a refresh, a failed replay and a logout, and returns every secret the
    /// browser or the provider saw on the way.
    static func exercise(_ harness: GatewayHarness, logout: Bool) async throws -> [String: String] {
        let browser = harness.browser()
        let trace = try await browser.login()
        #expect(try await browser.get("/user", csrf: true).status == 200)
        #expect(try await browser.get("/api/echo", csrf: true).status == 200)
        // At the end of the 3 s access-token lifetime: the next API call refreshes (tokens rotate).
        try #require(harness.options.clock).advance(seconds: 3)
        #expect(try await browser.get("/api/echo", csrf: true).status == 200)
        #expect(harness.provider.statistics.refreshTokenGrants == 1)
        #expect(try await browser.finishLogin(trace.callbackURL).status == 400)  // replayed: logs a failure
        var secrets: [String: String] = ["session cookie": trace.sessionCookie]
        for name in ["code", "state"] { secrets[name] = Browser.queryValue(name, in: trace.callbackURL) }
        secrets["nonce"] = Browser.queryValue("nonce", in: trace.authorizeURL)
        secrets["binding cookie"] = browser.cookies[harness.bindingCookieName]
        for (index, token) in harness.tap.issuedTokens.enumerated() { secrets["token #\(index)"] = token }
        if logout { #expect(try await browser.send("POST", "/logout", csrf: true).status == 302) }
        return secrets
    }

    @Test("the SQLite file and its WAL hold neither the session cookie nor tokens, code, state or nonce")
    func nothingInPlaintextOnDisk() async throws {
        try await GatewayHarness.with(HarnessOptions(accessTokenLifetime: 3, clock: ManualClock())) { harness in
            let secrets = try await Self.exercise(harness, logout: false)
            #expect(secrets.count >= 9)  // cookie, binding, code, state, nonce, 2 × (access, refresh, id)
            let bytes = try harness.databaseBytes()
            // Sanity: this is the gateway's database and it has the session (sub is stored in the clear).
            #expect(bytes.containsBytes(of: "alice"))
            // SPEC Session cookie: "The database stores only a hash of the id, never the id itself.
            // Tokens are stored encrypted (AES-GCM under GATEHOUSE_SECRET_KEY), never in plaintext."
            for (name, value) in secrets {
                #expect(!bytes.containsBytes(of: value), "\(name) is in the database file")
            }
        }
    }

    @Test("logs at trace level never contain the cookie, the code, the state or any token")
    func nothingSecretInLogs() async throws {
        try await GatewayHarness.with(HarnessOptions(accessTokenLifetime: 3, logLevel: .trace, clock: ManualClock())) { harness in
            let secrets = try await Self.exercise(harness, logout: true)
            try await harness.provider.backchannelLogout(sub: "alice", sid: nil)
            let lines = harness.logLines()
            // Sanity: the gateway logged the flow.
            #expect(lines.contains { $0.contains("login completed") })
            #expect(lines.contains { $0.contains("login failed at callback") })
            // SPEC Operations: "Logs never contain tokens, codes, verifiers, cookies or secrets."
            for (name, value) in secrets {
                #expect(!lines.contains { $0.contains(value) }, "\(name) is in the log")
            }
            let secret = try #require(harness.configuration.clientSecret)
            #expect(!lines.contains { $0.contains(secret) })
            #expect(!lines.contains { $0.contains("code=") })
        }
    }
}
