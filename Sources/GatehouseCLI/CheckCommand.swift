import ArgumentParser
import FoundationEssentials
import Gatehouse
import GatehouseCore
import GatehouseOIDC
import GatehouseSessions
import EventLoops
import Logging

/// `gatehouse check`: everything `serve` needs, verified without serving.
struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate the configuration, reach the provider's discovery document, the database and the upstreams.",
        discussion: environmentHelp([]))

    func run() async throws {
        let config = try loadConfiguration(requireSecretKey: true)
        print("ok   configuration (\(GatehouseConfiguration.variables.count) variables checked)")
        var unavailable = false
        var misconfigured = false
        if let problem = ProviderConnection.clientCredentialProblem(config) {
            print("FAIL client key: \(problem)")
            misconfigured = true
        }

        let http = HTTPProviderClient(timeout: config.providerTimeout)
        do {
            let metadata = try await config.discoverProvider(http: http)
            print("ok   provider discovery: \(metadata.issuer) (GATEHOUSE_PROVIDER=\(config.provider.name.rawValue))")
            print("     authorization: \(metadata.authorizationEndpoint)")
            print("     token:         \(metadata.tokenEndpoint)")
            print("     token request: \(config.tokenRequest.rawValue.uppercased())")
            if metadata.endSessionEndpoint == nil, let template = config.logoutURL {
                print("     end session:   none; GATEHOUSE_LOGOUT_URL \(ProviderHTTPRequest.withoutQuery(template))")
            } else {
                print("     end session:   \(metadata.endSessionEndpoint ?? "none (logout returns to /; set GATEHOUSE_END_SESSION_ENDPOINT or GATEHOUSE_LOGOUT_URL)")")
            }
            print("     revocation:    \(metadata.revocationEndpoint ?? "none (refresh tokens are not revoked at logout)")")
            let algorithms = SigningAlgorithm.allowList(configured: config.idTokenAlgorithms,
                                                        advertised: metadata.idTokenSigningAlgValuesSupported)
            print("     ID token algorithms accepted: \(algorithms.map(\.rawValue).sorted().joined(separator: ", "))")
            let method = GatehouseOIDC.ClientAuthMethod(rawValue: config.clientAuthMethod.rawValue) ?? .none
            if let problem = ProviderConnection.authMethodProblem(metadata: metadata, method: method) {
                print("FAIL token endpoint authentication: \(problem)")
                misconfigured = true
            }
            if config.userinfo == .always && metadata.userinfoEndpoint == nil {
                print("FAIL GATEHOUSE_USERINFO is true but the provider has no userinfo_endpoint; set GATEHOUSE_USERINFO_ENDPOINT")
                misconfigured = true
            }
        } catch {
            print("FAIL provider discovery at \(ProviderMetadata.discoveryURL(issuer: config.issuer)): \(error)")
            if error.isMisconfiguration { misconfigured = true } else { unavailable = true }
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
            unavailable = true
        }

        for route in config.routes {
            do {
                _ = try SocketAddress.resolve(host: route.host, port: route.port)
                print("ok   route \(route.prefix) → \(route.upstream.origin)\(route.auth) (resolvable)")
            } catch {
                print("FAIL route \(route.prefix) → \(route.host): \(error)")
                unavailable = true
            }
        }
        if unavailable { throw Exit.unavailable }
        // The provider answered, but with metadata this configuration cannot use.
        if misconfigured { throw Exit.usage }
    }
}
