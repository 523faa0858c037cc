@testable import GatehouseTelemetry
import HTTP1
import Logging
import Synchronization
import Testing

@Suite("Span export: batches off the loops, a bounded queue, failures counted")
struct TracerTests {
    static func settings(queue: Int = 2048, batch: Int = 512, delay: Int = 50) -> TelemetrySettings {
        var settings = try! TelemetrySettings.read(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"])!
        (settings.maxQueueSize, settings.maxBatchSize, settings.scheduleDelayMilliseconds) = (queue, batch, delay)
        return settings
    }

    static func span(_ n: UInt64) -> SpanRecord {
        SpanRecord(traceID: TraceID(high: 1, low: n), spanID: n, parentSpanID: 0, name: "GET", kind: .server,
                   startUnixNanoseconds: 1, endUnixNanoseconds: 2, attributes: [])
    }

    @Test("Queued spans are exported in batches, and the rest at shutdown")
    func batches() async throws {
        let bodies = Mutex<[[UInt8]]>([])
        let tracer = Tracer(settings: Self.settings(batch: 10, delay: 60_000), logger: Logger(label: "test")) { body in
            bodies.withLock { $0.append(body) }
            return .accepted
        }
        tracer.start()
        for n in UInt64(1)...25 { tracer.record(Self.span(n)) }
        // Two full batches go at once; the last five wait for the delay, or the shutdown.
        try await eventuallyTrue { bodies.withLock { $0.count } >= 2 }
        await tracer.shutdown()
        let counts = try bodies.withLock { $0 }.map { try WireMessage($0).message(1).message(2).messages(2).count }
        #expect(counts == [10, 10, 5])
        #expect(tracer.droppedSpans == 0)
    }

    @Test("Past the queue's bound spans are dropped and counted; nothing waits for the collector")
    func bounded() async throws {
        let release = Mutex(false)
        let tracer = Tracer(settings: Self.settings(queue: 20, batch: 10, delay: 10), logger: Logger(label: "test")) { _ in
            while !release.withLock({ $0 }) { try? await Task.sleep(nanoseconds: 5_000_000) }
            return .accepted
        }
        tracer.start()
        let start = ContinuousClock.now
        for n in UInt64(1)...100 { tracer.record(Self.span(n)) }
        #expect(ContinuousClock.now - start < .seconds(5))
        #expect(tracer.droppedSpans >= 70)
        release.withLock { $0 = true }
        await tracer.shutdown()
    }

    @Test("A failed export drops its batch (counted) and the next waits; a 503 is a failure")
    func failures() async throws {
        let calls = Mutex(0)
        let tracer = Tracer(settings: Self.settings(batch: 5, delay: 10), logger: Logger(label: "test")) { _ in
            calls.withLock { $0 += 1 }
            return .refused(503)
        }
        tracer.start()
        for n in UInt64(1)...5 { tracer.record(Self.span(n)) }
        try await eventuallyTrue { tracer.droppedSpans == 5 }
        await tracer.shutdown()
        #expect(calls.withLock { $0 } == 1)
    }

    @Test("After shutdown spans are dropped, not kept")
    func afterShutdown() async {
        let tracer = Tracer(settings: Self.settings(), logger: Logger(label: "test")) { _ in .accepted }
        tracer.start()
        await tracer.shutdown()
        tracer.record(Self.span(1))
        #expect(tracer.droppedSpans == 1)
    }

    private func eventuallyTrue(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else { Issue.record("condition not met in 10 s"); return }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
    }
}
