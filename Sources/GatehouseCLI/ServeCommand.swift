import ArgumentParser
import Foundation
import Gatehouse
import GatehouseCore
import Logging

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the gateway (applies pending migrations first).",
        discussion: environmentHelp([]))

    func run() async throws {
        let config = try loadConfiguration(requireSecretKey: true)
        LogBootstrap.bootstrap(level: config.logLevel, format: config.logFormat)
        let logger = Logger(label: "gatehouse")
        let runtime: GatewayRuntime
        do {
            runtime = try GatewayRuntime.start(configuration: config, logger: logger)
        } catch {
            report("gatehouse: \(error)")
            throw ExitCode(error.exitCode)
        }
        logger.info("gatehouse serving", metadata: ["http.port": "\(runtime.port)", "public.url": "\(config.publicURL.origin)"])
        let signal = await ShutdownSignal.wait()
        logger.info("shutting down", metadata: ["signal": "\(signal)"])
        await runtime.shutdown()
        logger.info("stopped")
    }
}

/// Waits for SIGTERM or SIGINT (delivered through Dispatch, so no work happens in a signal handler).
enum ShutdownSignal {
    static func wait() async -> String {
        let stream = AsyncStream<String> { continuation in
            let box = SignalSources()
            for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { continuation.yield(name) }
                source.resume()
                box.sources.append(source)
            }
            continuation.onTermination = { _ in box.cancel() }
        }
        for await name in stream { return name }
        return "end"
    }

    private final class SignalSources: @unchecked Sendable {
        var sources: [any DispatchSourceSignal] = []
        func cancel() { sources.forEach { $0.cancel() } }
    }
}
