import EventLoops
import GatehouseCore
import GatehouseTelemetry
import HTTP1
import HTTPServer
import Logging

/// Turns the server's per-request records into metrics and the access log (one line per request:
/// method, path without query, status, bytes, duration, request id, W3C trace id — never a query,
/// cookie or token).
///
/// A class: the server keeps it as `any HTTPServerObserver` and copies that once per request; a
/// struct this size is boxed in the existential and copied through its value witnesses (about 170
/// instructions), a class reference is retained.
public final class GatewayObserver: HTTPServerObserver {
    let metrics: GatewayMetrics
    let classify: @Sendable (Substring) -> RouteClass
    let logger: Logger
    let accessLog: Bool
    /// Set when traces are exported: each recorded request's server span goes there, its
    /// `http.route` from `route`.
    let tracer: Tracer?
    let route: @Sendable (Substring) -> String?
    /// `url.scheme` of the server spans: `https` on the HTTPS listener.
    let scheme: String
    /// Writes the access lines when the log handler is Gatehouse's own (`AccessLogWriting`):
    /// straight into bytes, buffered for the loop's turn on a loop's observer. nil: through
    /// `logger` (another handler, or handler metadata the writer does not know).
    private let accessWriter: AccessLogWriter?

    public convenience init(metrics: GatewayMetrics, logger: Logger, classify: @escaping @Sendable (Substring) -> RouteClass,
                            tracer: Tracer? = nil, route: @escaping @Sendable (Substring) -> String? = { _ in nil },
                            scheme: String = "http") {
        self.init(metrics: metrics, logger: logger, classify: classify, tracer: tracer, route: route, scheme: scheme,
                  buffersAccessLog: false)
    }

    private init(metrics: GatewayMetrics, logger: Logger, classify: @escaping @Sendable (Substring) -> RouteClass,
                 tracer: Tracer?, route: @escaping @Sendable (Substring) -> String?, scheme: String, buffersAccessLog: Bool) {
        self.scheme = scheme
        self.metrics = metrics
        self.logger = logger
        self.classify = classify
        self.tracer = tracer
        self.route = route
        accessLog = logger.logLevel <= .info
        accessWriter = accessLog ? (logger.handler as? any AccessLogWriting)?.accessLogWriter(buffering: buffersAccessLog) : nil
    }

    /// An observer object of the loop's own (the same metrics and log; its own access-log buffer,
    /// written at the end of each of the loop's turns): each request retains the observer it
    /// reports to.
    public func loopObserver(for loop: EventLoop) -> any HTTPServerObserver {
        GatewayObserver(metrics: metrics, logger: logger, classify: classify, tracer: tracer, route: route, scheme: scheme,
                        buffersAccessLog: true)
    }

    public func endOfBatch(loop: Int) {
        accessWriter?.flush()
    }

    public func requestCompleted(_ record: HTTPAccessRecord) {
        metrics.recordRequest(classify(record.path), status: record.status, durationNanoseconds: record.durationNanoseconds)
        if let tracer, record.spanID != 0,
           let span = GatewaySpans.server(record, route: route(record.path), scheme: scheme, now: Tracer.unixNanoseconds()) {
            tracer.record(span)
        }
        guard accessLog else { return }
        let line = AccessLogLine(method: record.method, path: OwnPath.withoutHandle(record.path), status: record.status,
                                 bytesSent: record.bytesSent, durationNanoseconds: record.durationNanoseconds,
                                 requestLoop: record.requestID.loop, requestNumber: record.requestID.number,
                                 clientIP: record.peer.ip, traceID: record.traceID)
        if let accessWriter { return accessWriter.write(line) }
        var metadata: Logger.Metadata = [:]
        for (key, value) in line.metadata { metadata[key] = .string(value) }
        logger.info("request", metadata: metadata)
    }

    /// The access log reads trace ids (and the spans, when exported, their own ids).
    public var recordsTraceIDs: Bool { accessLog }

    public var traceSampling: TraceSampling? { tracer?.sampling }

    public func connectionOpened() { metrics.connectionOpened() }
    public func connectionClosed() { metrics.connectionClosed() }
    public func connectionRejected() { metrics.connectionRejected() }
}
