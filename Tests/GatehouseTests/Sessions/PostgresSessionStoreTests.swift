import Dispatch
import Foundation
@testable import GatehouseSessions
import Synchronization
import Testing
import TestSupport

/// What only the PostgreSQL engine has to prove beyond the conformance suite: several instances on
/// one database, migrations under the advisory lock, the bounds on every wait, recovery after a server
/// restart, PgBouncer transaction-mode safety, and no password in any error.
@Suite("PostgresSessionStore (several instances, timeouts, restarts)")
struct PostgresSessionStoreTests {
    let t0: Int64 = 1_000_000

    private func store(_ uri: String, settings: PostgresPoolSettings = PostgresPoolSettings()) throws -> PostgresSessionStore {
        PostgresSessionStore(pool: PostgresConnectionPool(uri: uri, settings: settings), sealer: try testSealer(), logger: quietLogger)
    }

    /// Runs `body` on `count` threads at once and returns their results.
    private func concurrently<R: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> R) -> [R] {
        let results = Mutex<[R]>([])
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            Thread {
                let result = body(index)
                results.withLock { $0.append(result) }
                group.leave()
            }.start()
        }
        group.wait()
        return results.withLock { $0 }
    }

    @Test("Without the PostgreSQL binaries the tests fail with what to install, rather than skip")
    func missingBinariesFailClearly() throws {
        let error = #expect(throws: PostgresTestServer.StartError.self) {
            try PostgresTestServer.findBinaries(environment: ["GATEHOUSE_PG_BIN": "/nonexistent/bin"])
        }
        #expect(error?.description.contains("`postgresql`") == true)
        #expect(try PostgresTestServer.findBinaries().hasSuffix("/bin"), "this machine has them (scripts/test installs them)")
    }

    @Test("Six instances migrating one database at once apply each migration exactly once")
    func concurrentMigration() throws {
        let uri = try freshPostgresDatabase()
        let applied = concurrently(6) { _ in
            (try? PostgresMigrator.migrate(PostgresConnectionPool(uri: uri)))?.count ?? -1
        }
        #expect(!applied.contains(-1), "every instance migrates without error")
        #expect(applied.reduce(0, +) == EmbeddedMigrations.postgres.count)
        let recorded = try PostgresConnectionPool(uri: uri).withTransaction { (tx: PostgresTransaction) throws(PostgresError) in
            try tx.query(PostgresMigrator.selectRecordedSQL) { row in row.int64(0) }
        }
        #expect(recorded == EmbeddedMigrations.postgres.map { Int64($0.version) })
    }

    @Test("A database migrated by a newer gatehouse is refused, as with SQLite")
    func newerDatabaseRefused() throws {
        let uri = try freshPostgresDatabase()
        let pool = PostgresConnectionPool(uri: uri)
        try PostgresMigrator.migrate(pool)
        try pool.withTransaction { (tx: PostgresTransaction) throws(PostgresError) in
            try tx.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)")
        }
        let known = EmbeddedMigrations.postgres.count
        #expect(throws: MigrationError.databaseNewerThanBinary(found: 99, known: known)) { try PostgresMigrator.migrate(pool) }
    }

    @Test("Two instances racing for one refresh lease and one token version: exactly one winner each")
    func crossInstanceRaces() throws {
        let uri = try freshPostgresDatabase()
        let a = try store(uri)
        try a.migrate()
        let b = try store(uri)
        let session = try a.createSession(.make(now: t0))
        let leases = concurrently(12) { i in
            (try? (i % 2 == 0 ? a : b).acquireRefreshLease(idHash: session.idHash, owner: "owner-\(i)", now: 1_000_000, duration: 30)) ?? false
        }
        #expect(leases.filter { $0 }.count == 1)
        let updates = concurrently(12) { i in
            (try? (i % 2 == 0 ? a : b).updateTokens(idHash: session.idHash, expectedVersion: 1, tokens: .make(access: "a-\(i)"))) ?? false
        }
        #expect(updates.filter { $0 }.count == 1)
        #expect(try b.loadSession(idHash: session.idHash, now: t0)?.version == 2)
        let taken = try { () throws -> [Bool] in
            let login = PendingLogin.make(now: t0)
            try a.savePendingLogin(login)
            return concurrently(8) { i in ((try? (i % 2 == 0 ? a : b).takePendingLogin(stateHash: login.stateHash, now: t0)) ?? nil) != nil }
        }()
        #expect(taken.filter { $0 }.count == 1, "a login state is usable once across instances")
    }

    @Test("Two instances flooding /login while callbacks take logins: caps exact, the trigger-kept count exact, no deadlock")
    func pendingLoginCountUnderConcurrency() throws {
        let uri = try freshPostgresDatabase()
        let limits = PendingLoginLimits(perBinding: 3, total: 20)
        let a = PostgresSessionStore(pool: PostgresConnectionPool(uri: uri), sealer: try testSealer(), logger: quietLogger,
                                     pendingLoginLimits: limits)
        try a.migrate()
        let b = PostgresSessionStore(pool: PostgresConnectionPool(uri: uri), sealer: try testSealer(), logger: quietLogger,
                                     pendingLoginLimits: limits)
        let failures = concurrently(8) { worker -> Int in
            var failed = 0
            for i in 0..<25 {
                let store = worker % 2 == 0 ? a : b
                let login = PendingLogin.make(binding: "browser-\((worker * 25 + i) % 5)", now: 1_000_000 + Int64(i))
                do {
                    try store.savePendingLogin(login)
                    if i % 3 == 0 { _ = try store.takePendingLogin(stateHash: login.stateHash, now: 1_000_000) }
                } catch {
                    failed += 1
                }
            }
            return failed
        }
        #expect(failures.reduce(0, +) == 0)
        let (rows, counted, worstBinding) = try a.maintenance.pool.withTransaction { (tx: PostgresTransaction) throws(PostgresError) in
            (try tx.queryFirst("SELECT COUNT(*) FROM pending_logins") { $0.int64(0) } ?? -1,
             try tx.queryFirst("SELECT n FROM pending_login_count") { $0.int64(0) } ?? -1,
             try tx.queryFirst("SELECT COALESCE(MAX(c), 0) FROM (SELECT COUNT(*) AS c FROM pending_logins GROUP BY binding_hash) x") { $0.int64(0) } ?? -1)
        }
        #expect(rows == counted, "pending_login_count follows every insert, eviction and take")
        #expect(rows <= Int64(limits.total))
        #expect(worstBinding <= Int64(limits.perBinding))
        try a.purgeExpired(now: 2_000_000_000)
        #expect(try a.pendingLoginCount() == 0)
        let afterPurge = try a.maintenance.pool.withTransaction { (tx: PostgresTransaction) throws(PostgresError) in
            try tx.queryFirst("SELECT n FROM pending_login_count") { $0.int64(0) }
        }
        #expect(afterPurge == 0)
    }

    @Test("PgBouncer transaction mode: no named prepared statement and no advisory lock outlives a transaction")
    func noSessionStateLeft() throws {
        let uri = try freshPostgresDatabase()
        var single = PostgresPoolSettings()
        single.maxConnections = 1
        let s = try store(uri, settings: single)
        try s.migrate()
        let created = try s.createSession(.make(now: t0))
        try s.savePendingLogin(.make(now: t0))
        _ = try s.acquireRefreshLease(idHash: created.idHash, owner: "A", now: t0, duration: 30)
        _ = try s.updateTokens(idHash: created.idHash, expectedVersion: 1, tokens: .make(access: "a2"))
        _ = try s.endSessions(forLogoutToken: "j", expiresAt: t0 + 60, matching: .sub("nobody"))
        // The same (only) connection of the pool that ran all of the above.
        let prepared = try s.maintenance.pool.withTransaction { (tx: PostgresTransaction) throws(PostgresError) in
            try tx.queryFirst("SELECT COUNT(*) FROM pg_prepared_statements") { $0.int64(0) }
        }
        #expect(prepared == 0)
        let advisory = try PostgresConnectionPool(uri: uri).withTransaction { (tx: PostgresTransaction) throws(PostgresError) in
            try tx.queryFirst("""
                SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory'
                AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """) { $0.int64(0) }
        }
        #expect(advisory == 0)
        let timeout = try s.maintenance.pool.withTransaction { (tx: PostgresTransaction) throws(PostgresError) in
            try tx.queryFirst("SELECT setting FROM pg_settings WHERE name = 'statement_timeout'") { $0.string(0) } ?? nil
        }
        #expect(timeout == "5000", "the statement timeout is set (SET LOCAL) inside every transaction")
    }

    @Test("The statement timeout ends a slow statement as 'unavailable', and the pool keeps working")
    func statementTimeout() throws {
        let uri = try freshPostgresDatabase()
        var settings = PostgresPoolSettings()
        settings.statementTimeout = .milliseconds(200)
        let pool = PostgresConnectionPool(uri: uri, settings: settings)
        let error = #expect(throws: PostgresError.self) {
            try pool.withTransaction { (tx: PostgresTransaction) throws(PostgresError) in try tx.run("SELECT pg_sleep(30)") }
        }
        #expect(error?.kind == .server(sqlState: "57014"))
        #expect(error.map { SessionStoreError($0).isUnavailable } == true)
        let one = try pool.withTransaction { (tx: PostgresTransaction) throws(PostgresError) in try tx.queryFirst("SELECT 1::bigint") { $0.int64(0) } }
        #expect(one == 1)
    }

    @Test("A server that stops answering costs the client deadline, not a hung thread; the pool then reconnects")
    func clientDeadline() throws {
        let uri = try freshPostgresDatabase()
        var settings = PostgresPoolSettings()
        settings.statementTimeout = .milliseconds(300)
        settings.answerMargin = .milliseconds(200)
        let pool = PostgresConnectionPool(uri: uri, settings: settings)
        // The server-side timeout switched off inside the transaction: only the client deadline is left.
        let error = #expect(throws: PostgresError.self) {
            try pool.withTransaction { (tx: PostgresTransaction) throws(PostgresError) in
                try tx.run("SET LOCAL statement_timeout = 0")
                try tx.run("SELECT pg_sleep(30)")
            }
        }
        #expect(error?.kind == .unavailable)
        #expect(error?.message.contains("deadline") == true)
        let one = try pool.withTransaction { (tx: PostgresTransaction) throws(PostgresError) in try tx.queryFirst("SELECT 1::bigint") { $0.int64(0) } }
        #expect(one == 1)
    }

    @Test("When every pooled connection stays busy, a call fails as unavailable after the acquire timeout")
    func poolExhausted() throws {
        let uri = try freshPostgresDatabase()
        var settings = PostgresPoolSettings()
        settings.maxConnections = 1
        settings.acquireTimeout = .milliseconds(200)
        let s = try store(uri, settings: settings)
        try s.migrate()
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        Thread {
            _ = try? s.maintenance.pool.withTransaction { (_: PostgresTransaction) throws(PostgresError) in
                holding.signal()
                release.wait()
            }
            done.signal()
        }.start()
        holding.wait()
        let error = #expect(throws: SessionStoreError.self) { try s.ping() }
        guard case .unavailable(let reason)? = error else {
            Issue.record("expected .unavailable, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("busy"))
        release.signal()
        done.wait()
        try s.ping()
    }

    @Test("An unreachable server or a wrong password: `unavailable`, fast, without the password in the error")
    func unreachableWithoutPassword() throws {
        let server = try PostgresTestServer.shared.get()
        let wrong = "postgresql://\(PostgresTestServer.user):Wr0ng-Pa55@127.0.0.1:\(server.port)/postgres"
        let refused = "postgresql://app:Cl0sed-Pa55@127.0.0.1:1/gatehouse?connect_timeout=2"
        for (uri, password) in [(wrong, "Wr0ng-Pa55"), (refused, "Cl0sed-Pa55")] {
            let s = try store(uri)
            for _ in 0..<2 {  // the second call fails during the back-off, without connecting
                let error = #expect(throws: SessionStoreError.self) { try s.ping() }
                #expect(error?.isUnavailable == true)
                #expect(!"\(String(describing: error))".contains(password))
                #expect(!String(reflecting: error).contains(password))
            }
            let migration = #expect(throws: MigrationError.self) { try s.migrate() }
            #expect(!"\(String(describing: migration))".contains(password))
            #expect(!String(reflecting: migration).contains(password))
            #expect(!s.displayTarget.contains(password))
        }
    }

    @Test("PostgreSQL restarted: calls fail as unavailable while it is down, then succeed on new connections")
    func recoversAfterRestart() throws {
        let server = try PostgresTestServer.start()
        defer { server.destroy() }
        let uri = try server.createDatabase()
        let s = try store(uri)
        try s.migrate()
        let session = try s.createSession(.make(now: t0))
        try s.ping()
        server.stopServer()
        let error = #expect(throws: SessionStoreError.self) { try s.loadSession(idHash: session.idHash, now: t0) }
        #expect(error?.isUnavailable == true)
        try server.startServer()
        // Bounded: the back-off between connection attempts is at most 5 s.
        var recovered = false
        for _ in 0..<150 where !recovered {
            recovered = (try? s.ping()) != nil
            if !recovered { usleep(100_000) }
        }
        #expect(recovered)
        #expect(try s.loadSession(idHash: session.idHash, now: t0)?.sub == "user-1", "the session survived the restart")
    }
}
