import Crypto
import DevProvider
import Foundation
import Gatehouse
import GatehouseCore
import HTTPServer
import Logging
import Synchronization
import GatehouseEncoding
import GatehouseTime
import TestSupport

/// What a test changes about the standard setup.
struct HarnessOptions: Sendable {
    /// Extra or replaced `GATEHOUSE_*` variables.
    var environment: [String: String] = [:]
    /// Access-token lifetime at the development provider, seconds.
    var accessTokenLifetime = 300
    var logLevel: Logger.Level = .info
    /// False: the provider's port is reserved but nothing answers there until `startProvider()`.
    var startProvider = true
    /// The one clock of the gateway and the provider, for tests about expiry and timeouts: time moves
    /// only when the test advances it. Nil: the system clock.
    var clock: ManualClock?

    init(environment: [String: String] = [:], accessTokenLifetime: Int = 300, logLevel: Logger.Level = .info,
         startProvider: Bool = true, clock: ManualClock? = nil) {
        self.environment = environment
        self.accessTokenLifetime = accessTokenLifetime
        self.logLevel = logLevel
        self.startProvider = startProvider
        self.clock = clock
    }
}

enum HarnessError: Error, CustomStringConvertible {
    case configuration(String)
    case unexpected(String)

    var description: String {
        switch self {
        case .configuration(let why): "configuration: \(why)"
        case .unexpected(let why): why
        }
    }
}

/// Everything one gateway test needs, in this process on 127.0.0.1 — the way `gatehouse demo`
/// wires it: the development provider, an upstream test API, and the gateway started through
/// `GatewayRuntime.start` from a configuration loaded from an environment dictionary, with a
/// temporary database and public folder.
final class GatewayHarness: Sendable {
    static let clientID = "gatehouse-test"

    let options: HarnessOptions
    let directory: URL
    let configuration: GatehouseConfiguration
    let provider: DevProvider
    let tap: ProviderTap
    let backchannel: RecordingBackchannelTransport
    let upstream: UpstreamTestAPI
    /// Every log line the gateway wrote.
    let logLines: @Sendable () -> [String]

    private let gatewayReservation: PortReservation
    private let providerReservation: PortReservation
    /// A port where nothing listens (the `/down` route's upstream).
    private let closedReservation: PortReservation
    private let upstreamServer: HTTPServer
    private let providerServer = Mutex<HTTPServer?>(nil)
    private let runtime = Mutex<GatewayRuntime?>(nil)
    private let logger: Logger
    private let quietLogger = Logger(label: "gatehouse.test.peers") { _ in SwiftLogNoOpLogHandler() }

    var gatewayPort: Int { gatewayReservation.port }
    var providerPort: Int { providerReservation.port }
    var issuer: String { "http://127.0.0.1:\(providerPort)" }
    var publicURL: String { "http://127.0.0.1:\(gatewayPort)" }
    var cookieName: String { configuration.cookieName }
    var bindingCookieName: String { cookieName + "-login" }
    var databasePath: String { configuration.databasePath }
    var gateway: GatewayRuntime? { runtime.withLock { $0 } }

    /// Runs `body` with a started harness and always stops it afterwards.
    static func with(_ options: HarnessOptions = HarnessOptions(),
                     _ body: (GatewayHarness) async throws -> Void) async throws {
        let harness = try await GatewayHarness(options: options)
        do {
            try await body(harness)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    private init(options: HarnessOptions) async throws {
        self.options = options
        gatewayReservation = try PortReservation()
        providerReservation = try PortReservation()
        closedReservation = try PortReservation()
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("gatehouse-gwtest-\(UUID().uuidString)")
        let publicDirectory = directory.appendingPathComponent("public")
        try FileManager.default.createDirectory(at: publicDirectory, withIntermediateDirectories: true)
        try Data("<!doctype html><title>test SPA</title>\n".utf8).write(to: publicDirectory.appendingPathComponent("index.html"))

        let (output, lines) = LogOutput.collecting()
        logLines = lines
        let level = options.logLevel
        logger = Logger(label: "gatehouse.test") { label in
            LogBootstrap.makeHandler(label: label, level: level, format: .json, output: output)
        }

        // The upstream API can take any port: only the gateway's configuration names it.
        upstream = UpstreamTestAPI()
        var upstreamConfig = HTTPServerConfiguration()
        upstreamConfig.host = "127.0.0.1"
        upstreamConfig.port = 0
        upstreamConfig.loopCount = 1
        upstreamServer = HTTPServer(configuration: upstreamConfig, handler: upstream, logger: quietLogger)
        try upstreamServer.start()

        let gatewayURL = "http://127.0.0.1:\(gatewayReservation.port)"
        let clientSecret = Self.randomBase64()
        let providerConfig = DevProviderConfiguration(
            issuer: "http://127.0.0.1:\(providerReservation.port)",
            clients: [DevClient(id: Self.clientID, secret: clientSecret, redirectURIs: ["\(gatewayURL)/callback"],
                                postLogoutRedirectURIs: ["\(gatewayURL)/"],
                                backchannelLogoutURI: "\(gatewayURL)/backchannel-logout")],
            accessTokenLifetime: options.accessTokenLifetime)
        try providerConfig.validate()
        backchannel = RecordingBackchannelTransport()
        if let clock = options.clock {
            provider = DevProvider(configuration: providerConfig, logger: quietLogger, now: { clock.now() },
                                   transport: backchannel)
        } else {
            provider = DevProvider(configuration: providerConfig, logger: quietLogger, transport: backchannel)
        }
        tap = ProviderTap(provider: provider)

        var environment: [String: String] = [
            "GATEHOUSE_ISSUER": "http://127.0.0.1:\(providerReservation.port)",
            "GATEHOUSE_CLIENT_ID": Self.clientID,
            "GATEHOUSE_CLIENT_SECRET": clientSecret,
            "GATEHOUSE_PUBLIC_URL": gatewayURL,
            "GATEHOUSE_LISTEN": "127.0.0.1:\(gatewayReservation.port)",
            "GATEHOUSE_ROUTES": "/api=http://127.0.0.1:\(upstreamServer.localPort),/down=http://127.0.0.1:\(closedReservation.port),"
                + "/alice=http://127.0.0.1:\(upstreamServer.localPort)/api;allow=sub:alice",
            "GATEHOUSE_DATABASE": directory.appendingPathComponent("gatehouse.sqlite").path,
            "GATEHOUSE_SECRET_KEY": Self.randomBase64(),
            "GATEHOUSE_PUBLIC_DIR": publicDirectory.path,
            "GATEHOUSE_PROVIDER_TIMEOUT": "5s",
            "GATEHOUSE_LOG_FORMAT": "json",
        ]
        environment.merge(options.environment) { _, override in override }
        switch GatehouseConfiguration.load(environment: environment, requireSecretKey: true) {
        case .success(let loaded): configuration = loaded
        case .failure(let errors):
            await upstreamServer.shutdown(graceNanoseconds: 0)
            throw HarnessError.configuration("\(errors)")
        }

        do {
            if options.startProvider { try startProvider() }
            try startGateway()
            if options.startProvider { try await waitUntilProviderLoaded() }
        } catch {
            await stop()
            throw error
        }
    }

    // MARK: Servers

    func startProvider() throws {
        var config = HTTPServerConfiguration()
        config.host = "127.0.0.1"
        config.port = providerReservation.port
        config.loopCount = 1
        let server = HTTPServer(configuration: config, handler: tap, logger: quietLogger)
        try server.start()
        providerServer.withLock { $0 = server }
    }

    /// Stops the provider's server; its state (sessions, tokens) lives on for a later `startProvider()`.
    func stopProvider() async {
        guard let server = providerServer.withLock({ server in defer { server = nil }; return server }) else { return }
        await server.shutdown(graceNanoseconds: 500_000_000)
    }

    func startGateway() throws {
        let started: GatewayRuntime
        do {
            started = try GatewayRuntime.start(configuration: configuration, logger: logger,
                                               clock: options.clock ?? SystemClock())
        } catch {
            throw HarnessError.unexpected("gateway start: \(error)")
        }
        runtime.withLock { $0 = started }
    }

    func stopGateway() async {
        guard let running = runtime.withLock({ running in defer { running = nil }; return running }) else { return }
        await running.shutdown(grace: .seconds(2))
    }

    /// Generous: a first discovery attempt that fails on a loaded machine waits out the provider
    /// connection's back-off (1 s, 2 s, 4 s …) before the next one; this is a bound, not a timing.
    func waitUntilProviderLoaded(timeout: Duration = .seconds(30)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if gateway?.context.providers.first.connection.isLoaded == true { return }
            // A failed first discovery waits out its back-off on the gateway's clock: move a manual
            // one along, or the retry would never come.
            options.clock?.advance(seconds: 0.1)
            try await Task.sleep(for: .milliseconds(20))
        }
        throw HarnessError.unexpected("the gateway did not load the provider's metadata in time")
    }

    func stop() async {
        await stopGateway()
        await stopProvider()
        await upstreamServer.shutdown(graceNanoseconds: 500_000_000)
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Helpers

    func browser() -> Browser { Browser(harness: self) }

    /// A request without cookies (a fresh client, or the provider calling the gateway).
    func send(_ method: String, _ target: String, headers: [(String, String)] = [], body: TestRequestBody = .none,
              timeoutSeconds: Int = 20) async throws -> RawResponse {
        try await RawHTTPClient.send(port: gatewayPort, method: method, target: target, headers: headers, body: body,
                                     timeoutSeconds: timeoutSeconds)
    }

    /// The database file and its WAL, concatenated (what an attacker with the disk would read).
    func databaseBytes() throws -> [UInt8] {
        var bytes = [UInt8]()
        for suffix in ["", "-wal", "-journal"] {
            if let data = FileManager.default.contents(atPath: databasePath + suffix) { bytes += data }
        }
        return bytes
    }

    static func randomBase64() -> String {
        Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString()
    }
}

extension [UInt8] {
    /// True when `needle` occurs anywhere in these bytes.
    func containsBytes(of needle: String) -> Bool {
        let pattern = Array(needle.utf8)
        guard !pattern.isEmpty, pattern.count <= count else { return false }
        var start = 0
        while start + pattern.count <= count {
            guard let first = self[start...].firstIndex(of: pattern[0]), first + pattern.count <= count else { return false }
            if self[first..<(first + pattern.count)].elementsEqual(pattern) { return true }
            start = first + 1
        }
        return false
    }
}
