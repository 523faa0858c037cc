import GatehouseTelemetry
import HTTP1
import Testing

@Suite("OpenTelemetry settings (OTEL_* variables, SDK environment specification)")
struct TelemetrySettingsTests {
    @Test("No endpoint: nothing is exported, whatever else is set")
    func unset() throws {
        #expect(try TelemetrySettings.read([:]) == nil)
        #expect(try TelemetrySettings.read(["OTEL_TRACES_SAMPLER": "always_on", "OTEL_SERVICE_NAME": "x"]) == nil)
        #expect(try TelemetrySettings.read(["OTEL_EXPORTER_OTLP_ENDPOINT": "  "]) == nil)
    }

    @Test("The base endpoint gets /v1/traces; the traces endpoint is used as it is and wins")
    func endpoints() throws {
        #expect(try TelemetrySettings.read(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"])?.endpoint
                == "http://collector:4318/v1/traces")
        #expect(try TelemetrySettings.read(["OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example/otlp/"])?.endpoint
                == "https://c.example/otlp/v1/traces")
        #expect(try TelemetrySettings.read(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318",
                                            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:9/custom"])?.endpoint
                == "http://b:9/custom")
    }

    @Test("Defaults: service gatehouse, parentbased_always_on, the batch processor's bounds")
    func defaults() throws {
        let settings = try #require(try TelemetrySettings.read(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"]))
        #expect(settings.resource.first! == ("service.name", "gatehouse"))
        #expect(settings.resource.contains { $0 == ("telemetry.sdk.language", "swift") })
        #expect(settings.sampling == TraceSampling(root: .alwaysOn, parentBased: true))
        #expect(settings.scheduleDelayMilliseconds == 5000 && settings.maxQueueSize == 2048)
        #expect(settings.maxBatchSize == 512 && settings.timeoutMilliseconds == 10_000)
        #expect(settings.headers.isEmpty)
    }

    @Test("Headers and resource attributes: key=value lists, percent-decoded; OTEL_SERVICE_NAME wins over service.name")
    func lists() throws {
        let settings = try #require(try TelemetrySettings.read([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=abc%3D1, x-team = ops",
            "OTEL_RESOURCE_ATTRIBUTES": "service.name=ignored,deployment.environment=prod%20eu",
            "OTEL_SERVICE_NAME": "edge",
        ]))
        #expect(settings.headers.map { "\($0.name)=\($0.value)" } == ["x-api-key=abc=1", "x-team=ops"])
        #expect(settings.resource.first! == ("service.name", "edge"))
        #expect(settings.resource.contains { $0 == ("deployment.environment", "prod eu") })
        #expect(!settings.resource.contains { $0.value == "ignored" })
    }

    @Test("Every sampler of the specification", arguments: [
        ("always_on", TraceSampling(root: .alwaysOn, parentBased: false)),
        ("always_off", TraceSampling(root: .alwaysOff, parentBased: false)),
        ("traceidratio", TraceSampling(root: .traceIDRatio(0.25), parentBased: false)),
        ("parentbased_always_on", TraceSampling(root: .alwaysOn, parentBased: true)),
        ("parentbased_always_off", TraceSampling(root: .alwaysOff, parentBased: true)),
        ("parentbased_traceidratio", TraceSampling(root: .traceIDRatio(0.25), parentBased: true)),
    ])
    func samplers(name: String, expected: TraceSampling) throws {
        let settings = try TelemetrySettings.read(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                                                   "OTEL_TRACES_SAMPLER": name, "OTEL_TRACES_SAMPLER_ARG": "0.25"])
        #expect(settings?.sampling == expected)
    }

    @Test("A value that cannot be used names its variable", arguments: [
        (["OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://c"], "OTEL_EXPORTER_OTLP_ENDPOINT"),
        (["OTEL_EXPORTER_OTLP_ENDPOINT": "http://"], "OTEL_EXPORTER_OTLP_ENDPOINT"),
        (["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/v1/traces?key=1"], "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        (["OTEL_TRACES_SAMPLER": "sometimes"], "OTEL_TRACES_SAMPLER"),
        (["OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"], "OTEL_TRACES_SAMPLER_ARG"),
        (["OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "half"], "OTEL_TRACES_SAMPLER_ARG"),
        (["OTEL_EXPORTER_OTLP_HEADERS": "novalue"], "OTEL_EXPORTER_OTLP_HEADERS"),
        (["OTEL_EXPORTER_OTLP_HEADERS": "bad name=1"], "OTEL_EXPORTER_OTLP_HEADERS"),
        (["OTEL_RESOURCE_ATTRIBUTES": "a=%zz"], "OTEL_RESOURCE_ATTRIBUTES"),
        (["OTEL_BSP_SCHEDULE_DELAY": "0"], "OTEL_BSP_SCHEDULE_DELAY"),
        (["OTEL_BSP_MAX_QUEUE_SIZE": "10", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "20"], "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
        (["OTEL_EXPORTER_OTLP_TIMEOUT": "-5"], "OTEL_EXPORTER_OTLP_TIMEOUT"),
        (["OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"], "OTEL_EXPORTER_OTLP_PROTOCOL"),
    ])
    func refused(extra: [String: String], variable: String) {
        var environment = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"]
        environment.merge(extra) { _, new in new }
        #expect(throws: TelemetrySettingsError.self) { try TelemetrySettings.read(environment) }
        do { _ = try TelemetrySettings.read(environment) } catch { #expect(error.variable == variable) }
    }
}
