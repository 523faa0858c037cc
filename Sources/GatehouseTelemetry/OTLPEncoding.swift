import HTTP1

/// The OTLP/HTTP protobuf body of an export (`opentelemetry.proto.collector.trace.v1.
/// ExportTraceServiceRequest`, opentelemetry-proto v1), written directly: the few messages a
/// span needs, with their field numbers from `trace.proto`, `resource.proto` and `common.proto`.
/// swift-protobuf would bring a code generator and a runtime for what is about a hundred lines of
/// tag-length-value writing.
public enum OTLPEncoding {
    /// One request carrying `spans` under one resource and one instrumentation scope.
    public static func exportRequest(_ spans: [SpanRecord], resource: [(key: String, value: String)],
                                     scope: String = "gatehouse", scopeVersion: String = "") -> [UInt8] {
        var resourceMessage = ProtobufWriter()
        for (key, value) in resource {
            resourceMessage.message(1, keyValue(SpanAttribute(key, value)))  // Resource.attributes
        }
        var scopeMessage = ProtobufWriter()
        scopeMessage.string(1, scope)  // InstrumentationScope.name
        if !scopeVersion.isEmpty { scopeMessage.string(2, scopeVersion) }
        var scopeSpans = ProtobufWriter()
        scopeSpans.message(1, scopeMessage)  // ScopeSpans.scope
        for span in spans { scopeSpans.message(2, encode(span)) }  // ScopeSpans.spans
        var resourceSpans = ProtobufWriter()
        resourceSpans.message(1, resourceMessage)  // ResourceSpans.resource
        resourceSpans.message(2, scopeSpans)  // ResourceSpans.scope_spans
        var request = ProtobufWriter()
        request.message(1, resourceSpans)  // ExportTraceServiceRequest.resource_spans
        return request.bytes
    }

    /// `Span` (trace.proto).
    static func encode(_ span: SpanRecord) -> ProtobufWriter {
        var message = ProtobufWriter()
        message.bytes(1, bigEndian(span.traceID.high) + bigEndian(span.traceID.low))  // trace_id
        message.bytes(2, bigEndian(span.spanID))  // span_id
        if span.parentSpanID != 0 { message.bytes(4, bigEndian(span.parentSpanID)) }  // parent_span_id
        message.string(5, span.name)
        message.varintField(6, UInt64(span.kind.rawValue))  // kind
        message.fixed64(7, span.startUnixNanoseconds)
        message.fixed64(8, span.endUnixNanoseconds)
        for attribute in span.attributes { message.message(9, keyValue(attribute)) }
        var status = ProtobufWriter()
        status.varintField(3, span.failed ? 2 : 0)  // Status.code: ERROR or UNSET
        message.message(15, status)
        return message
    }

    /// `KeyValue` with its `AnyValue` (common.proto).
    static func keyValue(_ attribute: SpanAttribute) -> ProtobufWriter {
        var value = ProtobufWriter()
        switch attribute.value {
        case .string(let s): value.string(1, s)
        case .bool(let b): value.varintField(2, b ? 1 : 0)
        case .int(let i): value.varintField(3, UInt64(bitPattern: i))
        }
        var pair = ProtobufWriter()
        pair.string(1, attribute.key)
        pair.message(2, value)
        return pair
    }

    private static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64($0))) }
    }
}

/// Protocol buffers' wire format, the parts OTLP needs: varints, fixed64, and length-delimited
/// fields (strings, bytes, embedded messages).
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    mutating func varintField(_ field: UInt32, _ value: UInt64) {
        tag(field, wireType: 0)
        varint(value)
    }

    mutating func fixed64(_ field: UInt32, _ value: UInt64) {
        tag(field, wireType: 1)
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func string(_ field: UInt32, _ value: String) { self.bytes(field, Array(value.utf8)) }

    mutating func bytes(_ field: UInt32, _ value: [UInt8]) {
        tag(field, wireType: 2)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func message(_ field: UInt32, _ value: ProtobufWriter) { bytes(field, value.bytes) }

    private mutating func tag(_ field: UInt32, wireType: UInt8) { varint(UInt64(field) << 3 | UInt64(wireType)) }

    private mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }
}
