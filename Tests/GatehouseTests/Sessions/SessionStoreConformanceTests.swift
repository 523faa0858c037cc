import Foundation
import GatehouseSessions
import Testing
import TestSupport

/// Which store a conformance test runs against.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case inMemory
    /// A fresh database on the shared test server (`PostgresTestServer.shared`).
    case postgres
    /// The same through PgBouncer in transaction mode, one server connection shared by all.
    case pgbouncer

    var testDescription: String { rawValue }
}

/// Runs `body` against a fresh, migrated store of `kind` (the SQLite one in a temp directory).
func withStore(_ kind: StoreKind, _ body: (any SessionStore) throws -> Void) throws {
    switch kind {
    case .inMemory:
        try body(InMemorySessionStore())
    case .sqlite:
        try withTemporaryDirectory { dir in
            let store = try SQLiteSessionStore(path: dir + "/sessions.sqlite", sealer: try testSealer(), logger: quietLogger)
            try store.migrate()
            defer { try? store.close() }
            try body(store)
        }
    case .postgres, .pgbouncer:
        let store = PostgresSessionStore(pool: PostgresConnectionPool(uri: try freshPostgresDatabase(throughPgBouncer: kind == .pgbouncer)),
                                         sealer: try testSealer(), logger: quietLogger)
        try store.migrate()
        defer { try? store.close() }
        try body(store)
    }
}

/// The URI of an empty database on the shared test server. Fails (never skips) when PostgreSQL
/// cannot be started, e.g. its binaries are missing.
func freshPostgresDatabase(throughPgBouncer: Bool = false) throws -> String {
    if throughPgBouncer {
        return try PostgresTestServer.sharedBehindPgBouncer.get().createDatabase(throughPgBouncer: true)
    }
    return try PostgresTestServer.shared.get().createDatabase()
}

// One suite per store role (after oauth2-proxy's RunSessionStoreTests), each run against every store:
// a new engine passes the role suites of the protocols it implements. Expiry is tested by passing
// `now`, never by sleeping. The sessions role is set up through itself; the others create sessions
// through the sessions role where they need some.

/// `SessionRecordStore`: one session's life on the request path.
@Suite("SessionStore conformance: sessions (SessionRecordStore)")
struct SessionRecordStoreConformanceTests {
    let t0: Int64 = 1_000_000

    // MARK: create / load

    @Test("A created session loads back with its tokens, claims, sid, clocks and version 1", arguments: StoreKind.allCases)
    func createAndLoad(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let new = NewSession.make(now: t0)
            let created = try store.createSession(new, replacing: nil)
            #expect(created.version == 1)
            #expect(created.lastSeenAt == t0)
            let loaded = try #require(try store.loadSession(idHash: new.idHash, now: t0 + 1))
            #expect(loaded == created)
            #expect(loaded.tokens == new.tokens)
            #expect(loaded.claims == new.claims)
            #expect(loaded.sid == "sid-1")
        }
    }

    @Test("A session without sid, refresh token or ID token round-trips", arguments: StoreKind.allCases)
    func minimalSession(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let new = NewSession.make(sid: nil, claims: "{}",
                                      tokens: TokenSet(accessToken: "a", accessTokenExpiresAt: nil), now: t0)
            let created = try store.createSession(new)
            #expect(try store.loadSession(idHash: new.idHash, now: t0) == created)
        }
    }

    @Test("An unknown id loads as nil", arguments: StoreKind.allCases)
    func loadMissing(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            #expect(try store.loadSession(idHash: SessionID.generate().hash, now: t0) == nil)
        }
    }

    @Test("Creating with `replacing:` deletes the browser's previous session (id rotation at login)", arguments: StoreKind.allCases)
    func replacingDeletesOld(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let old = try store.createSession(.make(now: t0))
            let other = try store.createSession(.make(now: t0))
            let new = try store.createSession(.make(now: t0 + 5), replacing: old.idHash)
            #expect(try store.loadSession(idHash: old.idHash, now: t0 + 6) == nil)
            #expect(try store.loadSession(idHash: new.idHash, now: t0 + 6) != nil)
            #expect(try store.loadSession(idHash: other.idHash, now: t0 + 6) != nil)
        }
    }

    @Test("Creating a session whose id already exists fails and changes nothing", arguments: StoreKind.allCases)
    func duplicateIdFails(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let first = try store.createSession(.make(now: t0))
            let previous = try store.createSession(.make(now: t0))
            #expect(throws: SessionStoreError.self) {
                try store.createSession(.make(idHash: first.idHash, sub: "intruder", now: t0), replacing: previous.idHash)
            }
            #expect(try store.loadSession(idHash: first.idHash, now: t0)?.sub == "user-1")
            #expect(try store.loadSession(idHash: previous.idHash, now: t0) != nil)
        }
    }

    // MARK: expiry

    @Test("At its idle deadline a session is gone, and the expired row is deleted", arguments: StoreKind.allCases)
    func idleExpiry(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let s = try store.createSession(.make(now: t0, idle: 60))
            #expect(try store.loadSession(idHash: s.idHash, now: t0 + 59) != nil)
            #expect(try store.loadSession(idHash: s.idHash, now: t0 + 60) == nil)
            // Deleted, not just hidden: even an earlier clock no longer finds it.
            #expect(try store.loadSession(idHash: s.idHash, now: t0) == nil)
        }
    }

    @Test("At its absolute deadline a session is gone even if it was just used", arguments: StoreKind.allCases)
    func absoluteExpiry(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let s = try store.createSession(.make(now: t0, idle: 60, lifetime: 100))
            #expect(try store.touch(idHash: s.idHash, lastSeen: t0 + 50, idleExpiresAt: t0 + 110))
            let touched = try #require(try store.loadSession(idHash: s.idHash, now: t0 + 99))
            #expect(touched.idleExpiresAt == t0 + 100, "idle deadline is capped at the absolute one")
            #expect(try store.loadSession(idHash: s.idHash, now: t0 + 100) == nil)
        }
    }

    @Test("touch slides the idle timeout and records last use; unknown ids report false", arguments: StoreKind.allCases)
    func touchSlides(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let s = try store.createSession(.make(now: t0, idle: 60))
            #expect(try store.touch(idHash: s.idHash, lastSeen: t0 + 50, idleExpiresAt: t0 + 110))
            let loaded = try #require(try store.loadSession(idHash: s.idHash, now: t0 + 100))
            #expect(loaded.lastSeenAt == t0 + 50)
            #expect(loaded.idleExpiresAt == t0 + 110)
            #expect(try store.touch(idHash: SessionID.generate().hash, lastSeen: t0, idleExpiresAt: t0 + 1) == false)
        }
    }

    // MARK: token updates (compare-and-swap)

    @Test("updateTokens succeeds once per version; a stale version loses", arguments: StoreKind.allCases)
    func compareAndSwap(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let s = try store.createSession(.make(now: t0))
            let refreshed = TokenSet.make(access: "access-2", refresh: "refresh-2", expiresAt: t0 + 600)
            #expect(try store.updateTokens(idHash: s.idHash, expectedVersion: 1, tokens: refreshed))
            #expect(try store.updateTokens(idHash: s.idHash, expectedVersion: 1, tokens: .make(access: "late")) == false)
            let loaded = try #require(try store.loadSession(idHash: s.idHash, now: t0))
            #expect(loaded.version == 2)
            #expect(loaded.tokens == refreshed)
            #expect(loaded.claims == s.claims, "claims are kept when not given")
        }
    }

    @Test("updateTokens with claims replaces them too", arguments: StoreKind.allCases)
    func updateClaims(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let s = try store.createSession(.make(now: t0))
            let claims = Array(#"{"sub":"user-1","email":"new@example.com"}"#.utf8)
            #expect(try store.updateTokens(idHash: s.idHash, expectedVersion: 1, tokens: .make(access: "a2"), claims: claims))
            #expect(try store.loadSession(idHash: s.idHash, now: t0)?.claims == claims)
        }
    }

    @Test("updateTokens on a missing session reports false", arguments: StoreKind.allCases)
    func updateMissing(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            #expect(try store.updateTokens(idHash: SessionID.generate().hash, expectedVersion: 1, tokens: .make()) == false)
            #expect(try store.updateTokens(idHash: SessionID.generate().hash, expectedVersion: 1, tokens: .make(),
                                           claims: []) == false)
        }
    }

    // MARK: refresh lease

    @Test("A refresh lease has one owner until it expires or is released", arguments: StoreKind.allCases)
    func lease(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let s = try store.createSession(.make(now: t0))
            #expect(try store.acquireRefreshLease(idHash: s.idHash, owner: "A", now: t0, duration: 30))
            #expect(try store.acquireRefreshLease(idHash: s.idHash, owner: "B", now: t0 + 10, duration: 30) == false)
            #expect(try store.acquireRefreshLease(idHash: s.idHash, owner: "A", now: t0 + 10, duration: 30),
                    "the owner may re-acquire (extend) its own lease")
            #expect(try store.acquireRefreshLease(idHash: s.idHash, owner: "B", now: t0 + 39, duration: 30) == false)
            #expect(try store.acquireRefreshLease(idHash: s.idHash, owner: "B", now: t0 + 40, duration: 30),
                    "an expired lease can be taken over")
            try store.releaseRefreshLease(idHash: s.idHash, owner: "A")
            #expect(try store.acquireRefreshLease(idHash: s.idHash, owner: "C", now: t0 + 41, duration: 30) == false,
                    "releasing someone else's lease does nothing")
            try store.releaseRefreshLease(idHash: s.idHash, owner: "B")
            #expect(try store.acquireRefreshLease(idHash: s.idHash, owner: "C", now: t0 + 41, duration: 30))
        }
    }

    @Test("No lease on a missing session; absurd durations do not trap", arguments: StoreKind.allCases)
    func leaseEdgeCases(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            #expect(try store.acquireRefreshLease(idHash: SessionID.generate().hash, owner: "A", now: t0, duration: 30) == false)
            let s = try store.createSession(.make(now: t0))
            #expect(try store.acquireRefreshLease(idHash: s.idHash, owner: "A", now: Int64.max - 1, duration: Int64.max))
            #expect(try store.acquireRefreshLease(idHash: s.idHash, owner: "B", now: Int64.max - 1, duration: 1) == false)
        }
    }

    // MARK: deletion

    @Test("deleteSession reports whether it deleted", arguments: StoreKind.allCases)
    func deleteOne(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let s = try store.createSession(.make(now: t0))
            #expect(try store.deleteSession(idHash: s.idHash))
            #expect(try store.deleteSession(idHash: s.idHash) == false)
            #expect(try store.loadSession(idHash: s.idHash, now: t0) == nil)
        }
    }

    @Test("deleteSessions(sub:) and (sid:) delete exactly the matching sessions", arguments: StoreKind.allCases)
    func deleteBySubAndSid(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let a1 = try store.createSession(.make(sub: "alice", sid: "s1", now: t0))
            _ = try store.createSession(.make(sub: "alice", sid: "s2", now: t0))
            let b = try store.createSession(.make(sub: "bob", sid: "s3", now: t0))
            let b2 = try store.createSession(.make(sub: "bob", sid: nil, now: t0))
            #expect(try store.deleteSessions(sub: "alice") == 2)
            #expect(try store.loadSession(idHash: a1.idHash, now: t0) == nil)
            #expect(try store.deleteSessions(sid: "s3") == 1)
            #expect(try store.loadSession(idHash: b.idHash, now: t0) == nil)
            #expect(try store.deleteSessions(sid: "s3") == 0)
            #expect(try store.loadSession(idHash: b2.idHash, now: t0) != nil)
            #expect(try store.countActiveSessions(now: t0) == 1)
        }
    }

    @Test("A session keeps its provider; sub, sid and logout tokens of one provider leave another's alone",
          arguments: StoreKind.allCases)
    func providerScoped(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            var atGoogle = NewSession.make(sub: "123", sid: "shared-sid", now: t0)
            atGoogle.provider = "google"
            let google = try store.createSession(atGoogle)
            var atCorp = NewSession.make(sub: "123", sid: "shared-sid", now: t0)
            atCorp.provider = "corp"
            let corp = try store.createSession(atCorp)
            let old = try store.createSession(.make(sub: "123", sid: "shared-sid", now: t0))
            #expect(try store.loadSession(idHash: google.idHash, now: t0)?.provider == "google")
            #expect(try store.loadSession(idHash: old.idHash, now: t0)?.provider == "default")
            #expect(Set(try store.listSessions(now: t0).map(\.provider)) == ["google", "corp", "default"])
            #expect(try store.deleteSessions(sub: "123", provider: "google") == 1)
            #expect(try store.loadSession(idHash: corp.idHash, now: t0) != nil)
            #expect(try store.endSessions(forLogoutToken: "jti-1", expiresAt: t0 + 60, matching: .sid("shared-sid", provider: "corp")) == 1)
            #expect(try store.loadSession(idHash: old.idHash, now: t0) != nil, "default's session, same sid, stays")
            // Two providers may issue the same jti: each is its own, and a replay within one is refused.
            #expect(try store.endSessions(forLogoutToken: "jti-1", expiresAt: t0 + 60, matching: .sid("x", provider: "google")) == 0)
            #expect(try store.endSessions(forLogoutToken: "jti-1", expiresAt: t0 + 60, matching: .sid("x", provider: "corp")) == nil)
            #expect(try store.deleteSessions(sid: "shared-sid") == 1)
        }
    }
}

/// `PendingLoginStore`: the state between /login and /callback.
@Suite("SessionStore conformance: pending logins (PendingLoginStore)")
struct PendingLoginStoreConformanceTests {
    let t0: Int64 = 1_000_000

    @Test("A pending login is returned once, with its verifier, nonce, return path, provider and claim checks",
          arguments: StoreKind.allCases)
    func pendingLoginOnce(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            var login = PendingLogin.make(now: t0)
            login.provider = "corp"
            login.requiredClaims = ["org_id": "org_1"]
            try store.savePendingLogin(login)
            #expect(try store.takePendingLogin(stateHash: login.stateHash, now: t0 + 1) == login)
            #expect(try store.takePendingLogin(stateHash: login.stateHash, now: t0 + 2) == nil, "usable once")
        }
    }

    @Test("A pending login is read in place (its request object served) until it is taken or expires",
          arguments: StoreKind.allCases)
    func pendingLoginRead(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            var login = PendingLogin.make(now: t0)
            login.requestObject = "eyJhbGciOiJSUzI1NiJ9.eyJzdGF0ZSI6InMifQ.c2ln"
            try store.savePendingLogin(login)
            #expect(try store.pendingLogin(stateHash: login.stateHash, now: t0 + 1)?.requestObject == login.requestObject)
            #expect(try store.pendingLogin(stateHash: login.stateHash, now: t0 + 2) == login, "reading leaves it")
            #expect(try store.pendingLogin(stateHash: login.stateHash, now: login.expiresAt) == nil, "expired")
            #expect(try store.pendingLogin(stateHash: SecretHash.hex(of: "unknown"), now: t0) == nil)
            #expect(try store.takePendingLogin(stateHash: login.stateHash, now: t0 + 3) == login)
            #expect(try store.pendingLogin(stateHash: login.stateHash, now: t0 + 4) == nil, "taken")
        }
    }

    @Test("An expired pending login is nil and consumed", arguments: StoreKind.allCases)
    func pendingLoginExpired(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let login = PendingLogin.make(now: t0)
            try store.savePendingLogin(login)
            #expect(try store.takePendingLogin(stateHash: login.stateHash, now: login.expiresAt) == nil)
            #expect(try store.takePendingLogin(stateHash: login.stateHash, now: t0) == nil)
        }
    }

    @Test("Several pending logins (tabs) coexist; unknown state is nil", arguments: StoreKind.allCases)
    func severalPendingLogins(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let a = PendingLogin.make(now: t0, returnTo: "/a")
            let b = PendingLogin.make(now: t0, returnTo: "/b")
            try store.savePendingLogin(a)
            try store.savePendingLogin(b)
            #expect(try store.takePendingLogin(stateHash: SecretHash.hex(of: "unknown"), now: t0) == nil)
            #expect(try store.takePendingLogin(stateHash: b.stateHash, now: t0)?.returnTo == "/b")
            #expect(try store.takePendingLogin(stateHash: a.stateHash, now: t0)?.returnTo == "/a")
        }
    }
}

/// `LogoutReplayCache`: back-channel logout `jti`s.
@Suite("SessionStore conformance: replay cache (LogoutReplayCache)")
struct LogoutReplayCacheConformanceTests {
    let t0: Int64 = 1_000_000

    @Test("A logout token jti is accepted once", arguments: StoreKind.allCases)
    func logoutJTIReplay(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            #expect(try store.recordJTI("jti-1", expiresAt: t0 + 300))
            #expect(try store.recordJTI("jti-1", expiresAt: t0 + 300) == false)
            #expect(try store.recordJTI("jti-2", expiresAt: t0 + 300))
        }
    }

    @Test("A logout token ends the sessions it names with its jti, once", arguments: StoreKind.allCases)
    func logoutTokenEndsItsSessions(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let a = try store.createSession(.make(sub: "u1", sid: "s1", now: t0))
            let b = try store.createSession(.make(sub: "u1", sid: "s2", now: t0))
            let c = try store.createSession(.make(sub: "u2", sid: "s3", now: t0))
            #expect(try store.endSessions(forLogoutToken: "j1", expiresAt: t0 + 300, matching: .sid("s1")) == 1)
            #expect(try store.loadSession(idHash: a.idHash, now: t0) == nil)
            #expect(try store.loadSession(idHash: b.idHash, now: t0) != nil)
            #expect(try store.endSessions(forLogoutToken: "j1", expiresAt: t0 + 300, matching: .sub("u1")) == nil,
                    "a replayed jti deletes nothing")
            #expect(try store.loadSession(idHash: b.idHash, now: t0) != nil)
            #expect(try store.endSessions(forLogoutToken: "j2", expiresAt: t0 + 300, matching: .sub("u1")) == 1)
            #expect(try store.loadSession(idHash: b.idHash, now: t0) == nil)
            #expect(try store.loadSession(idHash: c.idHash, now: t0) != nil)
        }
    }
}

/// `SessionAdministration`: list, revoke, count, purge, ping.
@Suite("SessionStore conformance: administration (SessionAdministration)")
struct SessionAdministrationConformanceTests {
    let t0: Int64 = 1_000_000

    @Test("deleteSessions(idPrefix:) deletes one session by the prefix `sessions list` shows", arguments: StoreKind.allCases)
    func deleteByPrefix(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let s = try store.createSession(.make(now: t0))
            let other = try store.createSession(.make(now: t0))
            let shown = try #require(try store.listSessions(now: t0).first { s.idHash.hasPrefix($0.idPrefix) })
            #expect(try store.deleteSessions(idPrefix: shown.idPrefix.uppercased()) == 1)
            #expect(try store.loadSession(idHash: s.idHash, now: t0) == nil)
            #expect(try store.loadSession(idHash: other.idHash, now: t0) != nil)
            #expect(try store.deleteSessions(idPrefix: s.idHash) == 0)
        }
    }

    @Test("An ambiguous prefix deletes nothing", arguments: StoreKind.allCases)
    func ambiguousPrefix(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let common = "abcdef01"
            let one = try store.createSession(.make(idHash: common + String(repeating: "1", count: 56), now: t0))
            let two = try store.createSession(.make(idHash: common + String(repeating: "2", count: 56), now: t0))
            #expect(throws: SessionStoreError.ambiguousIDPrefix(prefix: common, matches: 2)) {
                try store.deleteSessions(idPrefix: common)
            }
            #expect(try store.countActiveSessions(now: t0) == 2)
            #expect(try store.deleteSessions(idPrefix: common + "2") == 1)
            #expect(try store.loadSession(idHash: one.idHash, now: t0) != nil)
            #expect(try store.loadSession(idHash: two.idHash, now: t0) == nil)
        }
    }

    @Test("A prefix shorter than 8 or not hex is refused",
          arguments: StoreKind.allCases, ["", "abc", "abcdef0", "abcdefgh", "abcdef0%", "abcdef0_", String(repeating: "a", count: 65)])
    func invalidPrefix(kind: StoreKind, prefix: String) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            _ = try store.createSession(.make(now: t0))
            #expect(throws: SessionStoreError.self) { try store.deleteSessions(idPrefix: prefix) }
            #expect(try store.countActiveSessions(now: t0) == 1)
        }
    }

    // MARK: listing

    @Test("listSessions shows active sessions oldest first, with an 8-character id prefix and no tokens", arguments: StoreKind.allCases)
    func list(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let second = try store.createSession(.make(sub: "second", now: t0 + 10))
            let first = try store.createSession(.make(sub: "first", now: t0))
            _ = try store.createSession(.make(sub: "expired", now: t0 - 100, idle: 50))
            let list = try store.listSessions(now: t0 + 20)
            #expect(list.map(\.sub) == ["first", "second"])
            #expect(list.map(\.idPrefix) == [String(first.idHash.prefix(8)), String(second.idHash.prefix(8))])
            #expect(list[0] == SessionSummary(idPrefix: String(first.idHash.prefix(8)), sub: "first", createdAt: t0,
                                              lastSeenAt: t0, idleExpiresAt: t0 + 3_600, expiresAt: t0 + 86_400))
            #expect(try store.countActiveSessions(now: t0 + 20) == 2)
            #expect(try store.countActiveSessions(now: t0 + 86_400) == 0)
        }
    }

    @Test("purgeExpired removes exactly the expired rows of each kind", arguments: StoreKind.allCases)
    func purge(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in
            let live = try store.createSession(.make(now: t0))
            _ = try store.createSession(.make(now: t0 - 200, idle: 100))   // idle-expired
            _ = try store.createSession(.make(now: t0 - 200, idle: 1_000, lifetime: 150))  // past lifetime
            let livePending = PendingLogin.make(now: t0)
            try store.savePendingLogin(livePending)
            try store.savePendingLogin(.make(now: t0 - 1_000))
            #expect(try store.recordJTI("old", expiresAt: t0 - 1))
            #expect(try store.recordJTI("new", expiresAt: t0 + 1))
            #expect(try store.purgeExpired(now: t0) == PurgeCounts(sessions: 2, pendingLogins: 1, logoutJTIs: 1))
            #expect(try store.purgeExpired(now: t0) == PurgeCounts())
            #expect(try store.loadSession(idHash: live.idHash, now: t0) != nil)
            #expect(try store.takePendingLogin(stateHash: livePending.stateHash, now: t0) != nil)
            #expect(try store.recordJTI("old", expiresAt: t0 + 5), "a purged jti record is gone")
            #expect(try store.recordJTI("new", expiresAt: t0 + 5) == false)
        }
    }

    @Test("ping succeeds on a working store", arguments: StoreKind.allCases)
    func ping(kind: StoreKind) throws {
        try withStore(kind) { (store: any SessionStore) throws in try store.ping() }
    }
}

extension LogoutReplayCache {
    /// Records a `jti` alone (a logout token naming no stored session).
    func recordJTI(_ jti: String, expiresAt: Int64) throws(SessionStoreError) -> Bool {
        try endSessions(forLogoutToken: jti, expiresAt: expiresAt, matching: .sub("no-such-user")) != nil
    }
}
