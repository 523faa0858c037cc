import ArgumentParser
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Gatehouse
import GatehouseCore
import GatehouseOIDC
import Logging

struct ServeCommand: AsyncParsableCommand {
    static let configuration = ConfigurationFileOption.command("serve",
        abstract: "Run the gateway (applies pending migrations first).")

    @OptionGroup var configFile: ConfigurationFileOption

    func run() async throws {
        let loaded = try configFile.load()
        let config = loaded.configuration
        LogBootstrap.bootstrap(level: config.logLevel, format: config.logFormat)
        let logger = Logger(label: "gatehouse")
        // Before the listener opens (the signals are blocked since the process began: `ShutdownSignals`).
        let (reloads, reloadRequests) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let signals = ShutdownSignals(reloads: reloadRequests)
        let tracer = try TelemetryStart.tracer(command: "gatehouse", logger: logger)
        let runtime: GatewayRuntime
        do {
            runtime = try GatewayRuntime.start(configuration: config, logger: logger, tracer: tracer)
        } catch {
            report("gatehouse: \(error)")
            throw ExitCode(error.exitCode)
        }
        logger.info("gatehouse serving", metadata: ["http.port": "\(runtime.port)", "public.url": "\(config.publicURL.origin)"])
        let reloader = ConfigurationReloader(runtime: runtime, file: configFile.config, loaded: loaded, logger: logger)
        if let path = reloader.path, !ConfigurationWatcher.start(path: path, changes: reloadRequests) {
            logger.warning("the configuration file's directory cannot be watched: reload with SIGHUP", metadata: ["file": "\(path)"])
        }
        let reloading = Task { for await reason in reloads { await reloader.reload(because: reason) } }
        defer { reloading.cancel() }
        let stop = await ServeStop.first(runtime: runtime, signals: signals)
        if case .unusableProvider(let why) = stop {
            // No variable supplies an endpoint the provider does not publish: waiting cannot help.
            logger.critical("provider unusable; stopping", metadata: ["error": "\(why)"])
            report("gatehouse: \(why)")
            await runtime.shutdown(grace: .seconds(1))
            throw Exit.usage
        }
        logger.info("shutting down", metadata: ["signal": "\(stop)"])
        await runtime.shutdown()
        logger.info("stopped")
    }
}

/// Why `serve` stops: a signal, or a first discovery that lacks a required endpoint with no
/// override (SPEC: "a required endpoint missing from discovery and not set stops startup naming
/// the variable"). An unreachable provider does not stop it: discovery is retried in the background.
enum ServeStop: Sendable, CustomStringConvertible {
    case signal(String)
    case unusableProvider(String)
    case none

    var description: String {
        switch self {
        case .signal(let name): name
        case .unusableProvider(let why): why
        case .none: "none"
        }
    }

    /// The first stop reason. Not a task group: a group would wait for a discovery attempt still
    /// hanging at a slow provider before a signal could be acted on.
    static func first(runtime: GatewayRuntime, signals: ShutdownSignals) async -> ServeStop {
        let reasons = AsyncStream<ServeStop> { continuation in
            let signal = Task { continuation.yield(.signal(await signals.wait())) }
            // A provider that lacks an endpoint no variable supplies is a configuration error (each
            // provider's own); one that is merely down is retried in the background.
            let registry = runtime.context.providers
            let discoveries = registry.all.map { provider in
                Task {
                    do { _ = try await provider.connection.clients() } catch {
                        if let discovery = error as? DiscoveryError, discovery.stopsServe {
                            let why = provider.configuration.idp.ownVariableNames(in: "\(error)")
                            continuation.yield(.unusableProvider(registry.named ? "\(provider.name): \(why)" : why))
                        }
                    }
                }
            }
            continuation.onTermination = { _ in
                signal.cancel()
                for discovery in discoveries { discovery.cancel() }
            }
        }
        for await reason in reasons { return reason }
        return .none
    }
}
