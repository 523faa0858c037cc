import Foundation
import PackagePlugin

/// Embeds `Migrations/*.sql` (SQLite) and `Migrations/postgres/*.sql` in the target that uses it, as
/// `EmbeddedMigrations.all` and `.postgres`: the binary carries its schema wherever it runs, and
/// the shipped files are the only copy in the repository. Runs again whenever a file is added or changed.
@main
struct EmbedMigrationsPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let sqlite = context.package.directoryURL.appending(path: "Migrations")
        let postgres = sqlite.appending(path: "postgres")
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        let inputs = try [sqlite, postgres].flatMap { folder in
            try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "sql" }
        }
        return [.buildCommand(displayName: "Embedding Migrations/*.sql",
                              executable: try context.tool(named: "embed-migrations").url,
                              arguments: [output.path, sqlite.path, postgres.path],
                              inputFiles: inputs, outputFiles: [output])]
    }
}
