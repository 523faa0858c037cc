import ArgumentParser
import FoundationEssentials
import Gatehouse
import GatehouseConfigFile
import GatehouseCore
import GatehouseOIDC
import GatehouseSessions
import GatehouseTime
import EventLoops
import Logging

/// `gatehouse check`: everything `serve` needs, verified without serving.
struct CheckCommand: AsyncParsableCommand {
    static let configuration = ConfigurationFileOption.command("check",
        abstract: "Validate the configuration, reach the provider's discovery document, the database and the upstreams.")

    @OptionGroup var configFile: ConfigurationFileOption

    func run() async throws {
        let loaded = try configFile.load()
        let config = loaded.configuration
        if let file = loaded.file, let path = ConfigurationSource(path: configFile.config, environment: ProcessInfo.processInfo.environment).path {
            print("ok   configuration file \(path) (\(file.variables.count) settings)")
            for name in loaded.overridden {
                let origin = file.origins[name].map { " (line \($0.line), \($0.key))" } ?? ""
                print("     \(name) from the environment wins over the file\(origin)")
            }
        }
        print("ok   configuration (\(GatehouseConfiguration.variables.count) variables checked)")
        var findings = CheckFindings()
        // Every provider on its own: one that does not answer is named, the others still checked.
        let http = HTTPProviderClient(timeout: config.providerTimeout)
        var answering: [String] = []
        for provider in config.providers {
            if await ProviderCheck(config: config, provider: provider, http: http).run(&findings) {
                answering.append(provider.name)
            }
        }
        if config.hasNamedProviders {
            print("\(answering.count == config.providers.count ? "ok  " : "FAIL") providers answering: "
                  + "\(answering.isEmpty ? "none" : answering.joined(separator: ", ")) of \(config.providers.map(\.name).joined(separator: ", "))")
        }

        // `target` prints a PostgreSQL URI without its password; the errors carry none either.
        let target = SessionDatabaseTarget(config.databasePath)
        do {
            let db = try target.openMaintenance(logger: Logger(label: "gatehouse"))
            defer { try? db.close() }
            _ = try db.migrate()
            try db.ping()
            print("ok   database \(target.engine.rawValue) \(target) (writable, migrations applied)")
        } catch {
            print("FAIL database \(target.engine.rawValue) \(target): \(error)")
            findings.unavailable = true
        }

        let tls = ListenerTLSCheck.lines(for: config.listenerTLS, listen: config.listen, now: SystemClock().unixSeconds())
        tls.lines.forEach { print($0) }
        if tls.failed { findings.misconfigured = true }
        print(PublicFolderCheck.line(for: config.publicDir))
        print("     session cookie: \(config.cookieName)" + (config.cookieDomain.map { ", Domain=\($0) (shared with its hosts)" } ?? ", host-only"))
        if config.cors.isEnabled {
            print("     CORS:          \(config.cors.origins.joined(separator: ", ")) (credentials allowed)")
        }

        for route in config.routes {
            do {
                _ = try SocketAddress.resolve(host: route.host, port: route.port)
                print("ok   route \(route.prefix) → \(route.upstream.origin)\(route.auth)"
                      + "\(route.providers.map { ";providers=" + $0.joined(separator: "|") } ?? "") (resolvable)")
            } catch {
                print("FAIL route \(route.prefix) → \(route.host): \(error)")
                findings.unavailable = true
            }
            if let rule = route.allow {
                print("     allow:         " + rule.alternatives.map { terms in
                    terms.map { "\($0.claim) is \($0.values.joined(separator: " or "))" }.joined(separator: ", and ")
                }.joined(separator: "; or ") + " (\(rule))")
            }
        }
        if findings.unavailable { throw Exit.unavailable }
        // The provider answered, but with metadata this configuration cannot use.
        if findings.misconfigured { throw Exit.usage }
    }
}
