import HTTP1

/// The OTLP/HTTP protobuf body of an export (`opentelemetry.proto.collector.trace.v1.
/// ExportTraceServiceRequest`, opentelemetry-proto v1), written directly: the few messages a
/// span needs, with their field numbers from `trace.proto`, `resource.proto` and `common.proto`.
/// swift-protobuf would bring a code generator and a runtime for what is about a hundred lines of
/// tag-length-value writing.
///
/// Written in two passes into one buffer: each message's size is computed first (protobuf puts a
/// message's length before it), then the bytes are stored in place through a pointer into an array
/// of exactly the computed size, so a batch of hundreds of spans costs one allocation and no array
/// or capacity check per field (the nested-array way cost more CPU than the request the spans
/// describe; appending byte by byte, about 3 % of a traced request's CPU by `perf`).
public enum OTLPEncoding {
    /// One request carrying `spans` under one resource and one instrumentation scope.
    public static func exportRequest(_ spans: [SpanRecord], resource: [(key: String, value: String)],
                                     scope: String = "gatehouse") -> [UInt8] {
        let resourceSize = resource.reduce(0) { $0 + Protobuf.fieldSize(1, keyValueSize(key: $1.key, string: $1.value)) }
        let scopeSize = Protobuf.stringFieldSize(1, scope)
        let spanSizes = spans.map(spanSize)
        let scopeSpansSize = Protobuf.fieldSize(1, scopeSize) + spanSizes.reduce(0) { $0 + Protobuf.fieldSize(2, $1) }
        let resourceSpansSize = Protobuf.fieldSize(1, resourceSize) + Protobuf.fieldSize(2, scopeSpansSize)
        return Protobuf.written(size: Protobuf.fieldSize(1, resourceSpansSize)) { out in
            out.header(1, resourceSpansSize)  // ExportTraceServiceRequest.resource_spans
            out.header(1, resourceSize)  // ResourceSpans.resource
            for (key, value) in resource {
                out.header(1, keyValueSize(key: key, string: value))  // Resource.attributes
                writeKeyValue(key: key, string: value, &out)
            }
            out.header(2, scopeSpansSize)  // ResourceSpans.scope_spans
            out.header(1, scopeSize)  // ScopeSpans.scope
            out.string(1, scope)  // InstrumentationScope.name
            for (span, size) in zip(spans, spanSizes) {
                out.header(2, size)  // ScopeSpans.spans
                write(span, &out)
            }
        }
    }

    /// `Span` (trace.proto) as bytes, alone (for tests).
    static func encode(_ span: SpanRecord) -> [UInt8] {
        Protobuf.written(size: spanSize(span)) { write(span, &$0) }
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

    private static func write(_ span: SpanRecord, _ out: inout ProtobufWriter) {
        out.header(1, 16)  // trace_id
        out.bigEndian(span.traceID.high)
        out.bigEndian(span.traceID.low)
        out.header(2, 8)  // span_id
        out.bigEndian(span.spanID)
        if span.parentSpanID != 0 {
            out.header(4, 8)  // parent_span_id
            out.bigEndian(span.parentSpanID)
        }
        out.header(5, nameLength(span))  // name
        out.bytes(span.name)
        if let suffix = span.nameSuffix {
            out.byte(UInt8(ascii: " "))
            out.bytes(suffix)
        }
        out.varintField(6, UInt64(span.kind.rawValue))  // kind
        out.fixed64(7, span.startUnixNanoseconds)
        out.fixed64(8, span.endUnixNanoseconds)
        span.forEachAttribute { key, value in
            out.header(9, keyValueSize(key: key, value))  // attributes
            writeKeyValue(key: key, value, &out)
        }
        out.header(15, 2)  // status
        out.varintField(3, span.failed ? 2 : 0)  // Status.code: ERROR or UNSET
    }

    private static func nameLength(_ span: SpanRecord) -> Int {
        span.name.utf8.count + (span.nameSuffix.map { 1 + $0.utf8.count } ?? 0)
    }

    // MARK: KeyValue and AnyValue (common.proto)

    private static func anyValueSize(_ value: SpanAttribute.Value) -> Int {
        switch value {
        case .string(let s): Protobuf.stringFieldSize(1, s)
        case .substring(let s): Protobuf.fieldSize(1, s.utf8.count)
        case .joined(let first, let second): Protobuf.fieldSize(1, first.utf8.count + second.utf8.count)
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

    private static func writeKeyValue(key: StaticString, _ value: SpanAttribute.Value, _ out: inout ProtobufWriter) {
        out.header(1, key.utf8CodeUnitCount)
        key.withUTF8Buffer { out.bytes($0) }
        out.header(2, anyValueSize(value))
        switch value {
        case .string(let s): out.string(1, s)
        case .substring(let s):
            out.header(1, s.utf8.count)
            out.bytes(s)
        case .joined(let first, let second):
            out.header(1, first.utf8.count + second.utf8.count)
            out.bytes(first)
            out.bytes(second)
        case .bool(let b): out.varintField(2, b ? 1 : 0)
        case .int(let i): out.varintField(3, UInt64(bitPattern: i))
        }
    }

    private static func writeKeyValue(key: String, string value: String, _ out: inout ProtobufWriter) {
        out.string(1, key)
        out.header(2, Protobuf.stringFieldSize(1, value))
        out.string(1, value)
    }
}

/// Protocol buffers' wire format, the parts OTLP needs: the sizes of varints and length-delimited
/// fields, computed before writing (`ProtobufWriter` then fills a buffer of exactly that size).
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

    /// An array of exactly `size` bytes written by `body`, which must write that many (the sizes
    /// above are computed for it): stores through a pointer, no capacity check per byte.
    static func written(size: Int, _ body: (inout ProtobufWriter) -> Void) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var writer = ProtobufWriter(buffer)
            body(&writer)
            precondition(writer.position == size, "OTLP encoding: \(writer.position) bytes written for \(size) computed")
            count = writer.position
        }
    }
}

/// Writes wire-format fields into a buffer sized beforehand (`Protobuf.written`); a write past its
/// end stops the process rather than corrupt memory.
struct ProtobufWriter {
    private let buffer: UnsafeMutableBufferPointer<UInt8>
    private(set) var position = 0

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

    @inline(__always)
    mutating func byte(_ value: UInt8) {
        precondition(position < buffer.count)
        buffer[position] = value
        position += 1
    }

    mutating func bytes(_ value: some StringProtocol) {
        if value.utf8.withContiguousStorageIfAvailable({ bytes($0) }) == nil {
            for unit in value.utf8 { byte(unit) }
        }
    }

    mutating func bytes(_ source: UnsafeBufferPointer<UInt8>) {
        precondition(source.count <= buffer.count - position)
        guard let base = source.baseAddress, source.count > 0 else { return }
        (buffer.baseAddress! + position).update(from: base, count: source.count)
        position += source.count
    }

    /// A length-delimited field's tag and length; its `length` bytes follow.
    mutating func header(_ field: UInt32, _ length: Int) {
        varint(UInt64(field) << 3 | 2)
        varint(UInt64(length))
    }

    mutating func string(_ field: UInt32, _ value: String) {
        header(field, value.utf8.count)
        bytes(value)
    }

    mutating func varintField(_ field: UInt32, _ value: UInt64) {
        varint(UInt64(field) << 3)
        varint(value)
    }

    mutating func fixed64(_ field: UInt32, _ value: UInt64) {
        varint(UInt64(field) << 3 | 1)
        precondition(8 <= buffer.count - position)
        UnsafeMutableRawPointer(buffer.baseAddress! + position).storeBytes(of: value.littleEndian, as: UInt64.self)
        position += 8
    }

    mutating func bigEndian(_ value: UInt64) {
        precondition(8 <= buffer.count - position)
        UnsafeMutableRawPointer(buffer.baseAddress! + position).storeBytes(of: value.bigEndian, as: UInt64.self)
        position += 8
    }

    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            byte(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        byte(UInt8(v))
    }
}
