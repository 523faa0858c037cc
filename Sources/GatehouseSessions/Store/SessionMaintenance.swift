import Logging

/// The operator's view of a session database (`gatehouse migrate`, `gatehouse sessions list /
/// revoke / purge`, the `/metrics` gauge, readiness): everything that needs no secret key, because
/// it never opens a sealed value. Written once for every engine; `SealedSessionStore` is this view
/// plus the keys.
///
/// For example:
/// ```swift
/// let sessions = try SQLiteSessionMaintenance(path: "gatehouse.sqlite", logger: logger)
/// try sessions.migrate()
/// for s in try sessions.listSessions(now: now) { print(s.idPrefix, s.sub) }
/// ```
///
/// Not final only so that `SealedSessionStore` can add the keys without repeating each operation;
/// `@unchecked Sendable` because Swift accepts no other `Sendable` for a non-final class: every
/// stored property is an immutable `let` of a `Sendable` type.
public class SessionMaintenance<Database: SessionDatabase>: SessionAdministration, SessionDatabaseLifecycle,
    @unchecked Sendable {
    typealias Connection = Database.Connection
    typealias Failure = Database.Connection.Failure

    /// The engine the sessions live in.
    public let sessionDatabase: Database
    let logger: Logger
    /// Who is told of each operation (traces): set by the gateway when it exports them.
    public let operations = StoreOperations()

    public init(_ database: Database, logger: Logger) {
        self.sessionDatabase = database
        self.logger = logger
    }

    public var engine: SessionDatabaseEngine { sessionDatabase.engine }
    public var displayTarget: String { sessionDatabase.displayTarget }

    /// Applies the engine's pending embedded migrations and logs each one applied.
    /// - Returns: the migrations applied now (empty when up to date).
    /// - Throws: `MigrationError`, e.g. `.databaseNewerThanBinary`.
    @discardableResult
    public func migrate() throws(MigrationError) -> [Migration] {
        let applied = try sessionDatabase.migrate()
        for migration in applied {
            logger.info("applied database migration", metadata: [
                "db.migration.version": "\(migration.version)", "db.migration.name": "\(migration.name)",
            ])
        }
        return applied
    }

    /// Releases the database; later calls throw.
    public func close() throws(SessionStoreError) {
        try sessionDatabase.close()
    }

    // MARK: - Deletions (also part of the sessions role)

    /// See `SessionRecordStore.deleteSession(idHash:)`.
    @discardableResult
    public func deleteSession(idHash: String) throws(SessionStoreError) -> Bool {
        try observedWrite { (tx: Connection) throws(Failure) -> Bool in
            try tx.run(.deleteSession, [.text(idHash)]) == 1
        }
    }

    /// See `SessionRecordStore.deleteSessions(sid:provider:)`.
    @discardableResult
    public func deleteSessions(sid: String, provider: String) throws(SessionStoreError) -> Int {
        try deleteSessions(.sid(sid, provider: provider))
    }

    /// See `SessionAdministration.deleteSessions(sub:provider:)`.
    @discardableResult
    public func deleteSessions(sub: String, provider: String) throws(SessionStoreError) -> Int {
        try deleteSessions(.sub(sub, provider: provider))
    }

    private func deleteSessions(_ match: LogoutTokenMatch) throws(SessionStoreError) -> Int {
        try observedWrite { (tx: Connection) throws(Failure) -> Int in try tx.deleteSessions(match) }
    }

    /// See `SessionAdministration.deleteSessions(idPrefix:)`.
    @discardableResult
    public func deleteSessions(idPrefix: String) throws(SessionStoreError) -> Int {
        let prefix = try SessionIDPrefix.normalized(idPrefix)
        // Hashes are lowercase hex: every hash starting with the prefix sorts in [prefix, prefix + "g").
        let range: [SessionValue] = [.text(prefix), .text(prefix + "g")]
        // Counted and deleted in one transaction, so an ambiguous prefix deletes nothing.
        let outcome = try observedWrite { (tx: Connection) throws(Failure) -> PrefixDeletion in
            let matches = try tx.query(.lockByPrefix, range) { _ in }.count
            guard matches <= 1 else { return PrefixDeletion(matches: matches, deleted: 0) }
            return PrefixDeletion(matches: matches, deleted: try tx.run(.deleteByPrefix, range))
        }
        guard outcome.matches <= 1 else { throw .ambiguousIDPrefix(prefix: prefix, matches: outcome.matches) }
        return outcome.deleted
    }

    // MARK: - Reading and purging

    /// See `SessionAdministration.listSessions(now:)`.
    public func listSessions(now: Int64) throws(SessionStoreError) -> [SessionSummary] {
        try observedRead { (tx: Connection) throws(Failure) -> [SessionSummary] in
            try tx.query(.listActive, [.integer(now)]) { (row: Connection.Row) throws(Failure) in try SessionSummary(row) }
        }
    }

    /// See `SessionAdministration.countActiveSessions(now:)`.
    public func countActiveSessions(now: Int64) throws(SessionStoreError) -> Int {
        try observedRead { (tx: Connection) throws(Failure) -> Int in try tx.count(.countActive, [.integer(now)]) }
    }

    /// Pending-login rows stored, expired or not (tests and operators checking the caps).
    public func pendingLoginCount() throws(SessionStoreError) -> Int {
        try observedRead { (tx: Connection) throws(Failure) -> Int in try tx.count(.countPending) }
    }

    /// See `SessionAdministration.purgeExpired(now:)`.
    @discardableResult
    public func purgeExpired(now: Int64) throws(SessionStoreError) -> PurgeCounts {
        try observedWrite { (tx: Connection) throws(Failure) -> PurgeCounts in
            PurgeCounts(sessions: try tx.run(.purgeSessions, [.integer(now)]),
                        pendingLogins: try tx.run(.purgePending, [.integer(now)]),
                        logoutJTIs: try tx.run(.purgeJTI, [.integer(now)]))
        }
    }

    /// Throws unless the database answers and has the sessions schema (readiness probe).
    public func ping() throws(SessionStoreError) {
        try observedRead { (tx: Connection) throws(Failure) in _ = try tx.query(.ping) { _ in } }
    }
}

/// What `sessions revoke ID` found and deleted in its one transaction.
private struct PrefixDeletion: Sendable {
    let matches: Int
    let deleted: Int
}
