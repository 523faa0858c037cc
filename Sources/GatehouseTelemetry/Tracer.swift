import EventLoops
import GatehouseTime
import HTTP1
import HTTPClient
import Logging
import Synchronization

/// Where the gateway's spans go: sampled spans are queued (`SpanBatcher`) and exported in
/// batches over OTLP/HTTP protobuf by one thread of their own, so a slow or absent collector costs
/// a request nothing but the queueing. A failed export drops its batch (counted), and the next
/// waits: one second, doubling up to thirty.
///
/// Made only when an endpoint is configured (`TelemetrySettings.read`); without one there is no
/// tracer, the server asks no sampler, and no span is made.
public final class Tracer: Sendable {
    public let settings: TelemetrySettings
    let batcher: SpanBatcher
    let logger: Logger
    /// The export itself (a test's stand-in for the collector).
    let post: @Sendable ([UInt8]) async -> ExportOutcome

    public enum ExportOutcome: Sendable, Equatable {
        case accepted
        /// The collector answered this status (not 2xx).
        case refused(Int)
        case failed(String)
    }

    public init(settings: TelemetrySettings, logger: Logger,
                post: (@Sendable ([UInt8]) async -> ExportOutcome)? = nil) {
        self.settings = settings
        self.logger = logger
        batcher = SpanBatcher(maxQueueSize: settings.maxQueueSize, maxBatchSize: settings.maxBatchSize,
                              scheduleDelayMilliseconds: settings.scheduleDelayMilliseconds)
        self.post = post ?? Self.otlpPost(settings)
    }

    /// The sampler the server asks for each request.
    public var sampling: TraceSampling { settings.sampling }

    /// Spans dropped so far (queue full, export failed, or after shutdown).
    public var droppedSpans: UInt64 { batcher.dropped.load(ordering: .relaxed) }

    /// Queues a finished span.
    public func record(_ span: SpanRecord) { batcher.add(span) }

    /// Wall-clock time for span timestamps.
    public static func unixNanoseconds() -> UInt64 { UInt64(max(0, SystemClock().unixNanoseconds())) }

    /// Starts the export thread and the loop its exports run on: a loop of its own, so that an
    /// export needs no thread of the cooperative pool (busy or blocked, it would hold spans back).
    public func start() {
        let loop: EventLoop
        do { loop = try EventLoop(index: 0, threadName: "gatehouse-otlp-io") } catch {
            logger.error("the OpenTelemetry export loop could not start: no span will be exported", metadata: ["error": "\(error)"])
            return batcher.markFinished()
        }
        loop.start()
        let started = DetachedThread.start(name: "gatehouse-otlp") { [self] in
            exportUntilStopped(on: loop)
            loop.stopAndJoin()
        }
        if !started {
            logger.error("the OpenTelemetry export thread could not start: no span will be exported")
            loop.stopAndJoin()
            batcher.markFinished()
        }
    }

    /// Sends what is queued, then stops; waits at most `graceNanoseconds` for the last export.
    public func shutdown(graceNanoseconds: UInt64 = 5_000_000_000) async {
        batcher.stop()
        let deadline = EventLoop.monotonicNow() &+ graceNanoseconds
        while !batcher.isFinished, EventLoop.monotonicNow() < deadline {
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
    }

    private func exportUntilStopped(on loop: EventLoop) {
        var backOff: UInt64 = 0
        while let batch = batcher.nextBatch() {
            guard !batch.isEmpty else { continue }
            let body = OTLPEncoding.exportRequest(batch, resource: settings.resource)
            switch Self.waitFor(on: loop, { [post] in await post(body) }) {
            case .accepted:
                backOff = 0
            case let failure:
                batcher.dropped.add(UInt64(batch.count), ordering: .relaxed)
                logger.warning("OpenTelemetry export failed", metadata: [
                    "otel.endpoint": "\(settings.endpoint)",
                    "otel.spans_dropped": "\(batch.count)", "error": "\(failure)"])
                backOff = min(max(backOff * 2, 1_000_000_000), 30_000_000_000)
                // Stopping, the last batches are tried once each, without waiting between them.
                if !batcher.isStopping { batcher.pause(nanoseconds: backOff) }
            }
        }
        batcher.markFinished()
    }

    /// Runs `body` as a task on `loop` and blocks this (export) thread until it has finished.
    private static func waitFor(on loop: EventLoop, _ body: @escaping @Sendable () async -> ExportOutcome) -> ExportOutcome {
        let done = ThreadCondition()
        let result = Mutex<ExportOutcome?>(nil)
        Task(executorPreference: loop) {
            await loop.hop()
            let outcome = await body()
            done.lock()
            result.withLock { $0 = outcome }
            done.unlock()
            done.signal()
        }
        done.lock()
        while result.withLock({ $0 }) == nil { done.wait() }
        done.unlock()
        return result.withLock { $0 }!
    }

    /// The OTLP/HTTP export (OTLP specification "OTLP/HTTP"): a protobuf body posted to the
    /// endpoint with the configured headers, 2xx meaning accepted.
    static func otlpPost(_ settings: TelemetrySettings) -> @Sendable ([UInt8]) async -> ExportOutcome {
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/x-protobuf")
        headers.add("User-Agent", "gatehouse")
        for (name, value) in settings.headers { headers.add(name, value) }
        let (url, timeout, sent) = (settings.endpoint, UInt64(settings.timeoutMilliseconds) * 1_000_000, headers)
        return { body in
            do {
                let answer = try await FetchClient.shared.fetch("POST", url, headers: sent, body: body,
                                                                timeoutNanoseconds: timeout, maxResponseBytes: 64 * 1024)
                return (200..<300).contains(answer.status) ? .accepted : .refused(answer.status)
            } catch {
                return .failed("\(error)")
            }
        }
    }
}
