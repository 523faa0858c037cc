import CSQLite

/// The sessions in one SQLite file (WAL), shared safely by the threads of one process and by
/// several processes. Reads run in autocommit on the database's one connection; writes in
/// `BEGIN IMMEDIATE`, which takes the write lock up front, so the busy timeout (5 s) covers waiting
/// for another process's writer and a multi-statement write is all-or-nothing.
public struct SQLiteSessionDatabase: SessionDatabase {
    /// The underlying database.
    public let database: SQLiteDatabase

    public init(_ database: SQLiteDatabase) {
        self.database = database
    }

    /// Opens (creating if needed) the database file. Does not migrate: call `migrate()`.
    /// - Throws: `SessionStoreError.database` when the file cannot be opened or configured.
    public init(path: String) throws(SessionStoreError) {
        self.init(try reported { () throws(SQLiteError) in try SQLiteDatabase(path: path) })
    }

    public var engine: SessionDatabaseEngine { .sqlite }
    public var displayTarget: String { database.path }

    /// Applies pending `Migrations/` migrations (see `Migrator`).
    @discardableResult
    public func migrate() throws(MigrationError) -> [Migration] {
        try Migrator.migrate(database)
    }

    /// Checkpoints the WAL and closes the database; later calls throw.
    public func close() throws(SessionStoreError) {
        try reported { () throws(SQLiteError) in try database.close() }
    }

    @discardableResult
    public func read<R: Sendable>(_ body: (SQLiteConnection) throws(SQLiteError) -> R) throws(SessionStoreError) -> R {
        try reported { () throws(SQLiteError) in try database.withConnection(body) }
    }

    @discardableResult
    public func write<R: Sendable>(_ body: (SQLiteConnection) throws(SQLiteError) -> R) throws(SessionStoreError) -> R {
        try reported { () throws(SQLiteError) in
            try database.transaction(immediate: true) { (conn: SQLiteConnection) throws(SQLiteError) -> R in
                let result = try body(conn)
                // Throwing here rolls the transaction back (`StoreCommitGate`).
                guard StoreCommitGate.mayCommit() else {
                    throw SQLiteError(code: SQLITE_ABORT, message: StoreCommitGate.abandonedMessage)
                }
                return result
            }
        }
    }
}

/// `work`'s result, or its SQLite error as `SessionStoreError.database`.
private func reported<R>(_ work: () throws(SQLiteError) -> R) throws(SessionStoreError) -> R {
    do {
        return try work()
    } catch {
        throw .database(error)
    }
}

/// `run` and `query` as they are; statements in SQLite's dialect.
extension SQLiteConnection: SessionConnection {
    public static var dialect: SessionDatabaseEngine { .sqlite }
}

extension SQLiteRow: SessionRow {
    public func requiredBytes(_ column: Int32) throws(SQLiteError) -> [UInt8] {
        try requiredBlob(column)
    }
}

extension SQLiteValue: SessionParameter {
    /// A nil text or integer is bound as NULL.
    public init(_ value: SessionValue) {
        self = value.bound(text: Self.optionalText, integer: Self.optionalInteger, bytes: Self.blob)
    }
}
