/// An error from PostgreSQL or from reaching it, with what an operator needs and never a bound
/// value or a password: `sql` is the statement as written in the source (`$1` placeholders), server
/// messages are their primary text only (the `DETAIL` line, which quotes key values, is left out),
/// and libpq's connection messages are scrubbed of the URI's passwords.
public struct PostgresError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The server cannot be reached or the connection broke: connect failure, connection lost,
        /// the client-side deadline passed, no pooled connection free in time, or the back-off after
        /// a failed connect has not elapsed. The operation may be retried later.
        case unavailable
        /// The server ran the statement and refused it, with its SQLSTATE (e.g. `23505` unique
        /// violation, `57014` statement timeout).
        case server(sqlState: String)
        /// libpq or the server answered something this client does not expect.
        case protocolViolation
    }

    public let kind: Kind
    public let message: String
    /// The statement that failed, without values; nil for connection-level errors.
    public let sql: String?

    /// True when the database could not answer (rather than refusing the statement): connection
    /// errors, and the server-side conditions that mean "not now" — a statement or lock timeout
    /// (`57014`), an operator or shutdown cancel (`57P01`…`57P03`), connection exceptions (`08…`).
    public var isUnavailable: Bool {
        switch kind {
        case .unavailable: return true
        case .protocolViolation: return false
        case .server(let state): return state == "57014" || state.hasPrefix("57P") || state.hasPrefix("08")
        }
    }

    /// `23505`: a primary key or unique constraint refused the row.
    public var isUniqueViolation: Bool { kind == .server(sqlState: "23505") }

    public var description: String {
        let head: String
        switch kind {
        case .unavailable: head = "PostgreSQL unavailable"
        case .server(let state): head = "PostgreSQL error \(state)"
        case .protocolViolation: head = "PostgreSQL protocol error"
        }
        if let sql { return "\(head): \(message) [in: \(sql)]" }
        return "\(head): \(message)"
    }

    static func unavailable(_ message: String, sql: String? = nil) -> PostgresError {
        PostgresError(kind: .unavailable, message: message, sql: sql)
    }
}
