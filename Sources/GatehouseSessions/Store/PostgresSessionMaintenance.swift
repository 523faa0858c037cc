import Logging

/// The key-less operations of the PostgreSQL session database (`gatehouse migrate`, `sessions
/// list / revoke / purge`, readiness), the counterpart of `SQLiteSessionMaintenance`.
/// `PostgresSessionStore` uses it for the same operations.
///
/// For example:
/// ```swift
/// let sessions = PostgresSessionMaintenance(pool: PostgresConnectionPool(uri: uri), logger: logger)
/// try sessions.migrate()
/// ```
public final class PostgresSessionMaintenance: SessionAdministration, SessionDatabaseLifecycle, SessionRowDeletion {
    public let pool: PostgresConnectionPool
    private let logger: Logger

    public init(pool: PostgresConnectionPool, logger: Logger) {
        self.pool = pool
        self.logger = logger
    }

    public var engine: SessionDatabaseEngine { .postgres }
    public var displayTarget: String { pool.displayTarget }

    /// Applies pending `Migrations/postgres` migrations under the migration advisory lock (see
    /// `PostgresMigrator`) and logs each one applied.
    @discardableResult
    public func migrate() throws(MigrationError) -> [Migration] {
        let applied = try PostgresMigrator.migrate(pool)
        Migration.log(applied, to: logger)
        return applied
    }

    /// Closes the pool's connections; later calls throw `.unavailable`.
    public func close() throws(SessionStoreError) {
        pool.close()
    }

    /// See `SessionStore.deleteSession(idHash:)`.
    @discardableResult
    public func deleteSession(idHash: String) throws(SessionStoreError) -> Bool {
        try write { (tx: PostgresTransaction) throws(PostgresError) -> Bool in
            try tx.run(PostgresSQL.deleteSession, [.text(idHash)]) == 1
        }
    }

    /// See `SessionStore.deleteSessions(sub:)`.
    @discardableResult
    public func deleteSessions(sub: String) throws(SessionStoreError) -> Int {
        try write { (tx: PostgresTransaction) throws(PostgresError) -> Int in
            try tx.run(PostgresSQL.deleteBySub, [.text(sub)])
        }
    }

    /// See `SessionStore.deleteSessions(sid:)`.
    @discardableResult
    public func deleteSessions(sid: String) throws(SessionStoreError) -> Int {
        try write { (tx: PostgresTransaction) throws(PostgresError) -> Int in
            try tx.run(PostgresSQL.deleteBySid, [.text(sid)])
        }
    }

    /// See `SessionStore.deleteSessions(idPrefix:)`.
    @discardableResult
    public func deleteSessions(idPrefix: String) throws(SessionStoreError) -> Int {
        try SessionIDPrefix.deleteUnique(idPrefix) { (low: String, high: String) throws(SessionStoreError) in
            let range: [PostgresValue] = [.text(low), .text(high)]
            return try write { (tx: PostgresTransaction) throws(PostgresError) -> (matches: Int, deleted: Int) in
                let matches = try tx.run(PostgresSQL.lockByPrefix, range)
                guard matches <= 1 else { return (matches, 0) }
                return (matches, try tx.run(PostgresSQL.deleteByPrefix, range))
            }
        }
    }

    /// See `SessionStore.listSessions(now:)`.
    public func listSessions(now: Int64) throws(SessionStoreError) -> [SessionSummary] {
        try write { (tx: PostgresTransaction) throws(PostgresError) -> [SessionSummary] in
            try tx.query(PostgresSQL.listActive, [.int8(now)]) { (row: PostgresRow) throws(PostgresError) in
                SessionSummary(idPrefix: try row.requiredString(0), sub: try row.requiredString(1),
                               createdAt: row.int64(2), lastSeenAt: row.int64(3),
                               idleExpiresAt: row.int64(4), expiresAt: row.int64(5))
            }
        }
    }

    /// See `SessionStore.countActiveSessions(now:)`.
    public func countActiveSessions(now: Int64) throws(SessionStoreError) -> Int {
        try count(PostgresSQL.countActive, [.int8(now)])
    }

    /// See `SessionStore.purgeExpired(now:)`.
    @discardableResult
    public func purgeExpired(now: Int64) throws(SessionStoreError) -> PurgeCounts {
        try write { (tx: PostgresTransaction) throws(PostgresError) -> PurgeCounts in
            PurgeCounts(sessions: try tx.run(PostgresSQL.purgeSessions, [.int8(now)]),
                        pendingLogins: try tx.run(PostgresSQL.purgePending, [.int8(now)]),
                        logoutJTIs: try tx.run(PostgresSQL.purgeJTI, [.int8(now)]))
        }
    }

    /// Throws unless PostgreSQL answers and has the sessions schema (readiness probe).
    public func ping() throws(SessionStoreError) {
        try write { (tx: PostgresTransaction) throws(PostgresError) in
            _ = try tx.run(PostgresSQL.ping)
        }
    }

    /// Pending-login rows stored, expired or not (tests and operators checking the caps).
    public func pendingLoginCount() throws(SessionStoreError) -> Int {
        try count(PostgresSQL.countPending, [])
    }

    private func count(_ sql: String, _ parameters: [PostgresValue]) throws(SessionStoreError) -> Int {
        try write { (tx: PostgresTransaction) throws(PostgresError) -> Int in
            Int(try tx.queryFirst(sql, parameters) { row in row.int64(0) } ?? 0)
        }
    }

    /// Runs `body` in one transaction, reporting failures as `SessionStoreError` (`.unavailable`
    /// when PostgreSQL could not answer).
    @discardableResult
    func write<R>(_ body: (PostgresTransaction) throws(PostgresError) -> R) throws(SessionStoreError) -> R {
        do {
            return try pool.withTransaction(body)
        } catch {
            throw SessionStoreError(error)
        }
    }
}
