import Foundation
import GatehouseSessions
import Synchronization
import Testing

@Suite("SQLiteSessionStore (at rest, several connections, threads)")
struct SQLiteSessionStoreTests {
    let t0: Int64 = 1_000_000

    private func openStore(_ path: String, sealer: TokenSealer? = nil) throws -> SQLiteSessionStore {
        let store = try SQLiteSessionStore(path: path, sealer: try sealer ?? testSealer(), logger: quietLogger)
        try store.migrate()
        return store
    }

    @Test("Neither the database file nor its -wal holds the cookie value, tokens, claims, verifier, nonce or state")
    func noPlaintextAtRest() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/rest.sqlite"
            let store = try openStore(path)
            let id = SessionID.generate()
            let tokens = TokenSet(accessToken: "AT-PLAINTEXT-9f8e7d", refreshToken: "RT-PLAINTEXT-6c5b4a",
                                  idToken: "IDT-PLAINTEXT-3a2b1c", accessTokenExpiresAt: t0 + 300)
            _ = try store.createSession(.make(idHash: id.hash, claims: #"{"email":"CLAIM-PLAINTEXT@example.com"}"#,
                                              tokens: tokens, now: t0), replacing: nil)
            #expect(try store.updateTokens(idHash: id.hash, expectedVersion: 1,
                                           tokens: TokenSet(accessToken: "AT2-PLAINTEXT-0a0b0c", refreshToken: "RT2-PLAINTEXT-1d1e1f")))
            let state = "STATE-PLAINTEXT-5e6f7a"
            try store.savePendingLogin(.make(state: state, now: t0, verifier: "VERIFIER-PLAINTEXT-8b9c0d",
                                             nonce: "NONCE-PLAINTEXT-2e3f4a", returnTo: "/RETURN-PLAINTEXT"))
            #expect(try store.endSessions(forLogoutToken: "JTI-PLAINTEXT-7a7a7a", expiresAt: t0 + 60, matching: .sub("nobody")) == 0)

            let secrets = [id.cookieValue, "AT-PLAINTEXT", "RT-PLAINTEXT", "IDT-PLAINTEXT", "AT2-PLAINTEXT",
                           "RT2-PLAINTEXT", "CLAIM-PLAINTEXT", state, "VERIFIER-PLAINTEXT", "NONCE-PLAINTEXT",
                           "RETURN-PLAINTEXT", "JTI-PLAINTEXT"]
            let wal = fileBytes(path + "-wal")
            let main = fileBytes(path)
            #expect(!wal.isEmpty, "the writes are still in the WAL, so it is checked too")
            #expect(bytes(wal + main, contain: id.hash), "sanity: the id hash is what is stored")
            for secret in secrets {
                #expect(!bytes(wal, contain: secret), "\(secret.prefix(12)) found in -wal")
                #expect(!bytes(main, contain: secret), "\(secret.prefix(12)) found in the database file")
            }
            try store.close()
            let checkpointed = fileBytes(path)
            for secret in secrets {
                #expect(!bytes(checkpointed, contain: secret), "\(secret.prefix(12)) found after checkpoint")
            }
        }
    }

    @Test("Two stores on one file (two connections) see each other's writes; CAS lets one token update win")
    func twoConnectionsCompareAndSwap() throws {
        try withTemporaryDirectory { dir in
            let a = try openStore(dir + "/shared.sqlite")
            let b = try openStore(dir + "/shared.sqlite")
            defer { try? a.close(); try? b.close() }
            let s = try a.createSession(.make(now: t0))
            let seenByB = try #require(try b.loadSession(idHash: s.idHash, now: t0))
            #expect(seenByB.version == 1)
            #expect(try a.updateTokens(idHash: s.idHash, expectedVersion: 1, tokens: .make(access: "from-a")))
            #expect(try b.updateTokens(idHash: s.idHash, expectedVersion: seenByB.version, tokens: .make(access: "from-b")) == false)
            #expect(try b.loadSession(idHash: s.idHash, now: t0)?.tokens.accessToken == "from-a")
        }
    }

    @Test("Two stores on one file share the refresh lease")
    func twoConnectionsLease() throws {
        try withTemporaryDirectory { dir in
            let a = try openStore(dir + "/lease.sqlite")
            let b = try openStore(dir + "/lease.sqlite")
            defer { try? a.close(); try? b.close() }
            let s = try a.createSession(.make(now: t0))
            #expect(try a.acquireRefreshLease(idHash: s.idHash, owner: "process-a", now: t0, duration: 30))
            #expect(try b.acquireRefreshLease(idHash: s.idHash, owner: "process-b", now: t0 + 1, duration: 30) == false)
            try a.releaseRefreshLease(idHash: s.idHash, owner: "process-a")
            #expect(try b.acquireRefreshLease(idHash: s.idHash, owner: "process-b", now: t0 + 2, duration: 30))
        }
    }

    @Test("Racing for one lease from many threads on two connections: exactly one winner")
    func leaseRace() throws {
        try withTemporaryDirectory { dir in
            let stores = [try openStore(dir + "/race.sqlite"), try openStore(dir + "/race.sqlite")]
            defer { for store in stores { try? store.close() } }
            let s = try stores[0].createSession(.make(now: t0))
            let counts = LockedCounts()
            DispatchQueue.concurrentPerform(iterations: 16) { worker in
                do {
                    let won = try stores[worker % 2].acquireRefreshLease(idHash: s.idHash, owner: "worker-\(worker)",
                                                                         now: t0, duration: 30)
                    counts.add(won ? 1 : 0)
                } catch {
                    counts.fail("\(error)")
                }
            }
            #expect(counts.failures == [])
            #expect(counts.total == 1)
        }
    }

    @Test("Many threads on two connections create, load, touch, update and delete without SQLITE_BUSY leaking")
    func concurrentAccess() throws {
        try withTemporaryDirectory { dir in
            let stores = [try openStore(dir + "/busy.sqlite"), try openStore(dir + "/busy.sqlite")]
            defer { for store in stores { try? store.close() } }
            let counts = LockedCounts()
            DispatchQueue.concurrentPerform(iterations: 8) { worker in
                let store = stores[worker % 2]
                do {
                    for round in 0..<40 {
                        let now = t0 + Int64(round)
                        let s = try store.createSession(.make(sub: "user-\(worker)", now: now))
                        guard let loaded = try store.loadSession(idHash: s.idHash, now: now) else {
                            counts.fail("session vanished")
                            continue
                        }
                        try store.touch(idHash: s.idHash, lastSeen: now, idleExpiresAt: now + 60)
                        if try store.acquireRefreshLease(idHash: s.idHash, owner: "w\(worker)", now: now, duration: 5) {
                            _ = try store.updateTokens(idHash: s.idHash, expectedVersion: loaded.version,
                                                       tokens: .make(access: "a\(round)"))
                            try store.releaseRefreshLease(idHash: s.idHash, owner: "w\(worker)")
                        }
                        _ = try store.countActiveSessions(now: now)
                        if round.isMultiple(of: 2) { try store.deleteSession(idHash: s.idHash) }
                        counts.add(1)
                    }
                } catch {
                    counts.fail("\(error)")
                }
            }
            #expect(counts.failures == [])
            #expect(counts.total == 8 * 40)
            #expect(try stores[1].countActiveSessions(now: t0) == 8 * 20)
        }
    }

    @Test("After a key rotation, sessions sealed under the previous key still load; under an unknown key they are absent, not deleted")
    func keyRotation() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/keys.sqlite"
            let old = try openStore(path, sealer: try testSealer(1))
            let s = try old.createSession(.make(now: t0))
            let login = PendingLogin.make(now: t0)
            try old.savePendingLogin(login)
            try old.close()

            let rotated = try openStore(path, sealer: try testSealer(2, previous: 1))
            #expect(try rotated.loadSession(idHash: s.idHash, now: t0)?.tokens == s.tokens)
            #expect(try rotated.updateTokens(idHash: s.idHash, expectedVersion: 1, tokens: .make(access: "resealed")))
            try rotated.close()

            let unrelated = try openStore(path, sealer: try testSealer(3))
            #expect(try unrelated.loadSession(idHash: s.idHash, now: t0) == nil)
            #expect(try unrelated.countActiveSessions(now: t0) == 1, "the row is kept: restoring the key brings it back")
            #expect(try unrelated.takePendingLogin(stateHash: login.stateHash, now: t0) == nil)
            try unrelated.close()

            let current = try openStore(path, sealer: try testSealer(2))
            defer { try? current.close() }
            #expect(try current.loadSession(idHash: s.idHash, now: t0)?.tokens.accessToken == "resealed")
        }
    }

    @Test("A sealed blob copied into another session's row does not open there")
    func movedBlobDoesNotOpen() throws {
        try withTemporaryDirectory { dir in
            let store = try openStore(dir + "/moved.sqlite")
            defer { try? store.close() }
            let victim = try store.createSession(.make(sub: "victim", tokens: .make(access: "victim-token"), now: t0))
            let attacker = try store.createSession(.make(sub: "attacker", now: t0))
            try store.database.withConnection { (conn: SQLiteConnection) throws(SQLiteError) in
                try conn.run("UPDATE sessions SET sealed = (SELECT sealed FROM sessions WHERE id_hash = ?) WHERE id_hash = ?",
                             [.text(victim.idHash), .text(attacker.idHash)])
            }
            #expect(try store.loadSession(idHash: attacker.idHash, now: t0) == nil)
            #expect(try store.loadSession(idHash: victim.idHash, now: t0)?.tokens.accessToken == "victim-token")
        }
    }

    @Test("ping fails on an unmigrated database and after close")
    func pingReadiness() throws {
        try withTemporaryDirectory { dir in
            let store = try SQLiteSessionStore(path: dir + "/ping.sqlite", sealer: try testSealer(), logger: quietLogger)
            #expect(throws: SessionStoreError.self) { try store.ping() }
            try store.migrate()
            try store.ping()
            try store.close()
            #expect(throws: SessionStoreError.self) { try store.ping() }
        }
    }

    @Test("The key-less maintenance view lists, revokes and purges sessions written by the store")
    func maintenanceWithoutKey() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/ops.sqlite"
            let store = try openStore(path)
            defer { try? store.close() }
            let alice = try store.createSession(.make(sub: "alice", now: t0))
            _ = try store.createSession(.make(sub: "bob", now: t0))
            _ = try store.createSession(.make(sub: "bob", now: t0 + 1))

            let ops = try SQLiteSessionMaintenance(path: path, logger: quietLogger)
            defer { try? ops.close() }
            #expect(try ops.migrate() == [])
            try ops.ping()
            #expect(try ops.listSessions(now: t0 + 2).map(\.sub).sorted() == ["alice", "bob", "bob"])
            #expect(try ops.deleteSessions(idPrefix: String(alice.idHash.prefix(12))) == 1)
            #expect(try ops.deleteSessions(sub: "bob") == 2)
            #expect(try store.countActiveSessions(now: t0 + 2) == 0)
            #expect(try ops.purgeExpired(now: t0 + 2) == PurgeCounts())
        }
    }
}
