import HTTP1

/// One finished span, as it is exported: ids, name, kind, times and attributes (OpenTelemetry's
/// trace data model). A value made when the operation ends; nothing in it is a secret (the
/// callers name only methods, routes, hosts, paths without query, statuses and operation names).
///
/// Made on the request path, so it holds what the request already has: the name in two parts
/// (`GET` and `/api`, joined by a space when written), attribute keys as static strings, values
/// as the strings and substrings they already are.
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
    /// Written after `name` and a space, when set.
    public var nameSuffix: String?
    public var kind: Kind
    public var startUnixNanoseconds: UInt64
    public var endUnixNanoseconds: UInt64
    public var attributes: [SpanAttribute]
    /// The span's status is `ERROR` (a server span's 5xx, a call that failed).
    public var failed: Bool
    /// `http.response.status_code`, written after `attributes` (kept apart so that ending a call's
    /// span adds it without copying the attributes made when the call began).
    public var statusCode: Int?

    public init(traceID: TraceID, spanID: UInt64, parentSpanID: UInt64, name: String, nameSuffix: String? = nil, kind: Kind,
                startUnixNanoseconds: UInt64, endUnixNanoseconds: UInt64, attributes: [SpanAttribute], statusCode: Int? = nil,
                failed: Bool = false) {
        self.statusCode = statusCode
        self.traceID = traceID
        self.spanID = spanID
        self.parentSpanID = parentSpanID
        self.name = name
        self.nameSuffix = nameSuffix
        self.kind = kind
        self.startUnixNanoseconds = startUnixNanoseconds
        self.endUnixNanoseconds = max(endUnixNanoseconds, startUnixNanoseconds)
        self.attributes = attributes
        self.failed = failed
    }

    /// The full name, as exported.
    public var fullName: String { nameSuffix.map { name + " " + $0 } ?? name }

    func forEachAttribute(_ body: (StaticString, SpanAttribute.Value) -> Void) {
        for attribute in attributes { body(attribute.key, attribute.value) }
        if let statusCode { body("http.response.status_code", .int(Int64(statusCode))) }
    }
}

/// One attribute of a span (the OTLP `AnyValue` kinds Gatehouse uses).
public struct SpanAttribute: Sendable, Equatable {
    public enum Value: Sendable, Equatable {
        case string(String)
        case substring(Substring)
        /// One string value written from two parts (a route's origin and a request's path), not
        /// concatenated on the request path.
        case joined(String, Substring)
        case int(Int64)
        case bool(Bool)
    }

    public var key: StaticString
    public var value: Value

    public init(_ key: StaticString, _ value: String) { (self.key, self.value) = (key, .string(value)) }
    public init(_ key: StaticString, _ value: Substring) { (self.key, self.value) = (key, .substring(value)) }
    public init(_ key: StaticString, _ value: Int) { (self.key, self.value) = (key, .int(Int64(value))) }
    public init(_ key: StaticString, _ value: Bool) { (self.key, self.value) = (key, .bool(value)) }
    public init(_ key: StaticString, value: Value) { (self.key, self.value) = (key, value) }

    /// A string and a substring of the same text are equal (they are written alike).
    public static func == (a: SpanAttribute, b: SpanAttribute) -> Bool {
        guard a.key.description == b.key.description else { return false }
        switch (a.value, b.value) {
        case (.string, _), (.substring, _), (.joined, _):
            switch b.value {
            case .string, .substring, .joined: return a.text == b.text
            default: return false
            }
        default: return a.value == b.value
        }
    }

    /// The value as text (tests and checks).
    public var text: String {
        switch value {
        case .string(let s): s
        case .substring(let s): String(s)
        case .joined(let first, let second): first + second
        case .int(let i): String(i)
        case .bool(let b): String(b)
        }
    }
}
