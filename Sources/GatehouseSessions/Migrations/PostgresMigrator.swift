/// Applies pending PostgreSQL migrations (`EmbeddedMigrations.postgres`) in order, each in its own
/// transaction together with its record in `schema_migrations`, under the same rules as `Migrator`
/// (a database newer than the binary is refused).
///
/// Every transaction first takes `pg_advisory_xact_lock`: N instances starting at once queue on it,
/// and each re-reads the recorded versions under the lock, so every migration runs exactly once. The
/// lock is transaction-scoped (released by `COMMIT`/`ROLLBACK`), never held by a server session,
/// which keeps it correct through PgBouncer in transaction mode.
public enum PostgresMigrator {
    /// The advisory lock key of migrations: "gatehous" in ASCII, unlikely to collide with an
    /// application sharing the database.
    static let lockKey: Int64 = 0x6761_7465_686f_7573
    static let lockSQL = "SELECT pg_advisory_xact_lock($1)"
    static let createTableSQL = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version    BIGINT NOT NULL PRIMARY KEY,
            name       TEXT   NOT NULL,
            applied_at BIGINT NOT NULL
        )
        """
    static let selectRecordedSQL = "SELECT version, name FROM schema_migrations ORDER BY version"
    static let recordSQL = """
        INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, EXTRACT(EPOCH FROM now())::bigint)
        """
    /// Migrations may rebuild an index over every session: far longer than a request's statement.
    static let statementTimeout: Duration = .seconds(600)

    /// Brings the database of `pool` up to date.
    /// - Returns: the migrations applied now, in order (empty when already up to date).
    /// - Throws: `.databaseNewerThanBinary`, `.recordedNameMismatch`, `.postgresMigrationFailed`
    ///   (rolled back), `.postgres` when the server cannot be reached or read.
    @discardableResult
    public static func migrate(_ pool: PostgresConnectionPool,
                               migrations: [Migration] = EmbeddedMigrations.postgres) throws(MigrationError) -> [Migration] {
        var applied: [Migration] = []
        while true {
            var running: Migration?
            let step: Step
            do throws(PostgresError) {
                step = try pool.withTransaction(statementTimeout: statementTimeout) { (tx: PostgresTransaction) throws(PostgresError) -> Step in
                    try tx.run(lockSQL, [.int8(lockKey)])
                    try tx.run(createTableSQL)
                    let recorded = try tx.query(selectRecordedSQL) { (row: PostgresRow) throws(PostgresError) in
                        (version: Int(row.int64(0)), name: try row.requiredString(1))
                    }
                    let next: Migration
                    do throws(MigrationError) {
                        guard let first = try Migrator.pending(recorded: recorded, known: migrations).first else { return .upToDate }
                        next = first
                    } catch {
                        return .refused(error)
                    }
                    running = next
                    try tx.executeScript(next.sql, label: next.fileName)
                    try tx.run(recordSQL, [.int8(Int64(next.version)), .text(next.name)])
                    return .applied(next)
                }
            } catch {
                if let running { throw .postgresMigrationFailed(version: running.version, name: running.name, error) }
                throw .postgres(error)
            }
            switch step {
            case .upToDate: return applied
            case .refused(let error): throw error
            case .applied(let migration): applied.append(migration)
            }
        }
    }

    private enum Step {
        case upToDate
        case refused(MigrationError)
        case applied(Migration)
    }
}
