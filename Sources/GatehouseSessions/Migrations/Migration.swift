/// One numbered schema change, from `Migrations/NNNN_name.sql`.
///
/// A migration that has shipped is never edited: a database that recorded it will not run it
/// again, so an edit would leave old and new databases with different schemas. Change the schema
/// with a new, higher-numbered file instead.
public struct Migration: Sendable, Equatable, CustomStringConvertible {
    /// The number in the file name (`0001_initial.sql` → 1). Applied in increasing order.
    public let version: Int
    /// The rest of the file name without extension (`0001_initial.sql` → `initial`).
    public let name: String
    /// The file's exact content.
    public let sql: String

    /// The file name this migration comes from, e.g. `0001_initial.sql`.
    public var fileName: String {
        let digits = String(version)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "_" + name + ".sql"
    }

    public var description: String { fileName }
}

/// Why the schema could not be brought up to date.
public enum MigrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database records a migration this binary does not know: it was migrated by a newer
    /// Gatehouse. Running an older binary against it could corrupt data, so it stops.
    case databaseNewerThanBinary(found: Int, known: Int)
    /// The database records `version` under another name than this binary's migration: a shipped
    /// migration was renamed or the database belongs to something else.
    case recordedNameMismatch(version: Int, recorded: String, known: String)
    /// Applying migration `version` failed; its transaction was rolled back.
    case migrationFailed(version: Int, name: String, SQLiteError)
    /// Reading or creating `schema_migrations` failed.
    case database(SQLiteError)
    /// The binary's own migration list is not strictly increasing (a build mistake).
    case invalidMigrationList(String)
    /// Applying PostgreSQL migration `version` failed; its transaction was rolled back.
    case postgresMigrationFailed(version: Int, name: String, PostgresError)
    /// Reaching PostgreSQL, taking the migration lock or reading `schema_migrations` failed.
    case postgres(PostgresError)

    public var description: String {
        switch self {
        case .databaseNewerThanBinary(let found, let known):
            return "the database schema is at version \(found), but this gatehouse binary only knows "
                + "migrations up to \(known); it was migrated by a newer gatehouse. Run that newer "
                + "version (or restore a backup made for this one) instead of downgrading."
        case .recordedNameMismatch(let version, let recorded, let known):
            return "the database records migration \(version) as '\(recorded)', but this binary calls it "
                + "'\(known)'; the database was not created by a compatible gatehouse"
        case .migrationFailed(let version, let name, let error):
            return "migration \(version) (\(name)) failed and was rolled back: \(error)"
        case .database(let error):
            return "cannot read the schema version: \(error)"
        case .invalidMigrationList(let reason):
            return "invalid embedded migration list: \(reason)"
        case .postgresMigrationFailed(let version, let name, let error):
            return "migration \(version) (\(name)) failed and was rolled back: \(error)"
        case .postgres(let error):
            return "cannot read the schema version: \(error)"
        }
    }
}
