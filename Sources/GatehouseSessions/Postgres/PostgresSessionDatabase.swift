/// The sessions in one PostgreSQL database shared by every instance, reached through a
/// `PostgresConnectionPool`. Each read and each write is one transaction on a pooled connection
/// (`BEGIN` with `SET LOCAL` timeouts, so nothing outlives it behind PgBouncer). A call waits at most
/// the pool's acquire timeout plus the statement deadline; when PostgreSQL cannot answer it throws
/// `SessionStoreError.unavailable`.
public struct PostgresSessionDatabase: SessionDatabase {
    public let pool: PostgresConnectionPool

    public init(pool: PostgresConnectionPool) {
        self.pool = pool
    }

    public var engine: SessionDatabaseEngine { .postgres }
    public var displayTarget: String { pool.displayTarget }

    /// Applies pending `Migrations/postgres` migrations under the migration advisory lock (see
    /// `PostgresMigrator`).
    @discardableResult
    public func migrate() throws(MigrationError) -> [Migration] {
        try PostgresMigrator.migrate(pool)
    }

    /// Closes the pool's connections; later calls throw `.unavailable`.
    public func close() {
        pool.close()
    }

    /// A transaction too: it reads one snapshot, under the statement timeout.
    @discardableResult
    public func read<R: Sendable>(_ body: (PostgresTransaction) throws(PostgresError) -> R) throws(SessionStoreError) -> R {
        do {
            return try pool.withTransaction(body)
        } catch {
            throw SessionStoreError(error)
        }
    }

    @discardableResult
    public func write<R: Sendable>(_ body: (PostgresTransaction) throws(PostgresError) -> R) throws(SessionStoreError) -> R {
        try read { (transaction: PostgresTransaction) throws(PostgresError) -> R in
            let result = try body(transaction)
            // Throwing here rolls the transaction back (`StoreCommitGate`).
            guard StoreCommitGate.mayCommit() else { throw PostgresError.unavailable(StoreCommitGate.abandonedMessage) }
            return result
        }
    }
}

/// `run` and `query` as they are; statements in PostgreSQL's dialect.
extension PostgresTransaction: SessionConnection {
    public static var dialect: SessionDatabaseEngine { .postgres }
}

extension PostgresRow: SessionRow {}

extension PostgresValue: SessionParameter {
    /// Text as `text`, integers as `bigint`, bytes as `bytea`; nil as NULL of that type.
    public init(_ value: SessionValue) {
        self = value.bound(text: Self.text, integer: Self.int8, bytes: Self.bytea)
    }
}
