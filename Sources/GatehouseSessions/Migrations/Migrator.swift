/// Applies pending migrations in order and records each in `schema_migrations`.
///
/// Each migration runs in its own `BEGIN IMMEDIATE` transaction together with its record, so a
/// failure leaves the database at the previous version, and two processes migrating the same file
/// at once apply every migration exactly once (the second re-checks under the write lock).
///
/// For example: `let applied = try Migrator.migrate(db)`
public enum Migrator {
    static let createTableSQL = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version    INTEGER NOT NULL PRIMARY KEY,
            name       TEXT    NOT NULL,
            applied_at INTEGER NOT NULL
        ) STRICT
        """
    static let selectRecordedSQL = "SELECT version, name FROM schema_migrations ORDER BY version"
    static let isRecordedSQL = "SELECT 1 FROM schema_migrations WHERE version = ?"
    static let recordSQL = """
        INSERT INTO schema_migrations (version, name, applied_at)
        VALUES (?, ?, CAST(strftime('%s', 'now') AS INTEGER))
        """

    /// Applies the migrations of `migrations` that `db` has not recorded yet.
    ///
    /// - Parameters:
    ///   - db: the database to bring up to date.
    ///   - migrations: defaults to the ones embedded in this binary (`EmbeddedMigrations.all`).
    /// - Returns: the migrations applied now, in order (empty when already up to date).
    /// - Throws: `MigrationError.databaseNewerThanBinary` when the database records a version
    ///   beyond the newest known one; `.migrationFailed` when a migration's SQL fails.
    @discardableResult
    public static func migrate(_ db: SQLiteDatabase,
                               migrations: [Migration] = EmbeddedMigrations.all) throws(MigrationError) -> [Migration] {
        let pendingNow = try pending(recorded: try recordedMigrations(db), known: migrations)
        var applied: [Migration] = []
        for migration in pendingNow {
            let ran: Bool
            do {
                ran = try db.transaction(immediate: true) { (conn: SQLiteConnection) throws(SQLiteError) -> Bool in
                    // Another process may have applied it since we looked.
                    if try conn.queryFirst(isRecordedSQL, [.integer(Int64(migration.version))], row: { _ in true }) != nil {
                        return false
                    }
                    try conn.execute(migration.sql)
                    try conn.run(recordSQL, [.integer(Int64(migration.version)), .text(migration.name)])
                    return true
                }
            } catch {
                throw .migrationFailed(version: migration.version, name: migration.name, error)
            }
            if ran { applied.append(migration) }
        }
        return applied
    }

    /// The versions and names `db` has recorded, in increasing order (creating the table if needed).
    /// - Throws: `MigrationError.database` when the table cannot be read or created.
    public static func recordedMigrations(_ db: SQLiteDatabase) throws(MigrationError) -> [(version: Int, name: String)] {
        do {
            let rows = try db.transaction(immediate: true) { (conn: SQLiteConnection) throws(SQLiteError) -> [RecordedMigration] in
                try conn.execute(createTableSQL)
                return try conn.query(selectRecordedSQL) { (row: SQLiteRow) throws(SQLiteError) -> RecordedMigration in
                    RecordedMigration(version: Int(row.int64(0)), name: try row.requiredString(1))
                }
            }
            return rows.map { ($0.version, $0.name) }
        } catch {
            throw .database(error)
        }
    }

    private struct RecordedMigration: Sendable {
        let version: Int
        let name: String
    }

    /// The migrations of `known` that a database having `recorded` still needs, in order — the
    /// rule every engine applies.
    /// - Throws: `.databaseNewerThanBinary` when the database records a version beyond the newest
    ///   known one; `.recordedNameMismatch`; `.invalidMigrationList`.
    static func pending(recorded: [(version: Int, name: String)],
                        known migrations: [Migration]) throws(MigrationError) -> [Migration] {
        try validate(migrations)
        let known = migrations.last?.version ?? 0
        if let newest = recorded.map(\.version).max(), newest > known {
            throw .databaseNewerThanBinary(found: newest, known: known)
        }
        let knownNames = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0.name) })
        for entry in recorded {
            if let name = knownNames[entry.version], name != entry.name {
                throw .recordedNameMismatch(version: entry.version, recorded: entry.name, known: name)
            }
        }
        let done = Set(recorded.map(\.version))
        return migrations.filter { !done.contains($0.version) }
    }

    private static func validate(_ migrations: [Migration]) throws(MigrationError) {
        var previous = 0
        for migration in migrations {
            guard migration.version > previous else {
                throw .invalidMigrationList("version \(migration.version) (\(migration.name)) does not follow \(previous)")
            }
            previous = migration.version
        }
    }
}
