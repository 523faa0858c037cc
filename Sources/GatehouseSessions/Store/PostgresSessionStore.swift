import Logging

/// The `SessionStore` for several instances: sealed sessions, pending logins and logout `jti`s in one
/// PostgreSQL database (see `PostgresSessionDatabase`).
///
/// For example:
/// ```swift
/// let store = PostgresSessionStore(pool: PostgresConnectionPool(uri: uri), sealer: sealer, logger: logger)
/// try store.migrate()
/// ```
public typealias PostgresSessionStore = SealedSessionStore<PostgresSessionDatabase>

/// The key-less operations on a PostgreSQL session database.
public typealias PostgresSessionMaintenance = SessionMaintenance<PostgresSessionDatabase>

extension SessionMaintenance where Database == PostgresSessionDatabase {
    /// The pool the sessions are reached through.
    public var pool: PostgresConnectionPool { sessionDatabase.pool }
}

extension SealedSessionStore where Database == PostgresSessionDatabase {
    public convenience init(pool: PostgresConnectionPool, sealer: TokenSealer, logger: Logger,
                            pendingLoginLimits: PendingLoginLimits = .standard) {
        self.init(PostgresSessionDatabase(pool: pool), sealer: sealer, logger: logger, pendingLoginLimits: pendingLoginLimits)
    }
}
