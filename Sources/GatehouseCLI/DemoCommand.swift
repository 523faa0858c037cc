import ArgumentParser
import Crypto
import DevProvider
import FoundationEssentials
import Gatehouse
import GatehouseCore
import GatehouseOIDC
import HTTP1
import HTTPServer
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// `gatehouse demo`: the whole flow on loopback — a development OpenID provider, a sample API and the
/// gateway serving the demo SPA. Nothing here is fit for production, and nothing binds beyond 127.0.0.1.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run a local demo: development OpenID provider, sample API and the gateway, all on 127.0.0.1.",
        discussion: "Reads GATEHOUSE_PUBLIC_DIR (default Public), GATEHOUSE_LOG_LEVEL (default warning), and optionally GATEHOUSE_ROUTES, GATEHOUSE_SESSION_IDLE, GATEHOUSE_SESSION_LIFETIME and GATEHOUSE_LOG_FORMAT (text); everything else (keys, client, a database in a temporary folder) is generated.")

    @Option(help: "Port of the gateway (the URL to open).") var port: Int = 8080
    @Option(name: .customLong("provider-port"), help: "Port of the development provider.") var providerPort: Int = 9400
    @Option(name: .customLong("api-port"), help: "Port of the sample API.") var apiPort: Int = 9401
    @Option(name: .customLong("second-provider-port"), help: "Port of the second development provider.")
    var secondProviderPort: Int = 9402
    @Option(help: "Development providers: 2 (sign in with either, GATEHOUSE_PROVIDERS=dev,partner) or 1 (one provider, /callback).")
    var providers: Int = 2

    func validate() throws {
        guard providers == 1 || providers == 2 else { throw ValidationError("--providers is 1 or 2") }
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        // Quiet by default: the banner with the URL to open is what a person needs to see first.
        let level = Logger.Level(rawValue: environment["GATEHOUSE_LOG_LEVEL"] ?? "warning") ?? .warning
        LogBootstrap.bootstrap(level: level, format: .text)
        let logger = Logger(label: "gatehouse.demo")
        // Before any listener opens, as in `serve`: a SIGTERM sent as soon as a port answers must
        // stop the demo gracefully, not be lost or kill it.
        let signals = ShutdownSignals()

        // 1. The development providers: one, or two for "sign in with either".
        let publicURL = "http://127.0.0.1:\(port)"
        let (providerServers, providerEnvironment, issuers) = try developmentProviders(publicURL: publicURL, logger: logger)

        // 2. The sample API: asks whichever provider issued the bearer who the user is.
        let apiServer = HTTPServer(configuration: loopback(port: apiPort), handler: SampleAPI(issuers: issuers), logger: logger)
        do {
            try apiServer.start()
            for server in providerServers { try server.start() }
        } catch {
            report("gatehouse demo: cannot listen: \(error) (choose other ports with --provider-port/--second-provider-port/--api-port)")
            throw Exit.unavailable
        }

        // 3. The gateway, with a generated key and a temporary database.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-demo-\(getpid())")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString()
        var gatewayEnvironment: [String: String] = [
            "GATEHOUSE_PUBLIC_URL": publicURL,
            "GATEHOUSE_LISTEN": "127.0.0.1:\(port)",
            "GATEHOUSE_ROUTES": "/api=http://127.0.0.1:\(apiPort)",
            "GATEHOUSE_DATABASE": directory.appendingPathComponent("gatehouse.sqlite").path,
            "GATEHOUSE_SECRET_KEY": key,
            "GATEHOUSE_PUBLIC_DIR": environment["GATEHOUSE_PUBLIC_DIR"] ?? locatePublicDirectory(),
            "GATEHOUSE_LOG_LEVEL": level.rawValue,
            "GATEHOUSE_LOG_FORMAT": "text",
        ]
        gatewayEnvironment.merge(providerEnvironment) { _, provider in provider }
        // A few settings may be overridden, e.g. GATEHOUSE_ROUTES to put the demo in front of another API
        // (the benchmark does this), or a shared GATEHOUSE_DATABASE and GATEHOUSE_SECRET_KEY for two demos
        // that serve the same sessions (bench/run's pair on PostgreSQL), GATEHOUSE_CPU_AFFINITY to compare placements.
        for name in ["GATEHOUSE_SESSION_IDLE", "GATEHOUSE_SESSION_LIFETIME", "GATEHOUSE_ROUTES", "GATEHOUSE_LOG_FORMAT",
                     "GATEHOUSE_DATABASE", "GATEHOUSE_SECRET_KEY", "GATEHOUSE_CPU_AFFINITY", "GATEHOUSE_DPOP"] {
            if let value = environment[name], !value.isEmpty { gatewayEnvironment[name] = value }
        }
        let config: GatehouseConfiguration
        switch GatehouseConfiguration.load(environment: gatewayEnvironment, requireSecretKey: true) {
        case .success(let loaded): config = loaded
        case .failure(let errors):
            report("gatehouse demo: \(errors)")
            throw Exit.usage
        }
        let tracer = try TelemetryStart.tracer(command: "gatehouse demo", logger: logger)
        let runtime: GatewayRuntime
        do { runtime = try GatewayRuntime.start(configuration: config, logger: logger, tracer: tracer) } catch {
            report("gatehouse demo: \(error)")
            throw ExitCode(error.exitCode)
        }
        print("""

        Gatehouse demo is running — open \(publicURL)/ in a browser.
          development provider\(issuers.count == 1 ? ": " : "s:") \(issuers.joined(separator: ", "))   (type any user name to sign in)
          sample API:           http://127.0.0.1:\(apiPort)   (reached through \(publicURL)/api/...)
        Press Ctrl-C to stop.

        """)
        fflush(nil)
        _ = await signals.wait()
        await runtime.shutdown(grace: .seconds(5))
        for server in providerServers { await server.shutdown(graceNanoseconds: 1_000_000_000) }
        await apiServer.shutdown(graceNanoseconds: 1_000_000_000)
    }

    /// The development providers, each with its own issuer, keys and client (the gateway's redirect
    /// URI for each is /callback/NAME with two), not started; the gateway's variables for them, and
    /// their issuers.
    private func developmentProviders(publicURL: String, logger: Logger) throws
        -> (servers: [HTTPServer], environment: [String: String], issuers: [String]) {
        let named = providers == 2
        let demoProviders: [(name: String, display: String, port: Int)] = named
            ? [("dev", "Development provider", providerPort), ("partner", "Partner company", secondProviderPort)]
            : [(ProviderSettings.defaultName, "Development provider", providerPort)]
        var providerServers: [HTTPServer] = []
        var providerEnvironment: [String: String] = [:]
        for provider in demoProviders {
            let issuer = "http://127.0.0.1:\(provider.port)"
            let clientSecret = Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString()
            let suffix = named ? "/" + provider.name : ""
            let providerConfig = DevProviderConfiguration(
                issuer: issuer,
                clients: [DevClient(id: "gatehouse-demo", secret: clientSecret, redirectURIs: ["\(publicURL)/callback\(suffix)"],
                                    postLogoutRedirectURIs: ["\(publicURL)/"],
                                    backchannelLogoutURI: "\(publicURL)/backchannel-logout\(suffix)")])
            do { try providerConfig.validate() } catch {
                report("gatehouse demo: \(error)")
                throw Exit.usage
            }
            providerServers.append(HTTPServer(configuration: loopback(port: provider.port),
                                              handler: DevProvider(configuration: providerConfig, logger: logger), logger: logger))
            let prefix = named ? ProviderSettings.variablePrefix(for: provider.name) : "GATEHOUSE_"
            providerEnvironment[prefix + "ISSUER"] = issuer
            providerEnvironment[prefix + "CLIENT_ID"] = "gatehouse-demo"
            providerEnvironment[prefix + "CLIENT_SECRET"] = clientSecret
            if named { providerEnvironment[prefix + "DISPLAY_NAME"] = provider.display }
        }
        if named { providerEnvironment["GATEHOUSE_PROVIDERS"] = demoProviders.map(\.name).joined(separator: ",") }
        return (providerServers, providerEnvironment, demoProviders.map { "http://127.0.0.1:\($0.port)" })
    }

    private func loopback(port: Int) -> HTTPServerConfiguration {
        var config = HTTPServerConfiguration()
        config.host = "127.0.0.1"
        config.port = port
        config.loopCount = 1
        return config
    }
}

/// `Public/` next to the working directory, or beside the repository the binary was built in.
func locatePublicDirectory() -> String {
    let fm = FileManager.default
    if fm.fileExists(atPath: "Public/index.html") { return "Public" }
    var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    for _ in 0..<5 {
        let candidate = url.appendingPathComponent("Public")
        if fm.fileExists(atPath: candidate.appendingPathComponent("index.html").path) { return candidate.path }
        url = url.deletingLastPathComponent()
    }
    return "Public"
}

/// The demo's upstream API: says hello to whoever called, asking the provider's userinfo endpoint
/// with the bearer token the gateway attached (the API never sees a cookie). `GET /api/live` with
/// `Upgrade: websocket` opens the SPA's live panel: a WebSocket sending an update every second.
struct SampleAPI: TaskHTTPHandler {
    /// The development providers' issuers: a bearer is one of theirs.
    let issuers: [String]

    func handle(_ request: HTTPRequest, writer: any HTTPResponseWriter) async {
        let headers: HTTPHeaders = ["Content-Type": "application/json", "Cache-Control": "no-store"]
        // `DPoP …` too, with GATEHOUSE_DPOP=on (the proof is not checked here: a demo).
        guard let authorization = request.head.headers["Authorization"],
              authorization.hasPrefix("Bearer ") || authorization.hasPrefix("DPoP ") else {
            return await writer.respond(HTTPResponse(status: 401, headers: headers,
                                                     body: "{\"error\":\"unauthorized\",\"error_description\":\"No bearer token.\"}"))
        }
        let user = await userinfo(authorization: authorization)
        if request.head.path == "/api/live", request.head.headers.hasToken("Upgrade", "websocket") {
            return await SampleLiveFeed.accept(request, writer: writer, userinfo: user)
        }
        let body = "{\"message\":\"Hello from the sample API\",\"method\":\(JSONString.quoted(request.head.method)),"
            + "\"path\":\(JSONString.quoted(String(request.head.path))),\"user\":\(user)}"
        await writer.respond(HTTPResponse(status: 200, headers: headers, body: body))
    }

    /// The userinfo answer of the provider that knows the bearer token (JSON), or `null`.
    private func userinfo(authorization: String) async -> String {
        for issuer in issuers {
            let userinfo = ProviderHTTPRequest(method: .get, url: issuer + "/userinfo",
                                               headers: [ProviderHTTPHeader("Authorization", authorization)], operation: .userinfo)
            if let response = try? await HTTPProviderClient(timeout: 5).send(userinfo), response.status == 200 {
                return String(decoding: response.body, as: UTF8.self)
            }
        }
        return "null"
    }
}
