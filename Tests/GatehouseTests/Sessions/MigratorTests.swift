import Foundation
@testable import GatehouseSessions
import Testing

@Suite("Migrator (numbered migrations, recorded, never edited)")
struct MigratorTests {
    private func tables(_ db: SQLiteDatabase) throws -> [String] {
        try db.withConnection { (conn: SQLiteConnection) throws(SQLiteError) -> [String] in
            try conn.query("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name") {
                (row: SQLiteRow) throws(SQLiteError) -> String in try row.requiredString(0)
            }
        }
    }

    @Test("A fresh database gets every migration, recorded with version, name and time")
    func freshDatabase() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        let applied = try Migrator.migrate(db)
        #expect(applied == EmbeddedMigrations.all)
        #expect(try tables(db) == ["logout_jti", "pending_logins", "schema_migrations", "sessions", "tls_certificates"])
        let recorded = try db.withConnection { (conn: SQLiteConnection) throws(SQLiteError) -> [String] in
            try conn.query("SELECT version, name, applied_at FROM schema_migrations ORDER BY version") {
                (row: SQLiteRow) throws(SQLiteError) -> String in
                "\(row.int64(0)) \(try row.requiredString(1)) \(row.int64(2) > 1_600_000_000)"
            }
        }
        #expect(recorded == EmbeddedMigrations.all.map { "\($0.version) \($0.name) true" })
    }

    @Test("Migrating again applies nothing and changes nothing")
    func idempotent() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try Migrator.migrate(db)
        #expect(try Migrator.migrate(db) == [])
        #expect(try Migrator.migrate(db) == [])
        #expect(try Migrator.recordedMigrations(db).map(\.version) == EmbeddedMigrations.all.map(\.version))
    }

    @Test("A database migrated by a newer binary is refused with a clear message")
    func newerDatabaseRefused() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try Migrator.migrate(db)
        try db.withConnection { (conn: SQLiteConnection) throws(SQLiteError) in
            try conn.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)")
        }
        let known = EmbeddedMigrations.all.count
        #expect(throws: MigrationError.databaseNewerThanBinary(found: 99, known: known)) { try Migrator.migrate(db) }
        let message = MigrationError.databaseNewerThanBinary(found: 99, known: known).description
        #expect(message.contains("version 99") && message.contains("newer gatehouse"))
    }

    @Test("A recorded migration under another name is refused")
    func renamedMigrationRefused() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try Migrator.migrate(db)
        try db.withConnection { (conn: SQLiteConnection) throws(SQLiteError) in
            try conn.run("UPDATE schema_migrations SET name = 'something_else' WHERE version = 1")
        }
        #expect(throws: MigrationError.recordedNameMismatch(version: 1, recorded: "something_else", known: "initial")) {
            try Migrator.migrate(db)
        }
    }

    @Test("Pending migrations apply in order; a failing one is rolled back and not recorded")
    func failingMigrationRolledBack() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        let next = EmbeddedMigrations.all.count + 1
        let good = Migration(version: next, name: "add_extra", sql: "CREATE TABLE extra (x INTEGER);")
        let bad = Migration(version: next + 1, name: "broken", sql: "CREATE TABLE half (x INTEGER); SELECT * FROM missing_table;")
        do {
            try Migrator.migrate(db, migrations: EmbeddedMigrations.all + [good, bad])
            Issue.record("the broken migration must fail")
        } catch {
            guard case .migrationFailed(let version, let name, let underlying) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(version == next + 1 && name == "broken")
            #expect(underlying.message.contains("missing_table"))
        }
        #expect(try Migrator.recordedMigrations(db).map(\.version) == Array(1...next))
        #expect(try tables(db).contains("extra"))
        #expect(try tables(db).contains("half") == false)
    }

    @Test("A migration list that does not increase is refused before touching the database")
    func invalidList() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        let list = [Migration(version: 2, name: "b", sql: ""), Migration(version: 1, name: "a", sql: "")]
        #expect(throws: MigrationError.self) { try Migrator.migrate(db, migrations: list) }
    }

    @Test("Two connections migrating the same file at once apply each migration exactly once")
    func concurrentMigration() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/m.sqlite"
            let dbs = try (0..<4).map { _ in try SQLiteDatabase(path: path) }
            defer { for db in dbs { try? db.close() } }
            let counts = LockedCounts()
            DispatchQueue.concurrentPerform(iterations: dbs.count) { index in
                do {
                    counts.add(try Migrator.migrate(dbs[index]).count)
                } catch {
                    counts.fail("\(error)")
                }
            }
            #expect(counts.failures == [])
            #expect(counts.total == EmbeddedMigrations.all.count)
        }
    }
}

import Synchronization

final class LockedCounts: Sendable {
    private let state = Mutex<(total: Int, failures: [String])>((0, []))
    func add(_ n: Int) { state.withLock { $0.total += n } }
    func fail(_ message: String) { state.withLock { $0.failures.append(message) } }
    var total: Int { state.withLock { $0.total } }
    var failures: [String] { state.withLock { $0.failures } }
}
