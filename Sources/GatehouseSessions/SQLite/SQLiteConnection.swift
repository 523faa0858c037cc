import CSQLite

/// One open SQLite connection. Not thread-safe by itself: `SQLiteDatabase` owns it behind a mutex
/// and lends it to one closure at a time. Never keep a reference past that closure.
public final class SQLiteConnection {
    /// Statements prepared once and reused for hot queries (every store query is a fixed string).
    private var statementCache: [String: SQLiteStatement] = [:]
    /// Bound on the cache so ad-hoc SQL cannot grow it without limit.
    static let statementCacheLimit = 64

    private(set) var handle: OpaquePointer?

    init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        // A connection dropped without `close()` still releases its statements and file handle.
        closeHandle()
    }

    /// Runs one or more statements without bound values (schema scripts, pragmas, BEGIN/COMMIT).
    /// - Throws: `SQLiteError` with the failing script as context.
    public func execute(_ sql: String) throws(SQLiteError) {
        let db = try open(sql: sql)
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &message)
        guard rc == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(db))
            sqlite3_free(message)
            throw SQLiteError(code: sqlite3_extended_errcode(db), message: text, sql: sql)
        }
    }

    /// Runs one statement that returns no rows (INSERT, UPDATE, DELETE) and returns how many rows
    /// it changed.
    ///
    /// For example: `let n = try conn.run("DELETE FROM sessions WHERE sub = ?", [.text(sub)])`
    @discardableResult
    public func run(_ sql: String, _ values: [SQLiteValue] = []) throws(SQLiteError) -> Int {
        let db = try open(sql: sql)
        let statement = try prepare(sql, db: db)
        defer { release(statement) }
        try statement.bind(values, connection: db)
        while try statement.step(connection: db) {}
        return Int(sqlite3_changes64(db))
    }

    /// Runs one statement and maps every result row through `row`.
    ///
    /// For example: `let subs = try conn.query("SELECT sub FROM sessions", []) { try $0.requiredString(0) }`
    public func query<T>(_ sql: String, _ values: [SQLiteValue] = [],
                         row transform: (SQLiteRow) throws(SQLiteError) -> T) throws(SQLiteError) -> [T] {
        let db = try open(sql: sql)
        let statement = try prepare(sql, db: db)
        defer { release(statement) }
        try statement.bind(values, connection: db)
        var results: [T] = []
        while try statement.step(connection: db) {
            results.append(try transform(SQLiteRow(statement: statement.handle, sql: sql)))
        }
        return results
    }

    /// The first row mapped through `row`, or nil when the statement returns no row.
    public func queryFirst<T>(_ sql: String, _ values: [SQLiteValue] = [],
                              row transform: (SQLiteRow) throws(SQLiteError) -> T) throws(SQLiteError) -> T? {
        let db = try open(sql: sql)
        let statement = try prepare(sql, db: db)
        defer { release(statement) }
        try statement.bind(values, connection: db)
        guard try statement.step(connection: db) else { return nil }
        let value = try transform(SQLiteRow(statement: statement.handle, sql: sql))
        // Finish the statement so a DELETE … RETURNING or an UPDATE takes full effect.
        while try statement.step(connection: db) {}
        return value
    }

    /// True while a transaction is open on this connection.
    public var isInTransaction: Bool {
        guard let handle else { return false }
        return sqlite3_get_autocommit(handle) == 0
    }

    // MARK: - Internals

    private func open(sql: String) throws(SQLiteError) -> OpaquePointer {
        guard let handle else { throw SQLiteError.closed(sql: sql) }
        return handle
    }

    private func prepare(_ sql: String, db: OpaquePointer) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statementCache.removeValue(forKey: sql) {
            // Taken out of the cache while in use, so a nested use of the same SQL gets its own.
            return cached
        }
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw SQLiteError(code: sqlite3_extended_errcode(db),
                              message: String(cString: sqlite3_errmsg(db)), sql: sql)
        }
        return SQLiteStatement(handle: statement, sql: sql)
    }

    private func release(_ statement: SQLiteStatement) {
        statement.reset()
        if statementCache[statement.sql] == nil, statementCache.count < Self.statementCacheLimit {
            statementCache[statement.sql] = statement
        } else {
            statement.finalize()
        }
    }

    /// Finalizes cached statements and closes the handle. Returns SQLite's result code.
    @discardableResult
    func closeHandle() -> Int32 {
        for statement in statementCache.values { statement.finalize() }
        statementCache.removeAll()
        guard let handle else { return SQLITE_OK }
        self.handle = nil
        return sqlite3_close_v2(handle)
    }
}
