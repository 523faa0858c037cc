import CSQLite
import Foundation
import GatehouseSessions
import Synchronization
import Testing

@Suite("SQLiteDatabase (thin wrapper over libsqlite3)")
struct SQLiteDatabaseTests {
    @Test("Opening configures WAL, synchronous=NORMAL, foreign keys and a 5 s busy timeout")
    func pragmas() throws {
        try withTemporaryDirectory { dir in
            let db = try SQLiteDatabase(path: dir + "/a.sqlite")
            defer { try? db.close() }
            let settings = try db.withConnection { (conn: SQLiteConnection) throws(SQLiteError) -> [String] in
                [
                    try conn.queryFirst("PRAGMA journal_mode") { row in row.string(0) ?? "" } ?? "",
                    try conn.queryFirst("PRAGMA synchronous") { row in String(row.int64(0)) } ?? "",
                    try conn.queryFirst("PRAGMA foreign_keys") { row in String(row.int64(0)) } ?? "",
                    try conn.queryFirst("PRAGMA busy_timeout") { row in String(row.int64(0)) } ?? "",
                ]
            }
            #expect(settings == ["wal", "1", "1", "5000"])
        }
    }

    @Test("Every bind type round-trips: integer, real, text (Unicode, NUL, empty), blob (empty), null")
    func bindsRoundTrip() throws {
        let values: [SQLiteValue] = [
            .integer(Int64.min), .integer(Int64.max), .real(3.25), .text("héllo ✓"), .text("a\0b"), .text(""),
            .blob([0, 1, 255]), .blob([]), .null,
        ]
        let db = try SQLiteDatabase(path: ":memory:")
        let read = try db.withConnection { (conn: SQLiteConnection) throws(SQLiteError) -> [SQLiteValue] in
            try conn.execute("CREATE TABLE t (i INTEGER PRIMARY KEY, v ANY) STRICT")
            for (index, value) in values.enumerated() {
                try conn.run("INSERT INTO t (i, v) VALUES (?, ?)", [.integer(Int64(index)), value])
            }
            return try conn.query("SELECT v, typeof(v) FROM t ORDER BY i") { (row: SQLiteRow) throws(SQLiteError) -> SQLiteValue in
                switch try row.requiredString(1) {
                case "integer": return .integer(row.int64(0))
                case "real": return .real(row.double(0))
                case "text": return .text(try row.requiredString(0))
                case "blob": return .blob(try row.requiredBlob(0))
                default: return row.isNull(0) ? .null : .text("unexpected")
                }
            }
        }
        #expect(read == values)
    }

    @Test("Errors carry the code and the SQL with placeholders, never the bound values")
    func errorsHaveContextWithoutValues() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.withConnection { (conn: SQLiteConnection) throws(SQLiteError) in
            try conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
            try conn.run("INSERT INTO t (k) VALUES (?)", [.text("SECRET-VALUE")])
        }
        do {
            try db.withConnection { (conn: SQLiteConnection) throws(SQLiteError) in
                try conn.run("INSERT INTO t (k) VALUES (?)", [.text("SECRET-VALUE")])
            }
            Issue.record("a duplicate key must fail")
        } catch {
            #expect(error.code == 1555)  // SQLITE_CONSTRAINT_PRIMARYKEY
            #expect(error.primaryCode == SQLITE_CONSTRAINT)
            #expect(error.sql == "INSERT INTO t (k) VALUES (?)")
            #expect(!error.description.contains("SECRET-VALUE"))
            #expect(error.description.contains("UNIQUE constraint failed"))
        }
    }

    @Test("A wrong number of bound values is an error, not undefined behaviour")
    func bindCountChecked() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        #expect(throws: SQLiteError.self) {
            try db.withConnection { (conn: SQLiteConnection) throws(SQLiteError) in
                _ = try conn.query("SELECT ?, ?", [.integer(1)]) { row in row.int64(0) }
            }
        }
    }

    @Test("A transaction commits when its body returns and rolls back when it throws")
    func transactionRollback() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.withConnection { (conn: SQLiteConnection) throws(SQLiteError) in try conn.execute("CREATE TABLE t (k INTEGER)") }
        try db.transaction { (conn: SQLiteConnection) throws(SQLiteError) in try conn.run("INSERT INTO t VALUES (1)") }
        #expect(throws: SQLiteError.self) {
            try db.transaction { (conn: SQLiteConnection) throws(SQLiteError) in
                try conn.run("INSERT INTO t VALUES (2)")
                try conn.run("INSERT INTO nowhere VALUES (3)")
            }
        }
        let rows = try db.withConnection { (conn: SQLiteConnection) throws(SQLiteError) -> [Int64] in
            #expect(conn.isInTransaction == false)
            return try conn.query("SELECT k FROM t ORDER BY k") { row in row.int64(0) }
        }
        #expect(rows == [1])
    }

    @Test("Cached statements are reused safely, including the same SQL nested inside its own row callback")
    func statementCache() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        let result = try db.withConnection { (conn: SQLiteConnection) throws(SQLiteError) -> [Int64] in
            try conn.execute("CREATE TABLE t (k INTEGER)")
            for k in 1...3 { try conn.run("INSERT INTO t VALUES (?)", [.integer(Int64(k))]) }
            // More distinct statements than the cache holds still work.
            for k in 0..<100 { _ = try conn.queryFirst("SELECT \(k)") { row in row.int64(0) } }
            return try conn.query("SELECT k FROM t WHERE k >= ? ORDER BY k", [.integer(2)]) { (row: SQLiteRow) throws(SQLiteError) -> Int64 in
                let inner = try conn.query("SELECT k FROM t WHERE k >= ? ORDER BY k", [.integer(1)]) { $0.int64(0) }
                return row.int64(0) * 10 + Int64(inner.count)
            }
        }
        #expect(result == [23, 33])
    }

    @Test("close() checkpoints and leaves no -wal content; later use is a typed error")
    func closeCheckpoints() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/c.sqlite"
            let db = try SQLiteDatabase(path: path)
            try db.transaction { (conn: SQLiteConnection) throws(SQLiteError) in
                try conn.execute("CREATE TABLE t (v BLOB)")
                try conn.run("INSERT INTO t VALUES (?)", [.blob([UInt8](repeating: 7, count: 100_000))])
            }
            #expect(fileBytes(path + "-wal").count > 0, "the write went to the WAL first")
            try db.close()
            #expect(fileBytes(path + "-wal").isEmpty)
            try db.close()  // harmless
            do throws(SQLiteError) {
                try db.withConnection { (conn: SQLiteConnection) throws(SQLiteError) in try conn.execute("SELECT 1") }
                Issue.record("a closed database must refuse work")
            } catch {
                #expect(error.code == SQLITE_MISUSE)
            }
            let reopened = try SQLiteDatabase(path: path)
            defer { try? reopened.close() }
            let count = try reopened.withConnection { (conn: SQLiteConnection) throws(SQLiteError) -> Int64 in
                try conn.queryFirst("SELECT count(*) FROM t") { $0.int64(0) } ?? -1
            }
            #expect(count == 1)
        }
    }

    @Test("Opening a file that is not a database fails with a typed error")
    func notADatabase() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/junk.sqlite"
            try Data(repeating: 0x41, count: 4_096).write(to: URL(fileURLWithPath: path))
            #expect(throws: SQLiteError.self) { try SQLiteDatabase(path: path) }
            #expect(throws: SQLiteError.self) { try SQLiteDatabase(path: dir + "/missing-dir/x.sqlite") }
        }
    }

    @Test("Writers on two connections wait for each other instead of failing with SQLITE_BUSY")
    func concurrentWritersOnTwoConnections() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/w.sqlite"
            let a = try SQLiteDatabase(path: path)
            let b = try SQLiteDatabase(path: path)
            defer { try? a.close(); try? b.close() }
            try a.withConnection { (conn: SQLiteConnection) throws(SQLiteError) in
                try conn.execute("CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (0);")
            }
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { worker in
                let db = worker.isMultiple(of: 2) ? a : b
                for _ in 0..<50 {
                    do {
                        try db.transaction { (conn: SQLiteConnection) throws(SQLiteError) in
                            let n = try conn.queryFirst("SELECT n FROM counter") { $0.int64(0) } ?? 0
                            try conn.run("UPDATE counter SET n = ?", [.integer(n + 1)])
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
            #expect(failures.withLock { $0 } == [])
            let n = try b.withConnection { (conn: SQLiteConnection) throws(SQLiteError) -> Int64 in
                try conn.queryFirst("SELECT n FROM counter") { $0.int64(0) } ?? -1
            }
            #expect(n == 400, "every read-modify-write under BEGIN IMMEDIATE is serialized")
        }
    }
}
