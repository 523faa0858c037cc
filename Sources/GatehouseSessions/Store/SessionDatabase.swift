/// A database engine the sessions live in, as the shared store logic sees it: somewhere to run the
/// statements of `SessionStatement`, in a read or in a write, plus what every session database does
/// (migrate, describe itself, close). Everything else — sealing, the row mapping, the store's rules —
/// is written once, in `SessionMaintenance` and `SealedSessionStore`, over any engine: an engine
/// stores bytes, the store seals them (oauth2-proxy's split of backends and session manager).
///
/// Engines: `SQLiteSessionDatabase` (one file, several processes) and `PostgresSessionDatabase`
/// (one database, several instances).
public protocol SessionDatabase: SessionDatabaseLifecycle {
    associatedtype Connection: SessionConnection

    /// Runs `body`, whose statements only read, reporting failures as `SessionStoreError`. The store
    /// reads with one statement at a time: SQLite runs it in autocommit, PostgreSQL in a transaction.
    @discardableResult
    func read<R: Sendable>(_ body: (Connection) throws(Connection.Failure) -> R) throws(SessionStoreError) -> R

    /// Runs `body` in one transaction that takes the write lock its statements need up front or as
    /// they run: committed when it returns, rolled back when it throws, so a multi-statement write is
    /// all-or-nothing.
    @discardableResult
    func write<R: Sendable>(_ body: (Connection) throws(Connection.Failure) -> R) throws(SessionStoreError) -> R
}
