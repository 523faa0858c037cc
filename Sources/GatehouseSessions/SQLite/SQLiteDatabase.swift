import CSQLite
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A thin, thread-safe handle on one SQLite database file through the system libsqlite3.
///
/// One connection, guarded by a `Mutex`: callers on any thread are served one at a time, which is
/// all a session store needs (each operation is a handful of indexed statements). Several
/// processes — or several `SQLiteDatabase` values — may open the same file; WAL mode lets readers
/// proceed while one writer writes, and the busy timeout (5 s) makes writers wait for each other
/// instead of failing with `SQLITE_BUSY`.
///
/// For example:
/// ```swift
/// let db = try SQLiteDatabase(path: "gatehouse.sqlite")
/// let n = try db.transaction { conn throws(SQLiteError) in try conn.run("DELETE FROM logout_jti") }
/// ```
///
/// Do not call back into the same `SQLiteDatabase` from inside one of its closures: the lock is
/// not recursive. Use the `SQLiteConnection` you are given.
public final class SQLiteDatabase: Sendable {
    /// How long a statement waits for another connection's lock before failing with `SQLITE_BUSY`.
    public static let busyTimeoutMilliseconds: Int32 = 5_000

    /// The file path this database was opened with.
    public let path: String

    private let connection: Mutex<SQLiteConnection?>

    /// Opens (creating if needed) the database at `path` and configures the connection:
    /// `journal_mode=WAL`, `synchronous=NORMAL`, a 5 s busy timeout, `foreign_keys=ON`.
    ///
    /// - Parameter path: a file path; `":memory:"` gives a private in-memory database (no WAL).
    /// - Throws: `SQLiteError` when the file cannot be opened or configured (permissions, not a
    ///   database, locked past the busy timeout).
    public init(path: String) throws(SQLiteError) {
        self.path = path
        var handle: OpaquePointer?
        // NOMUTEX: SQLite's own per-connection mutex is redundant under our Mutex.
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_close_v2(handle)
            throw SQLiteError(code: rc, message: "cannot open database at \(path): \(message)")
        }
        sqlite3_extended_result_codes(handle, 1)
        // Set before any pragma: switching to WAL needs a brief exclusive lock that another
        // process opening the same file at the same moment may hold.
        sqlite3_busy_timeout(handle, Self.busyTimeoutMilliseconds)
        let conn = SQLiteConnection(handle: handle)
        let mode: String?
        do { mode = try Self.switchToWAL(conn) } catch {
            _ = conn.closeHandle()
            throw error
        }
        let inMemory = path == ":memory:" || path.isEmpty
        guard mode?.lowercased() == "wal" || (inMemory && mode?.lowercased() == "memory") else {
            conn.closeHandle()
            throw SQLiteError(code: SQLITE_ERROR,
                              message: "cannot enable WAL journal mode at \(path) (got \(mode ?? "nothing"))",
                              sql: "PRAGMA journal_mode=WAL")
        }
        try conn.execute("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
        self.connection = Mutex(conn)
    }

    /// `PRAGMA journal_mode=WAL`, tried again while another process holds the file's lock (two
    /// instances starting at once on a new file: the busy handler is not called when waiting could
    /// deadlock, so SQLite answers BUSY at once), up to the busy timeout.
    private static func switchToWAL(_ conn: SQLiteConnection) throws(SQLiteError) -> String? {
        let deadline = monotonicMilliseconds() + Int64(busyTimeoutMilliseconds)
        while true {
            do {
                return try conn.queryFirst("PRAGMA journal_mode=WAL") { row in row.string(0) } ?? nil
            } catch where error.code & 0xFF == SQLITE_BUSY && monotonicMilliseconds() < deadline {
                usleep(20_000)
            }
        }
    }

    private static func monotonicMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// Lends the connection to `body` while holding the lock. Statements run in autocommit mode
    /// unless `body` opens a transaction; prefer `transaction(immediate:_:)` for several writes.
    /// - Throws: `SQLiteError` from `body`, or when the database is closed.
    @discardableResult
    public func withConnection<R: Sendable>(
        _ body: (SQLiteConnection) throws(SQLiteError) -> R
    ) throws(SQLiteError) -> R {
        try connection.withLock { (conn: inout sending SQLiteConnection?) throws(SQLiteError) -> sending R in
            guard let open = conn, open.handle != nil else { throw SQLiteError.closed() }
            return try body(open)
        }
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    ///
    /// - Parameter immediate: `BEGIN IMMEDIATE` (default) takes the write lock up front, so the
    ///   busy timeout applies and a read-then-write transaction can never fail half-way with
    ///   `SQLITE_BUSY` because another connection wrote in between. Use `false` (`BEGIN DEFERRED`)
    ///   for read-only work that wants one consistent snapshot.
    /// - Throws: `SQLiteError` from `body`, BEGIN or COMMIT.
    @discardableResult
    public func transaction<R: Sendable>(
        immediate: Bool = true,
        _ body: (SQLiteConnection) throws(SQLiteError) -> R
    ) throws(SQLiteError) -> R {
        try withConnection { (conn: SQLiteConnection) throws(SQLiteError) -> R in
            try conn.execute(immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
            do throws(SQLiteError) {
                let result = try body(conn)
                try conn.execute("COMMIT")
                return result
            } catch {
                // SQLite may already have rolled back (e.g. after SQLITE_FULL); only roll back an
                // open transaction, and report the original error rather than the rollback's.
                if conn.isInTransaction { try? conn.execute("ROLLBACK") }
                throw error
            }
        }
    }

    /// Checkpoints the WAL into the main file (`PRAGMA wal_checkpoint(TRUNCATE)`) and closes the
    /// connection, so no `-wal` content is left needing recovery. Later calls throw
    /// `SQLITE_MISUSE` ("the database connection is closed"); closing twice is harmless.
    /// - Throws: `SQLiteError` when the checkpoint fails; the connection is closed regardless.
    public func close() throws(SQLiteError) {
        try connection.withLock { (conn: inout sending SQLiteConnection?) throws(SQLiteError) in
            guard let open = conn else { return }
            conn = nil
            var checkpointError: SQLiteError?
            if open.handle != nil, path != ":memory:", !path.isEmpty {
                do throws(SQLiteError) {
                    try open.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                } catch {
                    checkpointError = error
                }
            }
            let rc = open.closeHandle()
            if let checkpointError { throw checkpointError }
            guard rc == SQLITE_OK else {
                throw SQLiteError(code: rc, message: "close failed: " + String(cString: sqlite3_errstr(rc)))
            }
        }
    }
}
