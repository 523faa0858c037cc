/// What the shared store needs of an engine's connection during one read or write: the engine's own
/// `run` and `query` (`SQLiteConnection` and `PostgresTransaction` have them as they are), the type
/// it binds parameters as, and which text of a `SessionStatement` it runs.
public protocol SessionConnection {
    associatedtype Parameter: SessionParameter
    associatedtype Row: SessionRow where Row.Failure == Failure
    associatedtype Failure: Error

    /// Which dialect of a `SessionStatement` this connection runs.
    static var dialect: SessionDatabaseEngine { get }

    /// Runs a statement; returns the rows it changed.
    @discardableResult
    func run(_ sql: String, _ values: [Parameter]) throws(Failure) -> Int

    /// Runs a statement and maps every row it returns.
    func query<R>(_ sql: String, _ values: [Parameter], row: (Row) throws(Failure) -> R) throws(Failure) -> [R]
}

/// One row of a result as the shared store reads it (column indexes start at 0). Valid only inside
/// the closure that receives it.
public protocol SessionRow {
    /// The engine's column index type (`Int32` for SQLite, `Int` for PostgreSQL).
    associatedtype Column: ExpressibleByIntegerLiteral
    associatedtype Failure: Error

    /// A text column, nil for NULL.
    func string(_ column: Column) -> String?
    /// An integer column, 0 for NULL.
    func int64(_ column: Column) -> Int64
    func requiredString(_ column: Column) throws(Failure) -> String
    func requiredBytes(_ column: Column) throws(Failure) -> [UInt8]
}

extension SessionConnection {
    /// Runs `statement` in this connection's dialect.
    @discardableResult
    func run(_ statement: SessionStatement, _ values: [SessionValue] = []) throws(Failure) -> Int {
        try run(statement.text(in: Self.dialect), values.map(Parameter.init))
    }

    func query<R>(_ statement: SessionStatement, _ values: [SessionValue] = [],
                  row: (Row) throws(Failure) -> R) throws(Failure) -> [R] {
        try query(statement.text(in: Self.dialect), values.map(Parameter.init), row: row)
    }

    /// The first row, mapped, or nil when there is none. Every row is read, so a `DELETE …
    /// RETURNING` takes full effect.
    func queryFirst<R>(_ statement: SessionStatement, _ values: [SessionValue] = [],
                       row: (Row) throws(Failure) -> R) throws(Failure) -> R? {
        try query(statement, values, row: row).first
    }

    /// The number a `SELECT COUNT(*)` statement returns.
    func count(_ statement: SessionStatement, _ values: [SessionValue] = []) throws(Failure) -> Int {
        Int(try queryFirst(statement, values) { row in row.int64(0) } ?? 0)
    }

    /// Deletes the sessions a back-channel logout names (`revoke --sub` and the deletion by `sid`
    /// are the same statements).
    /// - Returns: how many were deleted.
    func deleteSessions(_ match: LogoutTokenMatch) throws(Failure) -> Int {
        switch match {
        case .sid(let sid, let provider): try run(.deleteBySid, [.text(sid), .text(provider)])
        case .sub(let sub, let provider): try run(.deleteBySub, [.text(sub), .text(provider)])
        }
    }
}
