import ArgumentParser
import FoundationEssentials
import GatehouseConfigFile
import GatehouseCore
#if canImport(Glibc)
import Glibc
#endif

/// `gatehouse`: the command line of the gateway (SPEC "Command line"). Started by `GatehouseMain`.
struct GatehouseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gatehouse",
        abstract: "A Backend-for-Frontend OAuth 2.0 / OpenID Connect gateway for single-page apps.",
        discussion: "Configuration comes from GATEHOUSE_* environment variables; `gatehouse <command> --help` lists the ones each command reads. Exit codes: 0 success, 64 bad usage or configuration, 69 a required service unavailable, 1 anything else.",
        subcommands: [ServeCommand.self, DemoCommand.self, MigrateCommand.self, SessionsCommand.self,
                      KeygenCommand.self, CheckCommand.self, SchemaCommand.self])
}

/// Exit codes of the contract (sysexits.h names).
enum Exit {
    static let usage = ExitCode(64)
    static let unavailable = ExitCode(69)
    static let failure = ExitCode(1)
}

/// Writes a message for the operator to standard error.
func report(_ message: String) {
    let line = Array((message + "\n").utf8)
    line.withUnsafeBytes { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

/// `--config`, shared by the commands that read the whole configuration (`serve`, `check`).
struct ConfigurationFileOption: ParsableArguments {
    @Option(name: .long, help: "A YAML configuration file (or GATEHOUSE_CONFIG); variables set beside it win.")
    var config: String?

    /// A command reading the whole configuration: its `--help` lists every variable.
    static func command(_ name: String, abstract: String) -> CommandConfiguration {
        CommandConfiguration(commandName: name, abstract: abstract, discussion: environmentHelp([]))
    }

    /// The configuration, or exit 64 listing every problem (`loadConfiguration`).
    func load() throws -> ConfigurationSource.Loaded {
        try loadConfiguration(requireSecretKey: true, file: config)
    }
}

/// Loads the configuration (the environment, or the file `--config`/`GATEHOUSE_CONFIG` names with
/// the environment over it) or exits 64 listing every problem, each naming its variable or its key
/// and line.
func loadConfiguration(requireSecretKey: Bool, file: String? = nil) throws -> ConfigurationSource.Loaded {
    let environment = ProcessInfo.processInfo.environment
    switch ConfigurationSource(path: file, environment: environment).load(requireSecretKey: requireSecretKey) {
    case .success(let loaded):
        for name in GatehouseConfiguration.unknownVariables(in: loaded.environment) {
            report("warning: \(name) is not a Gatehouse variable (typo?)")
        }
        return loaded
    case .failure(let errors):
        report("gatehouse: invalid configuration:\n" + errors.description)
        throw Exit.usage
    }
}

/// The `--help` text listing environment variables with their defaults.
func environmentHelp(_ names: [String]) -> String {
    let table = GatehouseConfiguration.variables.filter { names.isEmpty || names.contains($0.name) }
    return "Environment:\n" + table.map { "  \($0.name) (default: \($0.default))\n      \($0.meaning)" }.joined(separator: "\n")
}
