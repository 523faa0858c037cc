import Foundation
import GatehouseCore
import GatehouseOIDC
import GatehouseSessions
import GatehouseStatic
import HTTPClient
import EventLoops
import HTTP1
import Logging
import HTTPServer
import Synchronization
import Testing
import TestSupport
@testable import Gatehouse
import GatehouseEncoding

/// Issue 10 (outside security review), items 6, 7 and 10, through the running gateway.
@Suite("Gateway: auth hardening (issue 10)")
struct AuthHardeningTests {
    /// A well-formed session cookie value that names no session (what a sibling subdomain plants).
    static func plantedValue() -> String { SessionID.generate().cookieValue }

    // MARK: Item 7: several cookies of the session cookie's name

    @Test("A planted cookie of the same name sent before the real one does not hide the session (/user)")
    func plantedCookieBeforeRealOne() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let real = try await browser.login().sessionCookie
            let name = harness.cookieName
            // Browsers send the longer-path cookie first: a tossed `Path=/user` cookie comes before ours.
            let cookie = "\(name)=\(Self.plantedValue()); \(name)=\(real)"
            let user = try await harness.send("GET", "/user", headers: [("X-CSRF", "1"), ("Cookie", cookie)])
            #expect(user.status == 200)
            #expect(user.json?["sub"] as? String == "alice")
            // The same through two Cookie header fields.
            let split = try await harness.send("GET", "/user", headers: [
                ("X-CSRF", "1"), ("Cookie", "\(name)=\(Self.plantedValue())"), ("Cookie", "\(name)=\(real)"),
            ])
            #expect(split.status == 200)
        }
    }

    @Test("A planted cookie does not hide the session on API routes and logout either")
    func plantedCookieOnAPIAndLogout() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let real = try await browser.login().sessionCookie
            let name = harness.cookieName
            let cookie = "\(name)=\(Self.plantedValue()); \(name)=\(real)"
            let api = try await harness.send("GET", "/api/echo", headers: [("X-CSRF", "1"), ("Cookie", cookie)])
            #expect(api.status == 200)
            let logout = try await harness.send("POST", "/logout", headers: [("X-CSRF", "1"), ("Cookie", cookie)])
            #expect(logout.status == 302)
            #expect(try await browser.get("/user", csrf: true).status == 401, "the real session was the one ended")
        }
    }

    @Test("At most four values of the cookie are looked up per request")
    func candidatesAreBounded() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let real = try await browser.login().sessionCookie
            let name = harness.cookieName
            func cookie(planted: Int) -> String {
                ((0..<planted).map { _ in "\(name)=\(Self.plantedValue())" } + ["\(name)=\(real)"]).joined(separator: "; ")
            }
            #expect(SessionCache.maximumCookieCandidates == 4)
            let within = try await harness.send("GET", "/user", headers: [("X-CSRF", "1"), ("Cookie", cookie(planted: 3))])
            #expect(within.status == 200)
            let beyond = try await harness.send("GET", "/user", headers: [("X-CSRF", "1"), ("Cookie", cookie(planted: 4))])
            #expect(beyond.status == 401)
        }
    }

    @Test("One session cookie: sessionID(in:) looks nothing up (the caller's resolve is the only lookup)")
    func singleCookieCostsNoLookup() async throws {
        let store = CountingSessionStore()
        let resolver = SessionCache(store: store, configuration: try Self.configuration(), logger: Self.quiet)
        let id = SessionID.generate()
        let one = await resolver.sessionID(in: ["Cookie": "other=1; gatehouse=\(id.cookieValue); more=2"])
        #expect(one == id)
        #expect(store.loads.load(ordering: .relaxed) == 0)
        // Two values: each is checked until a live one is found.
        let live = SessionID.generate()
        _ = try store.createSession(NewSession(idHash: live.hash, sub: "s", sid: nil, claims: [],
                                               tokens: TokenSet(accessToken: "a", accessTokenExpiresAt: nil),
                                               createdAt: 0, idleExpiresAt: Int64.max / 2, expiresAt: Int64.max / 2))
        let two = await resolver.sessionID(in: ["Cookie": "gatehouse=\(id.cookieValue); gatehouse=\(live.cookieValue)"])
        #expect(two == live)
        #expect(store.loads.load(ordering: .relaxed) == 2)
    }

    // MARK: Item 6: the session gauge

    @Test("A /metrics scrape never reads the database: the gauge is the background count")
    func scrapeDoesNotCount() async throws {
        let store = CountingSessionStore()
        let context = try Self.context(store: store)
        context.metrics.activeSessions.set(7)
        let gateway = Gateway(context: context)
        let response = try #require(await gateway.answerNow(HTTPRequestHead(method: "GET", target: "/metrics")))
        #expect(String(decoding: response.body, as: UTF8.self).contains("gatehouse_active_sessions 7\n"))
        #expect(store.counts.load(ordering: .relaxed) == 0)
    }

    @Test("The gauge follows a login and a logout")
    func gaugeFollowsLoginAndLogout() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            #expect(try await Self.awaitGauge(harness, "gatehouse_active_sessions 0"))
            try await browser.login()
            #expect(try await Self.awaitGauge(harness, "gatehouse_active_sessions 1"))
            #expect(try await browser.send("POST", "/logout", csrf: true).status == 302)
            #expect(try await Self.awaitGauge(harness, "gatehouse_active_sessions 0"))
        }
    }

    // MARK: Item 10: Strict-Transport-Security

    @Test("On https every answer carries Strict-Transport-Security: ops, endpoints, static files, server errors")
    func hstsOnEveryAnswer() async throws {
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_PUBLIC_URL": "https://gatehouse.test"])) { harness in
            let expected = "max-age=31536000"
            for (method, target) in [("GET", "/healthz"), ("GET", "/metrics"), ("GET", "/user"), ("GET", "/login"),
                                     ("GET", "/"), ("GET", "/missing.png"), ("POST", "/user"), ("GET", "/api/echo")] {
                let response = try await harness.send(method, target)
                #expect(response.headers.values("Strict-Transport-Security") == [expected], "\(method) \(target)")
            }
            // An answer the HTTP server writes itself (a malformed request).
            let refused = try await harness.send("GET", "/", headers: [("Bad Name", "x")])
            #expect(refused.status == 400)
            #expect(refused.headers["Strict-Transport-Security"] == expected)
        }
    }

    @Test("GATEHOUSE_HSTS sets the value on https; off and plain http send none")
    func hstsConfigured() async throws {
        let custom = ["GATEHOUSE_PUBLIC_URL": "https://gatehouse.test", "GATEHOUSE_HSTS": "max-age=60; includeSubDomains"]
        try await GatewayHarness.with(HarnessOptions(environment: custom)) { harness in
            let health = try await harness.send("GET", "/healthz")
            #expect(health.headers["Strict-Transport-Security"] == "max-age=60; includeSubDomains")
        }
        let off = ["GATEHOUSE_PUBLIC_URL": "https://gatehouse.test", "GATEHOUSE_HSTS": "off"]
        try await GatewayHarness.with(HarnessOptions(environment: off)) { harness in
            let health = try await harness.send("GET", "/healthz")
            #expect(health.headers["Strict-Transport-Security"] == nil)
        }
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_HSTS": "max-age=60"])) { harness in
            let health = try await harness.send("GET", "/healthz")
            let user = try await harness.send("GET", "/user")
            #expect(health.headers["Strict-Transport-Security"] == nil)
            #expect(user.headers["Strict-Transport-Security"] == nil)
        }
    }

    // MARK: Support

    static let quiet = Logger(label: "gatehouse.test.auth") { _ in SwiftLogNoOpLogHandler() }

    static func configuration() throws -> GatehouseConfiguration {
        try GatehouseConfiguration.load(environment: [
            "GATEHOUSE_ISSUER": "http://127.0.0.1:9", "GATEHOUSE_CLIENT_ID": "c",
            "GATEHOUSE_SECRET_KEY": GatewayHarness.randomBase64(),
        ], requireSecretKey: true).get()
    }

    static func context(store: any SessionStore) throws -> GatewayContext {
        let configuration = try configuration()
        return GatewayContext(configuration: configuration,
                              providers: .only(ProviderConnection(configuration: configuration,
                                                                  http: HTTPProviderClient(timeout: 1), logger: quiet),
                                               configuration: configuration),
                              store: store, metrics: GatewayMetrics(), upstream: UpstreamClient(),
                              staticFiles: StaticFiles(root: NSTemporaryDirectory(), logger: quiet), logger: quiet)
    }

    /// Polls `/metrics` (bounded) until it contains `line`.
    static func awaitGauge(_ harness: GatewayHarness, _ line: String) async throws -> Bool {
        try await eventually { try await harness.send("GET", "/metrics").text.contains(line + "\n") }
    }
}

/// An in-memory store that counts the calls a test cares about.
final class CountingSessionStore: SessionStore {
    let inner = InMemorySessionStore()
    let loads = Atomic<Int>(0)
    let counts = Atomic<Int>(0)
    /// Runs at the start of every `loadSession` (on the store's thread), when set.
    let loadHook = Mutex<(@Sendable () -> Void)?>(nil)

    func createSession(_ new: NewSession, replacing oldIdHash: String?) throws(SessionStoreError) -> Session {
        try inner.createSession(new, replacing: oldIdHash)
    }
    func listSessions(sub: String, provider: String, now: Int64) throws(SessionStoreError) -> [UserSession] {
        try inner.listSessions(sub: sub, provider: provider, now: now)
    }
    func deleteSession(handle: String, sub: String, provider: String) throws(SessionStoreError) -> String? {
        try inner.deleteSession(handle: handle, sub: sub, provider: provider)
    }
    /// Runs after every `loadSession` has read (the row is in hand, not yet returned), when set.
    let loadedHook = Mutex<(@Sendable () -> Void)?>(nil)

    func loadSession(idHash: String, now: Int64) throws(SessionStoreError) -> Session? {
        loads.add(1, ordering: .relaxed)
        loadHook.withLock { $0 }?()
        let session = try inner.loadSession(idHash: idHash, now: now)
        loadedHook.withLock { $0 }?()
        return session
    }
    func touch(idHash: String, lastSeen: Int64, idleExpiresAt: Int64) throws(SessionStoreError) -> Bool {
        try inner.touch(idHash: idHash, lastSeen: lastSeen, idleExpiresAt: idleExpiresAt)
    }
    func updateTokens(idHash: String, expectedVersion: Int64, tokens: TokenSet, claims: [UInt8]?) throws(SessionStoreError) -> Bool {
        try inner.updateTokens(idHash: idHash, expectedVersion: expectedVersion, tokens: tokens, claims: claims)
    }
    func acquireRefreshLease(idHash: String, owner: String, now: Int64, duration: Int64) throws(SessionStoreError) -> Bool {
        try inner.acquireRefreshLease(idHash: idHash, owner: owner, now: now, duration: duration)
    }
    func releaseRefreshLease(idHash: String, owner: String) throws(SessionStoreError) {
        try inner.releaseRefreshLease(idHash: idHash, owner: owner)
    }
    func deleteSession(idHash: String) throws(SessionStoreError) -> Bool { try inner.deleteSession(idHash: idHash) }
    func deleteSessions(sub: String, provider: String) throws(SessionStoreError) -> Int {
        try inner.deleteSessions(sub: sub, provider: provider)
    }
    func deleteSessions(sid: String, provider: String) throws(SessionStoreError) -> Int {
        try inner.deleteSessions(sid: sid, provider: provider)
    }
    func deleteSessions(idPrefix: String) throws(SessionStoreError) -> Int { try inner.deleteSessions(idPrefix: idPrefix) }
    func listSessions(now: Int64) throws(SessionStoreError) -> [SessionSummary] { try inner.listSessions(now: now) }
    func countActiveSessions(now: Int64) throws(SessionStoreError) -> Int {
        counts.add(1, ordering: .relaxed)
        return try inner.countActiveSessions(now: now)
    }
    func savePendingLogin(_ login: PendingLogin) throws(SessionStoreError) { try inner.savePendingLogin(login) }
    func takePendingLogin(stateHash: String, now: Int64) throws(SessionStoreError) -> PendingLogin? {
        try inner.takePendingLogin(stateHash: stateHash, now: now)
    }
    func pendingLogin(stateHash: String, now: Int64) throws(SessionStoreError) -> PendingLogin? {
        try inner.pendingLogin(stateHash: stateHash, now: now)
    }
    func endSessions(forLogoutToken jti: String, expiresAt: Int64, matching match: LogoutTokenMatch) throws(SessionStoreError) -> Int? {
        try inner.endSessions(forLogoutToken: jti, expiresAt: expiresAt, matching: match)
    }
    func purgeExpired(now: Int64) throws(SessionStoreError) -> PurgeCounts { try inner.purgeExpired(now: now) }
    func ping() throws(SessionStoreError) {}
}

extension HTTPHandler {
    /// The answer the handler gives `head` without a task or a loop (`.now`), or nil.
    func answerNow(_ head: HTTPRequestHead) async -> HTTPResponse? {
        let writer = RecordingTLSWriter()
        await respond(to: HTTPRequest(head: head), writer: writer)
        return writer.snapshot.response
    }
}
