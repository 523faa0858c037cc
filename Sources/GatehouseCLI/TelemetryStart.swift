import FoundationEssentials
import GatehouseTelemetry
import Logging

/// The tracer `serve` and `demo` export spans with, from the OpenTelemetry variables; nil when no
/// endpoint is set (nothing is exported then, and no request makes a span).
enum TelemetryStart {
    static func tracer(command: String, logger: Logger) throws -> Tracer? {
        let settings: TelemetrySettings?
        do { settings = try TelemetrySettings.read(ProcessInfo.processInfo.environment) } catch {
            report("\(command): \(error)")
            throw Exit.usage
        }
        guard let settings else { return nil }
        logger.info("exporting traces", metadata: ["otel.endpoint": "\(settings.endpoint)",
                                                   "otel.sampler": "\(ProcessInfo.processInfo.environment["OTEL_TRACES_SAMPLER"] ?? "parentbased_always_on")"])
        return Tracer(settings: settings, logger: logger)
    }
}
