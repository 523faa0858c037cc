@testable import GatehouseTelemetry
import HTTP1
import Testing

/// Reads protobuf's wire format back (the collector's side), to check the fields by number.
struct WireMessage {
    enum Value: Equatable {
        case varint(UInt64)
        case fixed64(UInt64)
        case bytes([UInt8])
    }

    var fields: [(number: UInt32, value: Value)] = []

    init(_ bytes: [UInt8]) throws {
        var index = 0
        func varint() throws -> UInt64 {
            var result: UInt64 = 0, shift: UInt64 = 0
            while true {
                guard index < bytes.count, shift < 64 else { throw WireError.truncated }
                let byte = bytes[index]
                index += 1
                result |= UInt64(byte & 0x7f) << shift
                if byte & 0x80 == 0 { return result }
                shift += 7
            }
        }
        while index < bytes.count {
            let tag = try varint()
            switch tag & 7 {
            case 0: fields.append((UInt32(tag >> 3), .varint(try varint())))
            case 1:
                guard index + 8 <= bytes.count else { throw WireError.truncated }
                let value = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[index + $1]) << (8 * UInt64($1)) }
                index += 8
                fields.append((UInt32(tag >> 3), .fixed64(value)))
            case 2:
                let length = Int(try varint())
                guard index + length <= bytes.count else { throw WireError.truncated }
                fields.append((UInt32(tag >> 3), .bytes(Array(bytes[index..<(index + length)]))))
                index += length
            default: throw WireError.wireType(tag & 7)
            }
        }
    }

    func all(_ number: UInt32) -> [Value] { fields.filter { $0.number == number }.map(\.value) }

    func message(_ number: UInt32) throws -> WireMessage {
        guard case .bytes(let b)? = all(number).first else { throw WireError.missing(number) }
        return try WireMessage(b)
    }

    func messages(_ number: UInt32) throws -> [WireMessage] {
        try all(number).map { value in
            guard case .bytes(let b) = value else { throw WireError.missing(number) }
            return try WireMessage(b)
        }
    }

    func string(_ number: UInt32) -> String? {
        guard case .bytes(let b)? = all(number).first else { return nil }
        return String(decoding: b, as: UTF8.self)
    }

    /// KeyValue list → [key: rendered value].
    func attributes(_ number: UInt32) throws -> [String: String] {
        var result: [String: String] = [:]
        for pair in try messages(number) {
            let value = try pair.message(2)
            if let s = value.string(1) { result[pair.string(1)!] = s }
            if case .varint(let b)? = value.all(2).first { result[pair.string(1)!] = b == 1 ? "true" : "false" }
            if case .varint(let i)? = value.all(3).first { result[pair.string(1)!] = String(Int64(bitPattern: i)) }
        }
        return result
    }

    enum WireError: Error { case truncated, wireType(UInt64), missing(UInt32) }
}

@Suite("OTLP/HTTP protobuf body (opentelemetry-proto v1 field numbers)")
struct OTLPEncodingTests {
    static let span = SpanRecord(
        traceID: TraceID(high: 0x4bf9_2f35_77b3_4da6, low: 0xa3ce_929d_0e0e_4736), spanID: 0x00f0_67aa_0ba9_02b7,
        parentSpanID: 0x1122_3344_5566_7788, name: "GET /api", kind: .server,
        startUnixNanoseconds: 1_700_000_000_000_000_000, endUnixNanoseconds: 1_700_000_000_002_000_000,
        attributes: [SpanAttribute("http.route", "/api"), SpanAttribute("http.response.status_code", 502),
                     SpanAttribute("sampled", true)],
        failed: true)

    @Test("ExportTraceServiceRequest → ResourceSpans → ScopeSpans → Span, each field where the proto puts it")
    func layout() throws {
        let body = OTLPEncoding.exportRequest([Self.span, Self.span], resource: [("service.name", "edge")])
        let request = try WireMessage(body)
        let resourceSpans = try request.message(1)
        #expect(try resourceSpans.message(1).attributes(1) == ["service.name": "edge"])
        let scopeSpans = try resourceSpans.message(2)
        #expect(try scopeSpans.message(1).string(1) == "gatehouse")
        let spans = try scopeSpans.messages(2)
        #expect(spans.count == 2)
        let span = spans[0]
        #expect(span.all(1) == [.bytes([0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36])])
        #expect(span.all(2) == [.bytes([0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7])])
        #expect(span.all(4) == [.bytes([0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88])])
        #expect(span.string(5) == "GET /api")
        #expect(span.all(6) == [.varint(2)])  // SPAN_KIND_SERVER
        #expect(span.all(7) == [.fixed64(1_700_000_000_000_000_000)])
        #expect(span.all(8) == [.fixed64(1_700_000_000_002_000_000)])
        #expect(try span.attributes(9) == ["http.route": "/api", "http.response.status_code": "502", "sampled": "true"])
        #expect(try span.message(15).all(3) == [.varint(2)])  // STATUS_CODE_ERROR
    }

    @Test("A root span has no parent_span_id field; a span that did not fail has status UNSET")
    func root() throws {
        var span = Self.span
        span.parentSpanID = 0
        span.failed = false
        let encoded = try WireMessage(OTLPEncoding.encode(span))
        #expect(encoded.all(4).isEmpty)
        #expect(try encoded.message(15).all(3) == [.varint(0)])
    }

    @Test("Each message's computed size is the size written (the two passes agree)")
    func sizes() throws {
        var span = Self.span
        span.attributes.append(SpanAttribute("url.path", "/api/x?y".prefix(6)))
        span.nameSuffix = "/api"
        #expect(OTLPEncoding.encode(span).count == OTLPEncoding.spanSize(span))
        let body = OTLPEncoding.exportRequest(Array(repeating: span, count: 300), resource: [("service.name", "edge")])
        let spans = try WireMessage(body).message(1).message(2).messages(2)
        #expect(spans.count == 300 && spans[299].string(5) == "GET /api /api")
    }
}
