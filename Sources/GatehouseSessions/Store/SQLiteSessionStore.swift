import Logging

/// The production `SessionStore`: sealed sessions in one SQLite file (see `SQLiteSessionDatabase`).
public typealias SQLiteSessionStore = SealedSessionStore<SQLiteSessionDatabase>

/// The key-less operations on a SQLite session file (`gatehouse migrate`, `gatehouse sessions …`).
public typealias SQLiteSessionMaintenance = SessionMaintenance<SQLiteSessionDatabase>

extension SessionMaintenance where Database == SQLiteSessionDatabase {
    /// Opens (creating if needed) the database file. Does not migrate: call `migrate()`.
    /// - Throws: `SessionStoreError.database` when the file cannot be opened or configured.
    public convenience init(path: String, logger: Logger) throws(SessionStoreError) {
        self.init(try SQLiteSessionDatabase(path: path), logger: logger)
    }

    /// The underlying database.
    public var database: SQLiteDatabase { sessionDatabase.database }
}

extension SealedSessionStore where Database == SQLiteSessionDatabase {
    /// Opens (creating if needed) the database file. Does not migrate: call `migrate()`.
    /// - Throws: `SessionStoreError.database` when the file cannot be opened or configured.
    public convenience init(path: String, sealer: TokenSealer, logger: Logger,
                            pendingLoginLimits: PendingLoginLimits = .standard) throws(SessionStoreError) {
        self.init(try SQLiteSessionDatabase(path: path), sealer: sealer, logger: logger,
                  pendingLoginLimits: pendingLoginLimits)
    }

    /// The database file's path (`:memory:` for an in-memory one).
    public var databasePath: String { sessionDatabase.database.path }

    /// A store over an already open database.
    public convenience init(database: SQLiteDatabase, sealer: TokenSealer, logger: Logger,
                            pendingLoginLimits: PendingLoginLimits = .standard) {
        self.init(SQLiteSessionDatabase(database), sealer: sealer, logger: logger, pendingLoginLimits: pendingLoginLimits)
    }
}
