import Foundation
import GatehouseSessions
import Testing

@Suite("Embedded migrations match Migrations/*.sql")
struct EmbeddedMigrationsTests {
    /// The repository root, from this file's path: Tests/GatehouseTests/Sessions/<file>.
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func migrationFiles() throws -> [(name: String, bytes: [UInt8])] {
        let folder = repositoryRoot.appendingPathComponent("Migrations")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".sql") }.sorted()
        return try names.map { name in
            (name, Array(try Data(contentsOf: folder.appendingPathComponent(name))))
        }
    }

    @Test("Every Migrations/*.sql file is embedded, in order, with the same file name")
    func sameFilesInSameOrder() throws {
        let files = try Self.migrationFiles()
        #expect(!files.isEmpty)
        #expect(files.map(\.name) == EmbeddedMigrations.all.map(\.fileName))
    }

    @Test("Each embedded copy is byte-identical to its file (regenerate EmbeddedMigrations.swift when this fails)")
    func byteIdentical() throws {
        let embedded = Dictionary(uniqueKeysWithValues: EmbeddedMigrations.all.map { ($0.fileName, $0) })
        for file in try Self.migrationFiles() {
            let copy = try #require(embedded[file.name], "\(file.name) is not embedded")
            #expect(Array(copy.sql.utf8) == file.bytes, "\(file.name) differs from its embedded copy")
        }
    }

    @Test("Versions start at 1 and increase without gaps")
    func versionsAreContiguous() {
        #expect(EmbeddedMigrations.all.map(\.version) == Array(1...EmbeddedMigrations.all.count))
    }
}
