import Logging

/// The operator's view of the session database (`gatehouse migrate`, `gatehouse sessions list /
/// revoke / purge`, readiness): everything that needs no secret key, because it never opens a
/// sealed value. `SQLiteSessionStore` uses it for the same operations.
///
/// For example:
/// ```swift
/// let sessions = try SQLiteSessionMaintenance(path: "gatehouse.sqlite", logger: logger)
/// try sessions.migrate()
/// for s in try sessions.listSessions(now: now) { print(s.idPrefix, s.sub) }
/// ```
public final class SQLiteSessionMaintenance: SessionAdministration, SessionDatabaseLifecycle, SessionRowDeletion {
    public let database: SQLiteDatabase
    private let logger: Logger

    /// Opens (creating if needed) the database file. Does not migrate: call `migrate()`.
    /// - Throws: `SessionStoreError.database` when the file cannot be opened or configured.
    public convenience init(path: String, logger: Logger) throws(SessionStoreError) {
        do {
            self.init(database: try SQLiteDatabase(path: path), logger: logger)
        } catch {
            throw .database(error)
        }
    }

    public init(database: SQLiteDatabase, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    public var engine: SessionDatabaseEngine { .sqlite }
    public var displayTarget: String { database.path }

    /// Applies pending embedded migrations (see `Migrator`) and logs each one applied.
    /// - Returns: the migrations applied now (empty when up to date).
    /// - Throws: `MigrationError`, e.g. `.databaseNewerThanBinary`.
    @discardableResult
    public func migrate() throws(MigrationError) -> [Migration] {
        let applied = try Migrator.migrate(database)
        Migration.log(applied, to: logger)
        return applied
    }

    /// Checkpoints the WAL and closes the database; later calls throw.
    public func close() throws(SessionStoreError) {
        do {
            try database.close()
        } catch {
            throw .database(error)
        }
    }

    /// See `SessionStore.deleteSession(idHash:)`.
    @discardableResult
    public func deleteSession(idHash: String) throws(SessionStoreError) -> Bool {
        try database.storeWrite { (conn: SQLiteConnection) throws(SQLiteError) -> Bool in
            try conn.run(SQL.deleteSession, [.text(idHash)]) == 1
        }
    }

    /// See `SessionStore.deleteSessions(sub:)`.
    @discardableResult
    public func deleteSessions(sub: String) throws(SessionStoreError) -> Int {
        try database.storeWrite { (conn: SQLiteConnection) throws(SQLiteError) -> Int in
            try conn.run(SQL.deleteBySub, [.text(sub)])
        }
    }

    /// See `SessionStore.deleteSessions(sid:)`.
    @discardableResult
    public func deleteSessions(sid: String) throws(SessionStoreError) -> Int {
        try database.storeWrite { (conn: SQLiteConnection) throws(SQLiteError) -> Int in
            try conn.run(SQL.deleteBySid, [.text(sid)])
        }
    }

    /// See `SessionStore.deleteSessions(idPrefix:)`.
    @discardableResult
    public func deleteSessions(idPrefix: String) throws(SessionStoreError) -> Int {
        try SessionIDPrefix.deleteUnique(idPrefix) { (low: String, high: String) throws(SessionStoreError) in
            let range: [SQLiteValue] = [.text(low), .text(high)]
            let outcome = try database.storeWrite { (conn: SQLiteConnection) throws(SQLiteError) -> PrefixDeletion in
                let matches = try conn.queryFirst(SQL.countByPrefix, range) { row in Int(row.int64(0)) } ?? 0
                guard matches <= 1 else { return PrefixDeletion(matches: matches, deleted: 0) }
                return PrefixDeletion(matches: matches, deleted: try conn.run(SQL.deleteByPrefix, range))
            }
            return (outcome.matches, outcome.deleted)
        }
    }

    /// See `SessionStore.listSessions(now:)`.
    public func listSessions(now: Int64) throws(SessionStoreError) -> [SessionSummary] {
        try database.storeRead { (conn: SQLiteConnection) throws(SQLiteError) -> [SessionSummary] in
            try conn.query(SQL.listActive, [.integer(now)]) { (row: SQLiteRow) throws(SQLiteError) in
                SessionSummary(idPrefix: try row.requiredString(0), sub: try row.requiredString(1),
                               createdAt: row.int64(2), lastSeenAt: row.int64(3),
                               idleExpiresAt: row.int64(4), expiresAt: row.int64(5))
            }
        }
    }

    /// See `SessionStore.countActiveSessions(now:)`.
    public func countActiveSessions(now: Int64) throws(SessionStoreError) -> Int {
        try database.storeRead { (conn: SQLiteConnection) throws(SQLiteError) -> Int in
            try conn.queryFirst(SQL.countActive, [.integer(now)]) { row in Int(row.int64(0)) } ?? 0
        }
    }

    /// See `SessionStore.purgeExpired(now:)`.
    @discardableResult
    public func purgeExpired(now: Int64) throws(SessionStoreError) -> PurgeCounts {
        try database.storeWrite { (conn: SQLiteConnection) throws(SQLiteError) -> PurgeCounts in
            PurgeCounts(sessions: try conn.run(SQL.purgeSessions, [.integer(now)]),
                        pendingLogins: try conn.run(SQL.purgePending, [.integer(now)]),
                        logoutJTIs: try conn.run(SQL.purgeJTI, [.integer(now)]))
        }
    }

    /// Throws unless the database answers and has the sessions schema (readiness probe).
    public func ping() throws(SessionStoreError) {
        try database.storeRead { (conn: SQLiteConnection) throws(SQLiteError) -> Bool in
            try conn.queryFirst(SQL.ping) { _ in true } ?? false
        }
    }

    private struct PrefixDeletion: Sendable {
        let matches: Int
        let deleted: Int
    }
}
