/// Which engine holds the sessions.
public enum SessionDatabaseEngine: String, Sendable {
    case sqlite = "SQLite"
    case postgres = "PostgreSQL"
}

/// What a session database does besides the store roles: bring its schema up to date, say what it
/// is (for `gatehouse check` and logs, without any password), and close.
public protocol SessionDatabaseLifecycle: Sendable {
    var engine: SessionDatabaseEngine { get }
    /// The file path or the connection URI with its password replaced by `***`.
    var displayTarget: String { get }
    /// Applies pending embedded migrations of this engine.
    /// - Returns: the migrations applied now (empty when up to date).
    @discardableResult
    func migrate() throws(MigrationError) -> [Migration]
    /// Releases the database; later calls throw.
    func close() throws(SessionStoreError)
}
