import HTTP1

/// One finished span, as it is exported: ids, name, kind, times and attributes (OpenTelemetry's
/// trace data model). A value made when the operation ends; nothing in it is a secret (the
/// callers name only methods, routes, hosts, paths without query, statuses and operation names).
public struct SpanRecord: Sendable {
    public enum Kind: UInt8, Sendable {
        case internalOperation = 1
        case server = 2
        case client = 3
    }

    public var traceID: TraceID
    public var spanID: UInt64
    /// 0 for a root span.
    public var parentSpanID: UInt64
    public var name: String
    public var kind: Kind
    public var startUnixNanoseconds: UInt64
    public var endUnixNanoseconds: UInt64
    public var attributes: [SpanAttribute]
    /// The span's status is `ERROR` (a server span's 5xx, a call that failed).
    public var failed: Bool

    public init(traceID: TraceID, spanID: UInt64, parentSpanID: UInt64, name: String, kind: Kind,
                startUnixNanoseconds: UInt64, endUnixNanoseconds: UInt64, attributes: [SpanAttribute], failed: Bool = false) {
        self.traceID = traceID
        self.spanID = spanID
        self.parentSpanID = parentSpanID
        self.name = name
        self.kind = kind
        self.startUnixNanoseconds = startUnixNanoseconds
        self.endUnixNanoseconds = max(endUnixNanoseconds, startUnixNanoseconds)
        self.attributes = attributes
        self.failed = failed
    }
}

/// One attribute of a span (the OTLP `AnyValue` kinds Gatehouse uses).
public struct SpanAttribute: Sendable, Equatable {
    public enum Value: Sendable, Equatable {
        case string(String)
        case int(Int64)
        case bool(Bool)
    }

    public var key: String
    public var value: Value

    public init(_ key: String, _ value: String) { (self.key, self.value) = (key, .string(value)) }
    public init(_ key: String, _ value: Int) { (self.key, self.value) = (key, .int(Int64(value))) }
    public init(_ key: String, _ value: Bool) { (self.key, self.value) = (key, .bool(value)) }
}
