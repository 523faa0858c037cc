import HTTP1

/// The OTLP/HTTP protobuf body of an export (`opentelemetry.proto.collector.trace.v1.
/// ExportTraceServiceRequest`, opentelemetry-proto v1), written directly: the few messages a
/// span needs, with their field numbers from `trace.proto`, `resource.proto` and `common.proto`.
/// swift-protobuf would bring a code generator and a runtime for what is about a hundred lines of
/// tag-length-value writing.
///
/// Written in two passes into one buffer: each message's size is computed first (protobuf puts a
/// message's length before it), then the bytes are appended in place, so a batch of hundreds of
/// spans costs one growing array and no array per field (the nested-array way cost more CPU than
/// the request the spans describe).
public enum OTLPEncoding {
    /// One request carrying `spans` under one resource and one instrumentation scope.
    public static func exportRequest(_ spans: [SpanRecord], resource: [(key: String, value: String)],
                                     scope: String = "gatehouse") -> [UInt8] {
        let resourceSize = resource.reduce(0) { $0 + Protobuf.fieldSize(1, keyValueSize(key: $1.key, string: $1.value)) }
        let scopeSize = Protobuf.stringFieldSize(1, scope)
        let spanSizes = spans.map(spanSize)
        let scopeSpansSize = Protobuf.fieldSize(1, scopeSize) + spanSizes.reduce(0) { $0 + Protobuf.fieldSize(2, $1) }
        let resourceSpansSize = Protobuf.fieldSize(1, resourceSize) + Protobuf.fieldSize(2, scopeSpansSize)
        var out: [UInt8] = []
        out.reserveCapacity(Protobuf.fieldSize(1, resourceSpansSize))
        Protobuf.header(1, resourceSpansSize, &out)  // ExportTraceServiceRequest.resource_spans
        Protobuf.header(1, resourceSize, &out)  // ResourceSpans.resource
        for (key, value) in resource {
            Protobuf.header(1, keyValueSize(key: key, string: value), &out)  // Resource.attributes
            writeKeyValue(key: key, string: value, &out)
        }
        Protobuf.header(2, scopeSpansSize, &out)  // ResourceSpans.scope_spans
        Protobuf.header(1, scopeSize, &out)  // ScopeSpans.scope
        Protobuf.string(1, scope, &out)  // InstrumentationScope.name
        for (span, size) in zip(spans, spanSizes) {
            Protobuf.header(2, size, &out)  // ScopeSpans.spans
            write(span, &out)
        }
        return out
    }

    /// `Span` (trace.proto) as bytes, alone (for tests).
    static func encode(_ span: SpanRecord) -> [UInt8] {
        var out: [UInt8] = []
        write(span, &out)
        return out
    }

    static func spanSize(_ span: SpanRecord) -> Int {
        var size = 2 + 16 + 2 + 8  // trace_id, span_id
        if span.parentSpanID != 0 { size += 2 + 8 }
        size += Protobuf.fieldSize(5, nameLength(span))
        size += 2 + 2 * 9  // kind, start_time_unix_nano, end_time_unix_nano
        span.forEachAttribute { key, value in size += Protobuf.fieldSize(9, keyValueSize(key: key, value)) }
        size += Protobuf.fieldSize(15, 2)  // status { code }
        return size
    }

    private static func write(_ span: SpanRecord, _ out: inout [UInt8]) {
        Protobuf.header(1, 16, &out)  // trace_id
        Protobuf.bigEndian(span.traceID.high, &out)
        Protobuf.bigEndian(span.traceID.low, &out)
        Protobuf.header(2, 8, &out)  // span_id
        Protobuf.bigEndian(span.spanID, &out)
        if span.parentSpanID != 0 {
            Protobuf.header(4, 8, &out)  // parent_span_id
            Protobuf.bigEndian(span.parentSpanID, &out)
        }
        Protobuf.header(5, nameLength(span), &out)  // name
        out.append(contentsOf: span.name.utf8)
        if let suffix = span.nameSuffix {
            out.append(UInt8(ascii: " "))
            out.append(contentsOf: suffix.utf8)
        }
        Protobuf.varintField(6, UInt64(span.kind.rawValue), &out)  // kind
        Protobuf.fixed64(7, span.startUnixNanoseconds, &out)
        Protobuf.fixed64(8, span.endUnixNanoseconds, &out)
        span.forEachAttribute { key, value in
            Protobuf.header(9, keyValueSize(key: key, value), &out)  // attributes
            writeKeyValue(key: key, value, &out)
        }
        Protobuf.header(15, 2, &out)  // status
        Protobuf.varintField(3, span.failed ? 2 : 0, &out)  // Status.code: ERROR or UNSET
    }

    private static func nameLength(_ span: SpanRecord) -> Int {
        span.name.utf8.count + (span.nameSuffix.map { 1 + $0.utf8.count } ?? 0)
    }

    // MARK: KeyValue and AnyValue (common.proto)

    private static func anyValueSize(_ value: SpanAttribute.Value) -> Int {
        switch value {
        case .string(let s): Protobuf.stringFieldSize(1, s)
        case .substring(let s): Protobuf.fieldSize(1, s.utf8.count)
        case .bool: 2
        case .int(let i): 1 + Protobuf.varintSize(UInt64(bitPattern: i))
        }
    }

    private static func keyValueSize(key: StaticString, _ value: SpanAttribute.Value) -> Int {
        Protobuf.fieldSize(1, key.utf8CodeUnitCount) + Protobuf.fieldSize(2, anyValueSize(value))
    }

    private static func keyValueSize(key: String, string value: String) -> Int {
        Protobuf.stringFieldSize(1, key) + Protobuf.fieldSize(2, Protobuf.stringFieldSize(1, value))
    }

    private static func writeKeyValue(key: StaticString, _ value: SpanAttribute.Value, _ out: inout [UInt8]) {
        Protobuf.header(1, key.utf8CodeUnitCount, &out)
        key.withUTF8Buffer { out.append(contentsOf: $0) }
        Protobuf.header(2, anyValueSize(value), &out)
        switch value {
        case .string(let s): Protobuf.string(1, s, &out)
        case .substring(let s):
            Protobuf.header(1, s.utf8.count, &out)
            out.append(contentsOf: s.utf8)
        case .bool(let b): Protobuf.varintField(2, b ? 1 : 0, &out)
        case .int(let i): Protobuf.varintField(3, UInt64(bitPattern: i), &out)
        }
    }

    private static func writeKeyValue(key: String, string value: String, _ out: inout [UInt8]) {
        Protobuf.string(1, key, &out)
        Protobuf.header(2, Protobuf.stringFieldSize(1, value), &out)
        Protobuf.string(1, value, &out)
    }
}

/// Protocol buffers' wire format, the parts OTLP needs: varints, fixed64, and length-delimited
/// fields (strings, bytes, embedded messages), appended to one buffer.
enum Protobuf {
    static func varintSize(_ value: UInt64) -> Int {
        var size = 1, v = value >> 7
        while v != 0 { size += 1; v >>= 7 }
        return size
    }

    /// A length-delimited field of `length` bytes, tag and length included.
    static func fieldSize(_ field: UInt32, _ length: Int) -> Int {
        varintSize(UInt64(field) << 3 | 2) + varintSize(UInt64(length)) + length
    }

    static func stringFieldSize(_ field: UInt32, _ value: String) -> Int { fieldSize(field, value.utf8.count) }

    /// A length-delimited field's tag and length; its `length` bytes follow.
    static func header(_ field: UInt32, _ length: Int, _ out: inout [UInt8]) {
        varint(UInt64(field) << 3 | 2, &out)
        varint(UInt64(length), &out)
    }

    static func string(_ field: UInt32, _ value: String, _ out: inout [UInt8]) {
        header(field, value.utf8.count, &out)
        out.append(contentsOf: value.utf8)
    }

    static func varintField(_ field: UInt32, _ value: UInt64, _ out: inout [UInt8]) {
        varint(UInt64(field) << 3, &out)
        varint(value, &out)
    }

    static func fixed64(_ field: UInt32, _ value: UInt64, _ out: inout [UInt8]) {
        varint(UInt64(field) << 3 | 1, &out)
        for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    static func bigEndian(_ value: UInt64, _ out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    static func varint(_ value: UInt64, _ out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }
}
