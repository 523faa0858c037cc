import Foundation
import GatehouseSessions
import Testing

@Suite("Embedded migrations match Migrations/*.sql")
struct EmbeddedMigrationsTests {
    /// The repository root, from this file's path: Tests/GatehouseTests/Sessions/<file>.
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// Each engine's folder and the list embedded for it.
    static let engines: [(folder: String, embedded: [Migration])] = [
        ("Migrations", EmbeddedMigrations.all),
        ("Migrations/postgres", EmbeddedMigrations.postgres),
    ]

    static func migrationFiles(_ folderName: String = "Migrations") throws -> [(name: String, bytes: [UInt8])] {
        let folder = repositoryRoot.appendingPathComponent(folderName)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".sql") }.sorted()
        return try names.map { name in
            (name, Array(try Data(contentsOf: folder.appendingPathComponent(name))))
        }
    }

    @Test("Every Migrations/*.sql and Migrations/postgres/*.sql file is embedded, in order, with the same file name",
          arguments: 0..<2)
    func sameFilesInSameOrder(engine: Int) throws {
        let (folder, embedded) = Self.engines[engine]
        let files = try Self.migrationFiles(folder)
        #expect(!files.isEmpty)
        #expect(files.map(\.name) == embedded.map(\.fileName))
    }

    @Test("Each embedded copy is byte-identical to its file (regenerate EmbeddedMigrations.swift / EmbeddedPostgresMigrations.swift when this fails)",
          arguments: 0..<2)
    func byteIdentical(engine: Int) throws {
        let (folder, list) = Self.engines[engine]
        let embedded = Dictionary(uniqueKeysWithValues: list.map { ($0.fileName, $0) })
        for file in try Self.migrationFiles(folder) {
            let copy = try #require(embedded[file.name], "\(folder)/\(file.name) is not embedded")
            #expect(Array(copy.sql.utf8) == file.bytes, "\(folder)/\(file.name) differs from its embedded copy")
        }
    }

    @Test("Versions start at 1 and increase without gaps", arguments: 0..<2)
    func versionsAreContiguous(engine: Int) {
        let list = Self.engines[engine].embedded
        #expect(list.map(\.version) == Array(1...list.count))
    }
}
