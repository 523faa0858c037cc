import GatehouseEncoding
import HTTP1

/// What the OpenTelemetry SDK specification's environment variables say about trace export
/// ("Environment Variable Specification", "OTLP Exporter"): where, with which headers, which
/// resource, which sampler, and the batch processor's bounds. Pure: read from the variables given.
public struct TelemetrySettings: Sendable, Equatable {
    /// The full URL spans are posted to (`…/v1/traces`).
    public var endpoint: String
    /// `OTEL_EXPORTER_OTLP_HEADERS` / `…_TRACES_HEADERS`, decoded.
    public var headers: [(name: String, value: String)]
    /// `service.name` first, then `OTEL_RESOURCE_ATTRIBUTES`' entries.
    public var resource: [(key: String, value: String)]
    public var sampling: TraceSampling
    /// `OTEL_BSP_SCHEDULE_DELAY`: the longest a span waits before its batch is sent.
    public var scheduleDelayMilliseconds: Int
    /// `OTEL_BSP_MAX_QUEUE_SIZE`: spans waiting beyond this are dropped (and counted).
    public var maxQueueSize: Int
    /// `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`.
    public var maxBatchSize: Int
    /// `OTEL_EXPORTER_OTLP_TIMEOUT` / `…_TRACES_TIMEOUT`: one export's limit.
    public var timeoutMilliseconds: Int

    public static func == (a: TelemetrySettings, b: TelemetrySettings) -> Bool {
        a.endpoint == b.endpoint && a.headers.elementsEqual(b.headers, by: { $0 == $1 })
            && a.resource.elementsEqual(b.resource, by: { $0 == $1 }) && a.sampling == b.sampling
            && a.scheduleDelayMilliseconds == b.scheduleDelayMilliseconds && a.maxQueueSize == b.maxQueueSize
            && a.maxBatchSize == b.maxBatchSize && a.timeoutMilliseconds == b.timeoutMilliseconds
    }

    /// The settings `environment` gives, nil when no endpoint is set (nothing is exported then).
    /// - Throws: `TelemetrySettingsError` naming the variable and what is wrong with it.
    public static func read(_ environment: [String: String]) throws(TelemetrySettingsError) -> TelemetrySettings? {
        let value = { (name: String) -> String? in
            guard let v = environment[name]?.trimmingASCIIWhitespace(), !v.isEmpty else { return nil }
            return String(v)
        }
        let endpoint: String
        if let traces = value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            endpoint = try checkedURL(traces, variable: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        } else if let base = value("OTEL_EXPORTER_OTLP_ENDPOINT") {
            let checked = try checkedURL(base, variable: "OTEL_EXPORTER_OTLP_ENDPOINT")
            endpoint = (checked.hasSuffix("/") ? String(checked.dropLast()) : checked) + "/v1/traces"
        } else {
            return nil
        }
        if let protocolName = value("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ?? value("OTEL_EXPORTER_OTLP_PROTOCOL"),
           protocolName != "http/protobuf" {
            throw TelemetrySettingsError(variable: environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] != nil
                                         ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL",
                                         problem: "\"\(protocolName)\": only http/protobuf is exported")
        }
        var headers = try pairs(value("OTEL_EXPORTER_OTLP_HEADERS"), variable: "OTEL_EXPORTER_OTLP_HEADERS")
        headers += try pairs(value("OTEL_EXPORTER_OTLP_TRACES_HEADERS"), variable: "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
        for (name, headerValue) in headers {
            guard HTTPField.Checked(name: name, value: headerValue) != nil else {
                throw TelemetrySettingsError(variable: "OTEL_EXPORTER_OTLP_HEADERS", problem: "\"\(name)\" is not a valid header")
            }
        }
        var attributes = try pairs(value("OTEL_RESOURCE_ATTRIBUTES"), variable: "OTEL_RESOURCE_ATTRIBUTES")
        let serviceName = value("OTEL_SERVICE_NAME")
            ?? attributes.first { $0.0 == "service.name" }.map { $0.1 } ?? "gatehouse"
        // The SDK's own resource attributes ("Resource semantic conventions": telemetry.sdk.*).
        let sdk = [("telemetry.sdk.name", "gatehouse"), ("telemetry.sdk.language", "swift")]
        attributes.removeAll { pair in pair.0 == "service.name" || sdk.contains { $0.0 == pair.0 } }
        attributes = sdk + attributes
        let timeout = try positiveNumber(value("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") ?? value("OTEL_EXPORTER_OTLP_TIMEOUT"),
                                       default: 10_000, variable: value("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") != nil
                                       ? "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT" : "OTEL_EXPORTER_OTLP_TIMEOUT")
        let queue = try positiveNumber(value("OTEL_BSP_MAX_QUEUE_SIZE"), default: 2048, variable: "OTEL_BSP_MAX_QUEUE_SIZE")
        let batch = try positiveNumber(value("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), default: 512, variable: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE")
        guard batch <= queue else {
            throw TelemetrySettingsError(variable: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
                                         problem: "\(batch) is larger than OTEL_BSP_MAX_QUEUE_SIZE (\(queue))")
        }
        return TelemetrySettings(
            endpoint: endpoint, headers: headers,
            resource: [("service.name", serviceName)] + attributes,
            sampling: try sampling(value("OTEL_TRACES_SAMPLER"), argument: value("OTEL_TRACES_SAMPLER_ARG")),
            scheduleDelayMilliseconds: try positiveNumber(value("OTEL_BSP_SCHEDULE_DELAY"), default: 5000,
                                                        variable: "OTEL_BSP_SCHEDULE_DELAY"),
            maxQueueSize: queue, maxBatchSize: batch, timeoutMilliseconds: timeout)
    }

    /// `OTEL_TRACES_SAMPLER` and its argument (the specification's built-in samplers; the ratio
    /// defaults to 1).
    static func sampling(_ name: String?, argument: String?) throws(TelemetrySettingsError) -> TraceSampling {
        func ratio() throws(TelemetrySettingsError) -> Double {
            guard let argument else { return 1 }
            guard let r = Double(argument), r >= 0, r <= 1 else {
                throw TelemetrySettingsError(variable: "OTEL_TRACES_SAMPLER_ARG",
                                             problem: "\"\(argument)\" is not a ratio between 0 and 1")
            }
            return r
        }
        switch name ?? "parentbased_always_on" {
        case "always_on": return TraceSampling(root: .alwaysOn, parentBased: false)
        case "always_off": return TraceSampling(root: .alwaysOff, parentBased: false)
        case "traceidratio": return TraceSampling(root: .traceIDRatio(try ratio()), parentBased: false)
        case "parentbased_always_on": return TraceSampling(root: .alwaysOn, parentBased: true)
        case "parentbased_always_off": return TraceSampling(root: .alwaysOff, parentBased: true)
        case "parentbased_traceidratio": return TraceSampling(root: .traceIDRatio(try ratio()), parentBased: true)
        case let other:
            throw TelemetrySettingsError(variable: "OTEL_TRACES_SAMPLER", problem: "\"\(other)\" is not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio")
        }
    }

    /// An `http://` or `https://` URL with a host.
    private static func checkedURL(_ url: String, variable: String) throws(TelemetrySettingsError) -> String {
        let lowered = url.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            throw TelemetrySettingsError(variable: variable, problem: "\"\(url)\" is not an http:// or https:// URL")
        }
        let rest = url.drop { $0 != "/" }.dropFirst(2)
        guard let host = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first, !host.isEmpty,
              !url.contains("?"), !url.contains("#"), !url.contains(" ") else {
            throw TelemetrySettingsError(variable: variable, problem: "\"\(url)\" has no host, or has a query or fragment")
        }
        return url
    }

    /// The W3C Baggage-like list the specification uses: `key=value` entries separated by commas,
    /// each part percent-decoded.
    private static func pairs(_ list: String?, variable: String) throws(TelemetrySettingsError) -> [(String, String)] {
        guard let list else { return [] }
        var result: [(String, String)] = []
        for entry in list.split(separator: ",") {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2,
                  let key = PercentEncoding.decodeString(parts[0].trimmingASCIIWhitespace()), !key.isEmpty,
                  let value = PercentEncoding.decodeString(parts[1].trimmingASCIIWhitespace()) else {
                throw TelemetrySettingsError(variable: variable, problem: "entries must be key=value, separated by commas")
            }
            result.append((key, value))
        }
        return result
    }

    /// A whole number of at least 1 (milliseconds or a count), at most a day's milliseconds.
    private static func positiveNumber(_ text: String?, default value: Int, variable: String) throws(TelemetrySettingsError) -> Int {
        guard let text else { return value }
        guard let n = Int(text), n >= 1, n <= 86_400_000 else {
            throw TelemetrySettingsError(variable: variable, problem: "\"\(text)\" is not a whole number of at least 1")
        }
        return n
    }
}

/// A variable whose value cannot be used, and why (`serve` stops with exit code 64).
public struct TelemetrySettingsError: Error, Sendable, CustomStringConvertible {
    public let variable: String
    public let problem: String
    public var description: String { "\(variable): \(problem)" }
}
