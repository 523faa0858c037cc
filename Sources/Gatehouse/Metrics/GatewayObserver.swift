import EventLoops
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

    public init(metrics: GatewayMetrics, logger: Logger, classify: @escaping @Sendable (Substring) -> RouteClass) {
        self.metrics = metrics
        self.logger = logger
        self.classify = classify
        accessLog = logger.logLevel <= .info
    }

    /// An observer object of the loop's own (the same metrics and log): each request retains
    /// the observer it reports to.
    public func loopObserver(for loop: EventLoop) -> any HTTPServerObserver {
        GatewayObserver(metrics: metrics, logger: logger, classify: classify)
    }

    public func requestCompleted(_ record: HTTPAccessRecord) {
        metrics.recordRequest(classify(record.path), status: record.status, durationNanoseconds: record.durationNanoseconds)
        guard accessLog else { return }
        var metadata: Logger.Metadata = [
            "request.id": "\(record.requestID)",
            "http.method": "\(record.method)",
            "http.path": "\(record.path)",
            "http.status": "\(record.status)",
            "http.bytes": "\(record.bytesSent)",
            "http.duration_ms": "\(Double(record.durationNanoseconds / 1000) / 1000)",
            "client.ip": "\(record.peer.ip)",
        ]
        if let traceID = record.traceID { metadata["trace.id"] = "\(traceID)" }
        logger.info("request", metadata: metadata)
    }

    /// Only the access log reads trace ids.
    public var recordsTraceIDs: Bool { accessLog }

    public func connectionOpened() { metrics.connectionOpened() }
    public func connectionClosed() { metrics.connectionClosed() }
    public func connectionRejected() { metrics.connectionRejected() }
}
