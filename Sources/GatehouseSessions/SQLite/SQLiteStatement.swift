import CSQLite

/// SQLite's `SQLITE_TRANSIENT`: the library copies bound text and blobs before the call returns.
/// The C macro is a cast of -1 that Swift does not import.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A prepared statement owned by one `SQLiteConnection`. Not thread-safe: it is only reachable
/// while the connection's lock is held.
final class SQLiteStatement {
    let handle: OpaquePointer
    let sql: String

    init(handle: OpaquePointer, sql: String) {
        self.handle = handle
        self.sql = sql
    }

    func finalize() {
        sqlite3_finalize(handle)
    }

    /// Clears previous bindings and binds `values` to parameters 1...n.
    func bind(_ values: [SQLiteValue], connection: OpaquePointer) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard values.count == expected else {
            throw SQLiteError(code: SQLITE_RANGE,
                              message: "statement expects \(expected) bound values, got \(values.count)",
                              sql: sql)
        }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .integer(let v):
                rc = sqlite3_bind_int64(handle, index, v)
            case .real(let v):
                rc = sqlite3_bind_double(handle, index, v)
            case .null:
                rc = sqlite3_bind_null(handle, index)
            case .text(let v):
                var text = v
                rc = text.withUTF8 { buffer -> Int32 in
                    guard let length = Int32(exactly: buffer.count) else { return SQLITE_TOOBIG }
                    // An empty buffer may have a nil base address, which SQLite would bind as NULL.
                    guard let base = buffer.baseAddress, length > 0 else {
                        return sqlite3_bind_text(handle, index, "", 0, sqliteTransient)
                    }
                    return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                        sqlite3_bind_text(handle, index, $0, length, sqliteTransient)
                    }
                }
            case .blob(let v):
                rc = v.withUnsafeBytes { buffer -> Int32 in
                    guard let length = Int32(exactly: buffer.count) else { return SQLITE_TOOBIG }
                    guard let base = buffer.baseAddress, length > 0 else {
                        return sqlite3_bind_zeroblob(handle, index, 0)
                    }
                    return sqlite3_bind_blob(handle, index, base, length, sqliteTransient)
                }
            }
            guard rc == SQLITE_OK else {
                throw SQLiteError(code: rc, message: "cannot bind parameter \(index): "
                                  + String(cString: sqlite3_errstr(rc)), sql: sql)
            }
        }
    }

    /// Advances to the next row. Returns false when the statement is done.
    func step(connection: OpaquePointer) throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            throw SQLiteError(code: sqlite3_extended_errcode(connection),
                              message: String(cString: sqlite3_errmsg(connection)), sql: sql)
        }
    }

    /// Makes the statement reusable and drops references to bound buffers.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }
}

/// The current row of a statement, handed to the row callback of `SQLiteConnection.query`.
/// Valid only inside that callback: copy values out, never keep the row. Column indexes start at 0.
public struct SQLiteRow {
    let statement: OpaquePointer
    let sql: String

    /// True when the column holds SQL NULL.
    public func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(statement, column) == SQLITE_NULL
    }

    public func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(statement, column)
    }

    public func double(_ column: Int32) -> Double {
        sqlite3_column_double(statement, column)
    }

    /// The text value (UTF-8), or nil for NULL.
    public func string(_ column: Int32) -> String? {
        // Per the SQLite docs: fetch the pointer first, then its length.
        guard let text = sqlite3_column_text(statement, column) else { return nil }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// The blob value; an empty array for an empty blob, nil for NULL.
    public func blob(_ column: Int32) -> [UInt8]? {
        if isNull(column) { return nil }
        guard let bytes = sqlite3_column_blob(statement, column) else { return [] }
        let count = Int(sqlite3_column_bytes(statement, column))
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// A text column that must not be NULL.
    public func requiredString(_ column: Int32) throws(SQLiteError) -> String {
        guard let value = string(column) else { throw unexpectedNull(column) }
        return value
    }

    /// A blob column that must not be NULL.
    public func requiredBlob(_ column: Int32) throws(SQLiteError) -> [UInt8] {
        guard let value = blob(column) else { throw unexpectedNull(column) }
        return value
    }

    private func unexpectedNull(_ column: Int32) -> SQLiteError {
        SQLiteError(code: SQLITE_MISMATCH, message: "unexpected NULL in column \(column)", sql: sql)
    }
}
