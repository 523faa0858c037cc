import Logging

/// Deleting sessions by id hash and by provider session id: part of the sessions role, done
/// without keys, so an engine's maintenance view does it for its store.
public protocol SessionRowDeletion: Sendable {
    @discardableResult
    func deleteSession(idHash: String) throws(SessionStoreError) -> Bool
    @discardableResult
    func deleteSessions(sid: String) throws(SessionStoreError) -> Int
}

/// A store whose key-less operations (administration, deletions, migrations, closing) are those of
/// its maintenance view on the same database (`SQLiteSessionMaintenance`,
/// `PostgresSessionMaintenance`), so each engine writes them once.
public protocol MaintenanceBackedStore: SessionStore, SessionDatabaseLifecycle {
    associatedtype Maintenance: SessionAdministration & SessionDatabaseLifecycle & SessionRowDeletion
    /// The key-less operations on the same database.
    var maintenance: Maintenance { get }
}

extension MaintenanceBackedStore {
    public var engine: SessionDatabaseEngine { maintenance.engine }
    public var displayTarget: String { maintenance.displayTarget }

    /// Applies pending embedded migrations of this engine (see the maintenance view's `migrate()`).
    @discardableResult
    public func migrate() throws(MigrationError) -> [Migration] { try maintenance.migrate() }

    public func close() throws(SessionStoreError) { try maintenance.close() }

    @discardableResult
    public func deleteSession(idHash: String) throws(SessionStoreError) -> Bool {
        try maintenance.deleteSession(idHash: idHash)
    }

    @discardableResult
    public func deleteSessions(sub: String) throws(SessionStoreError) -> Int {
        try maintenance.deleteSessions(sub: sub)
    }

    @discardableResult
    public func deleteSessions(sid: String) throws(SessionStoreError) -> Int {
        try maintenance.deleteSessions(sid: sid)
    }

    @discardableResult
    public func deleteSessions(idPrefix: String) throws(SessionStoreError) -> Int {
        try maintenance.deleteSessions(idPrefix: idPrefix)
    }

    public func listSessions(now: Int64) throws(SessionStoreError) -> [SessionSummary] {
        try maintenance.listSessions(now: now)
    }

    public func countActiveSessions(now: Int64) throws(SessionStoreError) -> Int {
        try maintenance.countActiveSessions(now: now)
    }

    @discardableResult
    public func purgeExpired(now: Int64) throws(SessionStoreError) -> PurgeCounts {
        try maintenance.purgeExpired(now: now)
    }

    public func ping() throws(SessionStoreError) {
        try maintenance.ping()
    }
}

extension Migration {
    /// Logs each migration just applied (both engines' `migrate()`).
    static func log(_ applied: [Migration], to logger: Logger) {
        for migration in applied {
            logger.info("applied database migration", metadata: [
                "db.migration.version": "\(migration.version)", "db.migration.name": "\(migration.name)",
            ])
        }
    }
}
