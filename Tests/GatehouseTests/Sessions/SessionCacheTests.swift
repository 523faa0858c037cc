import Dispatch
import EventLoops
import GatehouseCore
import GatehouseSessions
import HTTP1
import Logging
import Testing
import TestSupport
@testable import Gatehouse

/// The session door (`SessionCache`): ending a session deletes it in the store and drops it from the
/// cache in one call, so no caller can do one without the other (issue 11, "one door per concern").
@Suite("Sessions: the caching door (SessionCache)")
struct SessionCacheTests {
    let now: Int64 = 1_000_000

    /// On a manual clock: the cache's 0.5 s age passes only when a test advances it.
    static func cache(over store: any SessionStore, clock: ManualClock = ManualClock()) throws -> SessionCache {
        let configuration = try GatehouseConfiguration.load(environment: [
            "GATEHOUSE_ISSUER": "http://127.0.0.1:9", "GATEHOUSE_CLIENT_ID": "c",
            "GATEHOUSE_SECRET_KEY": GatewayHarness.randomBase64(),
        ], requireSecretKey: true).get()
        return SessionCache(store: store, configuration: configuration,
                            logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }, clock: clock)
    }

    @Test("A session deleted behind the cache's back is still served from the cache (why ending goes through it)")
    func cacheOutlivesBareDelete() async throws {
        let store = InMemorySessionStore()
        let sessions = try Self.cache(over: store)
        let session = try store.createSession(.make(now: now))
        #expect(try await sessions.resolve(idHash: session.idHash, now: now) != nil)
        _ = try store.deleteSession(idHash: session.idHash)
        #expect(try await sessions.resolve(idHash: session.idHash, now: now) != nil, "cached for up to 0.5 s")
    }

    @Test("endSession deletes the stored session and its cached copy at once")
    func endSessionDeletesAndForgets() async throws {
        let store = InMemorySessionStore()
        let sessions = try Self.cache(over: store)
        let session = try store.createSession(.make(now: now))
        #expect(try await sessions.resolve(idHash: session.idHash, now: now) != nil)
        try await sessions.endSession(idHash: session.idHash)
        #expect(try store.loadSession(idHash: session.idHash, now: now) == nil)
        #expect(try await sessions.resolve(idHash: session.idHash, now: now) == nil)
    }

    @Test("A session whose tokens came from another issuer than its provider's ends when read",
          arguments: [("http://127.0.0.1:9", true), (nil, true), ("https://other-idp.example", false)])
    func issuerRepointed(began: String?, kept: Bool) async throws {
        let store = InMemorySessionStore()
        let sessions = try Self.cache(over: store)
        var tokens = TokenSet.make()
        tokens.issuer = began
        let session = try store.createSession(.make(tokens: tokens, now: now))
        #expect((try await sessions.resolve(idHash: session.idHash, now: now) != nil) == kept)
        // Ended, not merely refused: the old issuer's refresh token is never sent to the new one.
        #expect((try store.loadSession(idHash: session.idHash, now: now) != nil) == kept)
    }

    /// A cache over a counting store whose first read of a fresh session is held — before the row
    /// is read, or after — until `proceed` is signalled; `first` is that resolve.
    private struct HeldRead {
        let store: CountingSessionStore
        let sessions: SessionCache
        let session: Session
        let proceed: DispatchSemaphore
        let first: Task<Session?, any Error>
    }

    private func heldRead(afterTheRow: Bool = false) async throws -> HeldRead {
        let store = CountingSessionStore()
        let sessions = try Self.cache(over: store)
        let session = try store.inner.createSession(.make(now: now))
        let reading = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0)
        let hold: @Sendable () -> Void = { reading.signal(); proceed.wait() }
        if afterTheRow { store.loadedHook.withLock { $0 = hold } } else { store.loadHook.withLock { $0 = hold } }
        let now = self.now
        let first = Task { try await sessions.resolve(idHash: session.idHash, now: now) }
        // Off the cooperative pool: two of these at once must not take both of its threads from
        // the read they wait for.
        _ = try await offPool { reading.wait() }
        store.loadHook.withLock { $0 = nil }
        store.loadedHook.withLock { $0 = nil }
        return HeldRead(store: store, sessions: sessions, session: session, proceed: proceed, first: first)
    }

    @Test("A refill that read the store before a logout does not put the session back in the cache")
    func refillRacingAnEnding() async throws {
        let held = try await heldRead()
        // The logout completes while the refill's read is under way.
        try await held.sessions.endSession(idHash: held.session.idHash)
        held.proceed.signal()
        _ = try await held.first.value
        let loadsBefore = held.store.loads.load(ordering: .relaxed)
        #expect(try await held.sessions.resolve(idHash: held.session.idHash, now: now) == nil,
                "the stale read is not cached: the ended session is refused at once")
        #expect(held.store.loads.load(ordering: .relaxed) == loadsBefore + 1)
    }

    @Test("Requests that miss the cache for one session at once share one store read")
    func concurrentMissesShareOneRead() async throws {
        let held = try await heldRead()
        let (sessions, idHash, now) = (held.sessions, held.session.idHash, self.now)
        // Eight more misses while the first read is under way (each would read the store itself).
        let others = (0..<8).map { _ in Task { try await sessions.resolve(idHash: idHash, now: now) } }
        try await Task.sleep(for: .milliseconds(150))
        held.proceed.signal()
        #expect(try await held.first.value != nil)
        for other in others { #expect(try await other.value != nil) }
        #expect(held.store.loads.load(ordering: .relaxed) == 1)
    }

    @Test("A request after a logout does not join a read that began before it")
    func noJoiningAcrossAnEnding() async throws {
        let held = try await heldRead(afterTheRow: true)
        try await held.sessions.endSession(idHash: held.session.idHash)
        // The first read holds the row as it was before the logout. Were the next request to join
        // that read, it would wait for it: let it finish.
        let proceed = held.proceed
        Task.detached { try? await Task.sleep(for: .milliseconds(200)); proceed.signal() }
        #expect(try await held.sessions.resolve(idHash: held.session.idHash, now: now) == nil,
                "sent after the logout was answered: refused, not answered from the earlier read")
        _ = try await held.first.value
    }

    @Test("endSessions(forLogoutToken:) ends exactly the matching sessions, cached or not")
    func endSessionsBySidAndSub() async throws {
        let store = InMemorySessionStore()
        let sessions = try Self.cache(over: store)
        let a = try store.createSession(.make(sub: "u1", sid: "s1", now: now))
        let b = try store.createSession(.make(sub: "u2", sid: "s2", now: now))
        let c = try store.createSession(.make(sub: "u3", sid: "s3", now: now))
        for s in [a, b, c] { #expect(try await sessions.resolve(idHash: s.idHash, now: now) != nil) }
        #expect(try await sessions.endSessions(forLogoutToken: "j1", expiresAt: now + 60, matching: .sid("s1")) == 1)
        #expect(try await sessions.resolve(idHash: a.idHash, now: now) == nil)
        #expect(try await sessions.endSessions(forLogoutToken: "j2", expiresAt: now + 60, matching: .sub("u2")) == 1)
        #expect(try await sessions.resolve(idHash: b.idHash, now: now) == nil)
        #expect(try await sessions.resolve(idHash: c.idHash, now: now) != nil)
    }

    @Test("A login replacing the browser's session drops the old one from the cache (id rotation)")
    func loginForgetsReplacedSession() async throws {
        let store = InMemorySessionStore()
        let sessions = try Self.cache(over: store)
        let old = try store.createSession(.make(now: now))
        #expect(try await sessions.resolve(idHash: old.idHash, now: now) != nil)
        let new = try await sessions.createSession(.make(now: now), replacing: old.idHash)
        #expect(try await sessions.resolve(idHash: old.idHash, now: now) == nil)
        #expect(try await sessions.resolve(idHash: new.idHash, now: now) != nil)
    }

    /// A cache on a manual clock over a store with two sessions; the first one's row is returned.
    private func twoSessions() throws -> (InMemorySessionStore, ManualClock, SessionCache, SessionID, SessionID, Session) {
        let store = InMemorySessionStore()
        let clock = ManualClock()
        let sessions = try Self.cache(over: store, clock: clock)
        let id = SessionID.generate(), other = SessionID.generate()
        let session = try store.createSession(.make(idHash: id.hash, now: now))
        _ = try store.createSession(.make(idHash: other.hash, now: now))
        return (store, clock, sessions, id, other, session)
    }

    @Test("The proxy's synchronous lookup answers only what the async one would: a fresh cached session under one cookie")
    func cachedResolution() async throws {
        let (_, clock, sessions, id, other, session) = try twoSessions()
        let name = sessions.cookieName
        let one: HTTPHeaders = ["Cookie": "\(name)=\(id.cookieValue)"]
        #expect(sessions.cachedResolution(in: one, now: now) == nil, "not cached yet: the async path loads it")
        #expect(try await sessions.resolveWithAuthorization(idHash: id.hash, now: now) != nil)
        let fast = try #require(sessions.cachedResolution(in: one, now: now + 5))
        #expect(fast.session.idHash == session.idHash && fast.authorization == "Bearer access-1")
        #expect(fast.idleExpiresAt == now + 5 + 3_600, "the idle timeout slides as on the async path")
        _ = try await sessions.resolveWithAuthorization(idHash: other.hash, now: now)
        let two: HTTPHeaders = ["Cookie": "\(name)=\(id.cookieValue); \(name)=\(other.cookieValue)"]
        #expect(sessions.cachedResolution(in: two, now: now) == nil, "several cookies: the async path picks the live one")
        #expect(sessions.cachedResolution(in: ["Cookie": "\(name)=nonsense"], now: now) == nil)
        #expect(sessions.cachedResolution(in: HTTPHeaders(), now: now) == nil)
        #expect(sessions.cachedResolution(in: one, now: now + 86_400) == nil, "expired: the async path ends it")
        clock.advance(seconds: 1)
        #expect(sessions.cachedResolution(in: one, now: now + 6) == nil, "older than 0.5 s: reloaded on the async path")
    }

    @Test("The proxy's bearer on an event loop: the loop's own copy, dropped at once when a session changes or ends")
    func loopBearer() async throws {
        let (store, _, sessions, id, other, session) = try twoSessions()
        let name = sessions.cookieName
        let one: HTTPHeaders = ["Cookie": "\(name)=\(id.cookieValue)"]
        let margin: Int64 = 60
        // Off the loops there is no copy: the shared entry answers, with the same token checks.
        #expect(sessions.cachedBearer(in: one, now: now, refreshMargin: margin) == nil, "not cached yet")
        _ = try await sessions.resolveWithAuthorization(idHash: id.hash, now: now)
        #expect(sessions.cachedBearer(in: one, now: now, refreshMargin: margin) == "Bearer access-1")

        let loop = try EventLoop(index: 0)
        loop.start()
        defer { loop.stopAndJoin() }
        let now = self.now
        let seen = try await Task(executorPreference: loop) { () async throws -> [String?] in
            var seen: [String?] = []
            seen.append(sessions.cachedBearer(in: one, now: now, refreshMargin: margin))      // copied
            seen.append(sessions.cachedBearer(in: one, now: now, refreshMargin: margin))      // from the copy
            // The token is due for a refresh 60 s before it expires (1,000,300): the async path.
            seen.append(sessions.cachedBearer(in: one, now: 1_000_240, refreshMargin: margin))
            // New tokens from this process: the next request has them, not the copy's.
            var refreshed = session
            refreshed.tokens = .make(access: "access-2")
            sessions.update(refreshed)
            seen.append(sessions.cachedBearer(in: one, now: now, refreshMargin: margin))
            // A later second slides the idle expiry on the shared entry.
            seen.append(sessions.cachedBearer(in: one, now: now + 7, refreshMargin: margin))
            let shared = try await sessions.resolveWithAuthorization(idHash: id.hash, now: now + 7, slide: false)
            seen.append(shared.map { "idle \($0.idleExpiresAt - now)" })
            // Ended in this process (a logout): refused at once, not after the 0.5 s of the entry.
            try await sessions.endSession(idHash: id.hash)
            seen.append(sessions.cachedBearer(in: one, now: now + 7, refreshMargin: margin))
            return seen
        }.value
        #expect(seen == ["Bearer access-1", "Bearer access-1", nil, "Bearer access-2", "Bearer access-2",
                         "idle 3607", nil])
        #expect(try store.loadSession(idHash: id.hash, now: now) == nil, "ended in the store too")
        // Another session's cookie on the same loop is its own entry.
        _ = try await sessions.resolveWithAuthorization(idHash: other.hash, now: now)
        let two: HTTPHeaders = ["Cookie": "\(name)=\(other.cookieValue)"]
        let otherBearer = await Task(executorPreference: loop) {
            sessions.cachedBearer(in: two, now: now, refreshMargin: margin)
        }.value
        #expect(otherBearer == "Bearer access-1")
    }

    @Test("Pending logins pass through the door once")
    func pendingLoginThroughTheDoor() async throws {
        let sessions = try Self.cache(over: InMemorySessionStore())
        let pending = PendingLogin.make(now: now)
        try await sessions.savePendingLogin(pending)
        #expect(try await sessions.takePendingLogin(stateHash: pending.stateHash, now: now) != nil)
        #expect(try await sessions.takePendingLogin(stateHash: pending.stateHash, now: now) == nil)
    }
}

extension SessionCache {
    /// The proxy's loop path as a request without a connection memo takes it.
    func cachedBearer(in headers: HTTPHeaders, now: Int64, refreshMargin: Int64) -> String? {
        cachedBearer(in: headers, loneKey: loneSessionCookieKey(in: headers), now: now, refreshMargin: refreshMargin)
    }
}
