import FoundationEssentials
import GatehouseEncoding
import Logging

/// Where `GATEHOUSE_DATABASE` points: a SQLite file (the default) or a PostgreSQL database given as
/// a libpq URI (`postgres://…` or `postgresql://…`). Its `description` never contains a password.
///
/// For example:
/// ```swift
/// let target = SessionDatabaseTarget(config.databasePath)
/// let store = try target.openStore(sealer: sealer, logger: logger)
/// logger.info("sessions", metadata: ["db": "\(target)"])   // postgres://app:***@db/gatehouse
/// ```
public enum SessionDatabaseTarget: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(uri: String)

    /// Reads a `GATEHOUSE_DATABASE` value: a URI with scheme `postgres` or `postgresql` (any case)
    /// is PostgreSQL, anything else a SQLite path.
    public init(_ value: String) {
        let lower = value.lowercased()
        if lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://") {
            self = .postgres(uri: value)
        } else {
            self = .sqlite(path: value)
        }
    }

    public var engine: SessionDatabaseEngine {
        switch self {
        case .sqlite: .sqlite
        case .postgres: .postgres
        }
    }

    /// The path, or the URI with its passwords replaced by `***`.
    public var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let uri): URIPassword.redacting(uri)
        }
    }

    /// Opens the store `gatehouse serve` uses. Does not migrate: call `migrate()`.
    /// - Throws: `SessionStoreError` when a SQLite file cannot be opened (PostgreSQL connects lazily).
    public func openStore(sealer: TokenSealer, logger: Logger, pendingLoginLimits: PendingLoginLimits = .standard,
                          environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(SessionStoreError) -> any SessionStore & SessionDatabaseLifecycle {
        switch self {
        case .sqlite(let path):
            return try SQLiteSessionStore(path: path, sealer: sealer, logger: logger, pendingLoginLimits: pendingLoginLimits)
        case .postgres(let uri):
            return PostgresSessionStore(pool: PostgresConnectionPool(uri: uri, environment: environment),
                                        sealer: sealer, logger: logger, pendingLoginLimits: pendingLoginLimits)
        }
    }

    /// Opens the key-less view the admin commands use. Does not migrate: call `migrate()`.
    public func openMaintenance(logger: Logger, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(SessionStoreError) -> any SessionAdministration & SessionDatabaseLifecycle {
        switch self {
        case .sqlite(let path):
            return try SQLiteSessionMaintenance(path: path, logger: logger)
        case .postgres(let uri):
            // One connection is all a command needs.
            var settings = PostgresPoolSettings()
            settings.maxConnections = 1
            let pool = PostgresConnectionPool(uri: uri, settings: settings, environment: environment)
            return PostgresSessionMaintenance(PostgresSessionDatabase(pool: pool), logger: logger)
        }
    }
}
