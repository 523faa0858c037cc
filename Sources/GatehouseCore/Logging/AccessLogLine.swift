import GatehouseEncoding
import HTTP1

/// One request's access-log line, written straight into bytes: exactly the line `JSONLogFormat` or
/// `TextLogFormat` make of a `request` event at `info` carrying these fields as metadata, without
/// the metadata dictionary, its merge and sort, or the scalar-by-scalar string appends. Through
/// swift-log, the line cost about 30–40 µs of CPU a request, more than proxying the request itself;
/// `AccessLogLineTests` holds the two ways to the same bytes.
public struct AccessLogLine: Sendable {
    public var method: String
    /// The path without the query, as logs may show it (a request object's handle replaced).
    public var path: Substring
    public var status: Int
    public var bytesSent: Int
    public var durationNanoseconds: UInt64
    /// `RequestID`'s parts: written `LOOP-HEXNUMBER`.
    public var requestLoop: Int
    public var requestNumber: UInt64
    public var clientIP: String
    public var traceID: TraceID?

    public init(method: String, path: Substring, status: Int, bytesSent: Int, durationNanoseconds: UInt64,
                requestLoop: Int, requestNumber: UInt64, clientIP: String, traceID: TraceID?) {
        (self.method, self.path, self.status, self.bytesSent) = (method, path, status, bytesSent)
        (self.durationNanoseconds, self.requestLoop, self.requestNumber) = (durationNanoseconds, requestLoop, requestNumber)
        (self.clientIP, self.traceID) = (clientIP, traceID)
    }

    /// The metadata the same line carries through swift-log (`GatewayObserver` without a writer).
    public var metadata: [(key: String, value: String)] {
        var fields: [(key: String, value: String)] = [
            ("client.ip", clientIP), ("http.bytes", "\(bytesSent)"), ("http.duration_ms", Self.milliseconds(durationNanoseconds)),
            ("http.method", method), ("http.path", String(path)), ("http.status", "\(status)"),
            ("request.id", "\(requestLoop)-\(String(requestNumber, radix: 16))"),
        ]
        if let traceID { fields.append(("trace.id", traceID.description)) }
        return fields
    }

    /// Milliseconds with the microseconds as decimals, as `Double` prints them (`1.5`, `0.004`,
    /// `12.0`): what the line always said.
    public static func milliseconds(_ nanoseconds: UInt64) -> String {
        var bytes: [UInt8] = []
        appendMilliseconds(nanoseconds, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the line (with its `\n`) in `format` to `out`; `label` as the format writes it
    /// (`AccessLogWriter` escapes it once).
    func append(to out: inout [UInt8], format: AccessLogFormat, escapedLabel: [UInt8],
                timestamp: (inout [UInt8]) -> Void) {
        switch format {
        case .json:
            out.appendASCII("{\"ts\":\"")
            timestamp(&out)
            out.appendASCII("\",\"level\":\"info\",\"msg\":\"request\",\"label\":")
            out.append(contentsOf: escapedLabel)
            eachField { key, value in
                out.appendASCII(",\"")
                out.appendASCII(key)
                out.appendASCII("\":")
                if case .text(let text) = value { return Self.appendJSON(text, to: &out) }
                out.appendASCII("\"")
                appendPlain(value, to: &out)
                out.appendASCII("\"")
            }
            out.appendASCII("}\n")
        case .text:
            timestamp(&out)
            out.appendASCII(" info ")
            out.append(contentsOf: escapedLabel)
            out.appendASCII(": request")
            eachField { key, value in
                out.appendASCII(" ")
                out.appendASCII(key)
                out.appendASCII("=")
                if case .text(let text) = value { return Self.appendWord(text, to: &out) }
                appendPlain(value, to: &out)
            }
            out.appendASCII("\n")
        }
    }

    /// A field's value: text the format escapes, or digits it writes as they are.
    private enum FieldValue {
        case text(Substring), number(Int), milliseconds, requestID, traceID
    }

    /// The fields in the order both formats write them (sorted by key, as `LogMetadata.flatten` does).
    private func eachField(_ body: (StaticString, FieldValue) -> Void) {
        body("client.ip", .text(clientIP[...]))
        body("http.bytes", .number(bytesSent))
        body("http.duration_ms", .milliseconds)
        body("http.method", .text(method[...]))
        body("http.path", .text(path))
        body("http.status", .number(status))
        body("request.id", .requestID)
        if traceID != nil { body("trace.id", .traceID) }
    }

    private func appendPlain(_ value: FieldValue, to out: inout [UInt8]) {
        switch value {
        case .text(let text): out.append(contentsOf: text.utf8)
        case .number(let number): out.appendDecimal(number)
        case .milliseconds: Self.appendMilliseconds(durationNanoseconds, to: &out)
        case .requestID:
            out.appendDecimal(requestLoop)
            out.appendASCII("-")
            out.appendHex(requestNumber)
        case .traceID:
            guard let traceID else { return }
            out.appendHex16(traceID.high)
            out.appendHex16(traceID.low)
        }
    }

    static func appendMilliseconds(_ nanoseconds: UInt64, to out: inout [UInt8]) {
        let microseconds = nanoseconds / 1000
        out.appendDecimal(microseconds / 1000)
        out.appendASCII(".")
        var fraction = microseconds % 1000
        guard fraction != 0 else { return out.appendASCII("0") }
        var digits = 3
        while fraction % 10 == 0 { fraction /= 10; digits -= 1 }
        let text = String(fraction)
        for _ in 0..<(digits - text.utf8.count) { out.append(UInt8(ascii: "0")) }
        out.append(contentsOf: text.utf8)
    }

    /// A JSON string: printable ASCII without `"` and `\` as it is, anything else as `JSONString` escapes it.
    static func appendJSON(_ text: some StringProtocol, to out: inout [UInt8]) {
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C }) {
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: text.utf8)
            out.append(UInt8(ascii: "\""))
        } else {
            out.append(contentsOf: JSONString.quoted(String(text)).utf8)
        }
    }

    /// A text-format value: a plain word as it is, anything else as `TextLogFormat` quotes it.
    static func appendWord(_ text: some StringProtocol, to out: inout [UInt8]) {
        if !text.isEmpty, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x3D }) {
            out.append(contentsOf: text.utf8)
        } else {
            out.append(contentsOf: TextLogFormat.word(String(text)).utf8)
        }
    }
}

/// The two line formats (`GATEHOUSE_LOG_FORMAT`), as the access-log writer needs to know them.
public enum AccessLogFormat: Sendable {
    case json, text
}

extension [UInt8] {
    mutating func appendASCII(_ text: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Digits of a number up to 15 of them are a small string: no allocation.
    mutating func appendDecimal(_ value: some BinaryInteger) {
        append(contentsOf: String(value).utf8)
    }

    mutating func appendHex(_ value: UInt64) {
        append(contentsOf: String(value, radix: 16).utf8)
    }

    /// 16 lowercase hex digits, leading zeros kept (half a trace id).
    mutating func appendHex16(_ value: UInt64) {
        for shift in stride(from: 60, through: 0, by: -4) {
            let digit = UInt8((value >> UInt64(shift)) & 0xF)
            append(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
        }
    }
}
