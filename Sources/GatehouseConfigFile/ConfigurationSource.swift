import FoundationEssentials
import GatehouseCore

/// Where the configuration comes from: the environment alone, or the file `GATEHOUSE_CONFIG` (or
/// `--config`) names with the environment over it. One loader validates either
/// (`GatehouseConfiguration.load`); problems in the file's values name its key and line.
public struct ConfigurationSource: Sendable {
    /// The file, when there is one.
    public let path: String?
    public let environment: [String: String]

    public init(path: String?, environment: [String: String]) {
        let named = path ?? environment["GATEHOUSE_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        self.path = named
        self.environment = environment
    }

    public struct Loaded: Sendable {
        public let configuration: GatehouseConfiguration
        /// The environment the loader read (the file's variables under the process's).
        public let environment: [String: String]
        /// The file's variables that the environment replaced (for `check`).
        public let overridden: [String]
        /// Where each of the file's variables was written.
        public let file: ConfigurationFile?
    }

    /// Reads and validates it all: the file's syntax, keys and types, then every value.
    public func load(requireSecretKey: Bool) -> Result<Loaded, ConfigurationErrors> {
        guard let path else {
            return GatehouseConfiguration.load(environment: environment, requireSecretKey: requireSecretKey)
                .map { Loaded(configuration: $0, environment: environment, overridden: [], file: nil) }
        }
        guard let bytes = FileManager.default.contents(atPath: path), let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(ConfigurationErrors(issues: [ConfigurationIssue(
                variable: "GATEHOUSE_CONFIG", message: "\(ConfigurationIssue.quote(path)) cannot be read as UTF-8 text")]))
        }
        let file: ConfigurationFile
        switch ConfigurationFile.parse(text, environment: environment, readFile: Self.readFile) {
        case .success(let parsed): file = parsed
        case .failure(let errors):
            return .failure(ConfigurationErrors(issues: errors.issues.map {
                ConfigurationIssue(variable: "\(path): \($0.variable)", message: $0.message)
            }))
        }
        let (merged, overridden) = file.merged(with: environment)
        switch GatehouseConfiguration.load(environment: merged, requireSecretKey: requireSecretKey) {
        case .success(let configuration):
            return .success(Loaded(configuration: configuration, environment: merged, overridden: overridden, file: file))
        case .failure(let errors):
            let pointed = file.pointing(errors, overridden: overridden)
            return .failure(ConfigurationErrors(issues: pointed.issues.map { issue in
                file.origins[issue.variable] == nil && !issue.variable.contains("(line ")
                    ? issue : ConfigurationIssue(variable: "\(path): \(issue.variable)", message: issue.message)
            }))
        }
    }

    static func readFile(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).flatMap { String(validating: $0, as: UTF8.self) }
    }
}
