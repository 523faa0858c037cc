import CSQLite

/// An error reported by SQLite, with enough context for an operator and never a bound value.
///
/// `sql` is the statement text as written in the source (with `?` placeholders), so it can be
/// logged safely: bound values — hashes, sealed blobs — are never part of it.
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The extended result code (`sqlite3_extended_errcode`), e.g. `SQLITE_BUSY` (5),
    /// `SQLITE_CONSTRAINT_PRIMARYKEY` (1555).
    public let code: Int32
    /// SQLite's message (`sqlite3_errmsg`) or a description of the misuse.
    public let message: String
    /// The statement that failed, without values; nil for connection-level errors.
    public let sql: String?

    public init(code: Int32, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// The primary result code (`code & 0xff`), e.g. `SQLITE_CONSTRAINT` for every constraint kind.
    public var primaryCode: Int32 { code & 0xff }

    /// True for `SQLITE_BUSY` / `SQLITE_LOCKED`: another connection held the lock past the busy timeout.
    public var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }

    /// True when the file cannot be written now (read-only, an I/O error, a full disk, a file that
    /// cannot be opened): nothing wrong with the operation, the storage needs the operator.
    public var isUnwritable: Bool {
        [SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN].contains(primaryCode)
    }

    public var description: String {
        let name = String(cString: sqlite3_errstr(code))
        if let sql {
            return "SQLite error \(code) (\(name)): \(message) [in: \(sql)]"
        }
        return "SQLite error \(code) (\(name)): \(message)"
    }

    /// An error for using a connection after `close()`.
    static func closed(sql: String? = nil) -> SQLiteError {
        SQLiteError(code: SQLITE_MISUSE, message: "the database connection is closed", sql: sql)
    }
}
