import GatehouseSessions
import GatehouseTelemetry
import HTTP1
import HTTPServer

/// The spans the gateway makes, all from values it already has: the server span of a finished
/// request (from its access record), an upstream call's, a provider call's, a store operation's.
/// Each names methods, routes, hosts, paths without their query, statuses and operation names,
/// never a token, code, cookie or address of the user.
enum GatewaySpans {
    /// The request's span: `{method} {route}` (`http.route`: an API route's prefix, an own
    /// endpoint's path), ended when its answer was complete; an error at 5xx.
    static func server(_ record: HTTPAccessRecord, route: String?, scheme: String = "http", now: UInt64) -> SpanRecord? {
        guard record.spanID != 0, let traceID = record.traceID else { return nil }
        var attributes: [SpanAttribute] = []
        attributes.reserveCapacity(4)
        attributes.append(SpanAttribute("http.request.method", record.method))
        if let route { attributes.append(SpanAttribute("http.route", route)) }
        attributes.append(SpanAttribute("url.path", OwnPath.withoutHandle(record.path)))
        attributes.append(SpanAttribute("url.scheme", scheme))
        return SpanRecord(traceID: traceID, spanID: record.spanID, parentSpanID: record.parentSpanID,
                          name: record.method, nameSuffix: route, kind: .server,
                          startUnixNanoseconds: now &- min(now, record.durationNanoseconds), endUnixNanoseconds: now,
                          attributes: attributes, statusCode: record.status, failed: record.status >= 500)
    }

    /// The attributes of a call to an upstream route (its target's query left out): built from the
    /// route's own strings, without parsing a URL back.
    static func upstreamAttributes(method: String, origin: String, host: String, port: Int,
                                   target: String, route: String) -> [SpanAttribute] {
        let path = target.utf8.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }.map { target[..<$0] } ?? target[...]
        var attributes: [SpanAttribute] = []
        attributes.reserveCapacity(5)
        attributes.append(SpanAttribute("http.request.method", method))
        attributes.append(SpanAttribute("url.full", value: .joined(origin, path)))
        attributes.append(SpanAttribute("server.address", host))
        attributes.append(SpanAttribute("server.port", port))
        attributes.append(SpanAttribute("gatehouse.route", route))
        return attributes
    }

    /// The attributes of an outgoing HTTP call to `url` (its query left out).
    static func clientAttributes(method: String, url: String) -> [SpanAttribute] {
        let withoutQuery = String(url.prefix { $0 != "?" && $0 != "#" })
        var attributes = [SpanAttribute("http.request.method", method), SpanAttribute("url.full", withoutQuery)]
        let pieces = withoutQuery.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        guard pieces.count >= 3, !pieces[2].isEmpty else { return attributes }
        let authority = pieces[2]
        let hostPort = authority.split(separator: "@").last ?? authority
        let defaultPort = pieces[0].lowercased() == "https:" ? 443 : 80
        if hostPort.hasPrefix("["), let close = hostPort.firstIndex(of: "]") {
            attributes.append(SpanAttribute("server.address", String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])))
            attributes.append(SpanAttribute("server.port", Int(hostPort[close...].dropFirst(2)) ?? defaultPort))
        } else {
            let parts = hostPort.split(separator: ":", maxSplits: 1)
            attributes.append(SpanAttribute("server.address", String(parts[0])))
            attributes.append(SpanAttribute("server.port", parts.count == 2 ? Int(parts[1]) ?? defaultPort : defaultPort))
        }
        return attributes
    }
}

/// A call made for a traced request (an upstream, a provider): its span begins when the call is
/// made and is recorded when `end` is called. A class: the relays that end it hold one reference.
final class CallSpan: Sendable {
    let tracer: Tracer
    let trace: TraceParent
    let name: String
    let nameSuffix: String?
    let start: UInt64
    let attributes: [SpanAttribute]

    /// A child of `parent`'s span, or nil when the request's spans are not recorded.
    init?(tracer: Tracer?, parent: TraceParent?, name: String, nameSuffix: String? = nil, attributes: [SpanAttribute]) {
        guard let tracer, let parent, parent.recordsSpans else { return nil }
        self.tracer = tracer
        trace = parent.child(TraceParent.freshID())
        self.name = name
        self.nameSuffix = nameSuffix
        self.attributes = attributes
        start = Tracer.unixNanoseconds()
    }

    /// Records the span: the answer's status, or a failure without one.
    func end(status: Int?, failed: Bool = false) {
        tracer.record(SpanRecord(traceID: trace.traceID, spanID: trace.span, parentSpanID: trace.parentID, name: name,
                                 nameSuffix: nameSuffix, kind: .client, startUnixNanoseconds: start, endUnixNanoseconds: Tracer.unixNanoseconds(),
                                 attributes: attributes, statusCode: status, failed: failed || (status ?? 0) >= 500))
    }
}

/// The store's observer when spans are exported: an operation made for a traced request (the
/// store thread carries its trace, `StoreExecutor`) is a child span of it.
struct StoreSpans: StoreOperationObserver {
    let tracer: Tracer

    func starting() -> UInt64? {
        guard let trace = TraceContext.current, trace.recordsSpans else { return nil }
        return Tracer.unixNanoseconds()
    }

    func finished(_ operation: String, engine: SessionDatabaseEngine, mark: UInt64, failed: Bool) {
        guard let parent = TraceContext.current else { return }
        let trace = parent.child(TraceParent.freshID())
        let system = engine == .postgres ? "postgresql" : "sqlite"
        tracer.record(SpanRecord(traceID: trace.traceID, spanID: trace.span, parentSpanID: trace.parentID,
                                 name: operation, nameSuffix: system, kind: .client, startUnixNanoseconds: mark,
                                 endUnixNanoseconds: Tracer.unixNanoseconds(),
                                 attributes: [SpanAttribute("db.system.name", system),
                                              SpanAttribute("db.operation.name", operation)],
                                 failed: failed))
    }
}
