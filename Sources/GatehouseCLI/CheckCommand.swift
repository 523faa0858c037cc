import ArgumentParser
import FoundationEssentials
import Gatehouse
import GatehouseConfigFile
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

    @Option(name: .long, help: "A YAML configuration file (or GATEHOUSE_CONFIG); variables set beside it win.")
    var config: String?

    func run() async throws {
        let loaded = try loadConfiguration(requireSecretKey: true, file: self.config)
        let config = loaded.configuration
        if let file = loaded.file, let path = ConfigurationSource(path: self.config, environment: ProcessInfo.processInfo.environment).path {
            print("ok   configuration file \(path) (\(file.variables.count) settings)")
            for name in loaded.overridden {
                let origin = file.origins[name].map { " (line \($0.line), \($0.key))" } ?? ""
                print("     \(name) from the environment wins over the file\(origin)")
            }
        }
        print("ok   configuration (\(GatehouseConfiguration.variables.count) variables checked)")
        var unavailable = false
        var misconfigured = false
        // Every provider on its own: one that does not answer is named, the others still checked.
        let http = HTTPProviderClient(timeout: config.providerTimeout)
        var answering: [String] = []
        for provider in config.providers {
            let view = config.speaking(for: provider)
            // Each provider's variables by their own names (GATEHOUSE_IDP_<NAME>_…).
            func print(_ line: String) { Swift.print(provider.ownVariableNames(in: line)) }
            // One provider: the lines as they always were; several: each names its provider.
            let named = config.hasNamedProviders ? "provider \(provider.name) " : ""
            let profileVariable = config.hasNamedProviders
                ? ProviderSettings.variablePrefix(for: provider.name) + "PROFILE" : "GATEHOUSE_PROVIDER"
            if let problem = ProviderConnection.clientCredentialProblem(view) {
                print("FAIL \(named)client key: \(problem)")
                misconfigured = true
            }
            do {
                let metadata = try await view.discoverProvider(http: http)
                answering.append(provider.name)
                print("ok   \(named.isEmpty ? "provider " : named)discovery: \(metadata.issuer) (\(profileVariable)=\(view.provider.name.rawValue))")
                if config.hasNamedProviders { print("     redirect URI:  \(view.redirectURI)") }
                print("     authorization: \(metadata.authorizationEndpoint)")
                print("     token:         \(metadata.tokenEndpoint)")
                print("     token request: \(view.tokenRequest.rawValue.uppercased())")
                if metadata.endSessionEndpoint == nil, let template = view.logoutURL {
                    print("     end session:   none; GATEHOUSE_LOGOUT_URL \(ProviderHTTPRequest.withoutQuery(template))")
                } else {
                    print("     end session:   \(metadata.endSessionEndpoint ?? "none (logout returns to /; set GATEHOUSE_END_SESSION_ENDPOINT or GATEHOUSE_LOGOUT_URL)")")
                }
                print("     revocation:    \(metadata.revocationEndpoint ?? "none (refresh tokens are not revoked at logout)")")
                let parMode = view.idp.pushedAuthorization
                if parMode == .on, metadata.pushedAuthorizationRequestEndpoint == nil {
                    print("FAIL \(named)GATEHOUSE_PAR=on, but the provider has no pushed_authorization_request_endpoint (PAR, RFC 9126); set GATEHOUSE_PAR=auto or off")
                    misconfigured = true
                } else {
                    let pushes = parMode.pushes(endpoint: metadata.pushedAuthorizationRequestEndpoint)
                    print("     PAR:           \(pushes ? "pushed to \(metadata.pushedAuthorizationRequestEndpoint ?? "")" : "not used") (GATEHOUSE_PAR=\(parMode.rawValue))")
                    print("     DPoP:          \(view.idp.dpop == .on ? "on (tokens bound to a key per session)" : "off") (GATEHOUSE_DPOP=\(view.idp.dpop.rawValue))")
                    if view.idp.dpop == .on, !metadata.takesES256DPoPProofs {
                        print("FAIL \(named)GATEHOUSE_DPOP=on, but the provider does not list ES256 in dpop_signing_alg_values_supported (RFC 9449); set GATEHOUSE_DPOP=off")
                        misconfigured = true
                    }
                    if !pushes, metadata.requirePushedAuthorizationRequests == true {
                        print("FAIL \(named)the provider requires pushed authorization requests, but GATEHOUSE_PAR=off; set GATEHOUSE_PAR=auto")
                        misconfigured = true
                    }
                }
                let algorithms = SigningAlgorithm.allowList(configured: view.idTokenAlgorithms,
                                                            advertised: metadata.idTokenSigningAlgValuesSupported)
                print("     ID token algorithms accepted: \(algorithms.map(\.rawValue).sorted().joined(separator: ", "))")
                let keys = KeySet(metadata: metadata, http: http, configuredAlgorithms: view.idTokenAlgorithms)
                var keyAlgorithms: Set<SigningAlgorithm>?
                do {
                    try await keys.refresh()
                    keyAlgorithms = await keys.keyAlgorithms
                } catch {
                    print("FAIL \(named)jwks_uri \(metadata.jwksURI): \(error)")
                    unavailable = true
                }
                if let problem = IDTokenAlgorithmFit.problem(accepted: algorithms, advertised: metadata.idTokenSigningAlgValuesSupported,
                                                             keyAlgorithms: keyAlgorithms) {
                    print("FAIL \(named)every login would fail: \(problem)")
                    misconfigured = true
                }
                let method = GatehouseOIDC.ClientAuthMethod(rawValue: view.clientAuthMethod.rawValue) ?? .none
                if let problem = ProviderConnection.authMethodProblem(metadata: metadata, method: method) {
                    print("FAIL \(named)token endpoint authentication: \(problem)")
                    misconfigured = true
                }
                if method == .privateKeyJWT, let pem = view.clientPrivateKeyPEM,
                   let algorithm = ProviderConnection.clientKeyAlgorithm(view, pem: pem, metadata: metadata) {
                    let audience = view.securityProfile == .fapi2 ? metadata.issuer : metadata.tokenEndpoint
                    print("     client key:    \(algorithm.rawValue) (GATEHOUSE_CLIENT_KEY_ALG=\(view.idp.clientKeyAlgorithm.rawValue)), assertions for \(audience)")
                    if let problem = ProviderConnection.keyAlgorithmProblem(metadata: metadata, algorithm: algorithm) {
                        print("FAIL \(named)client key: \(problem)")
                        misconfigured = true
                    }
                }
                let gate = view.idp.loginGate
                if !gate.isOpen {
                    print("     sign-in allowed: " + [gate.emailDomains.map { "verified email at " + $0.joined(separator: ", ") },
                                                      gate.emails.map { "verified email " + $0.joined(separator: ", ") },
                                                      gate.groups.map { "in group " + $0.joined(separator: ", ") }]
                        .compactMap { $0 }.joined(separator: "; and "))
                }
                print("     groups claim:  \(view.idp.groupsClaim)")
                if view.userinfo == .always && metadata.userinfoEndpoint == nil {
                    print("FAIL \(named)GATEHOUSE_USERINFO is true but the provider has no userinfo_endpoint; set GATEHOUSE_USERINFO_ENDPOINT")
                    misconfigured = true
                }
            } catch {
                print("FAIL \(named.isEmpty ? "provider " : named)discovery at \(view.discoveryURL): \(error)")
                if error.isMisconfiguration { misconfigured = true } else { unavailable = true }
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
            unavailable = true
        }

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
                unavailable = true
            }
            if let rule = route.allow {
                print("     allow:         " + rule.alternatives.map { terms in
                    terms.map { "\($0.claim) is \($0.values.joined(separator: " or "))" }.joined(separator: ", and ")
                }.joined(separator: "; or ") + " (\(rule))")
            }
        }
        if unavailable { throw Exit.unavailable }
        // The provider answered, but with metadata this configuration cannot use.
        if misconfigured { throw Exit.usage }
    }
}
