/// The fields of a request a proxy sends on: the received head's fields it passes on, as the bytes
/// they arrived with, then the ones it adds itself (`X-Forwarded-For`, fields fixed by its
/// configuration, `Authorization`, the user's identity fields, `traceparent`), in that order.
///
/// Written straight into the upstream's head (`RequestHeadEncoder`): a proxied request puts no
/// field list together (two arrays, every kept line copied twice) between the browser's head and
/// the upstream's. `headers` makes that list for whoever wants one (tests, the WebSocket handshake).
///
/// A class: the request that carries it is handed down several calls and into closures, and a
/// struct of seven references was copied and destroyed each time (about 400 instructions per
/// proxied request); a reference is retained.
public final class ForwardedRequestFields: Sendable {
    /// The fields of the received head the passed ones are taken from.
    public let received: HTTPHeaders
    /// Bit `i` set: `received`'s field `i` is passed on; nil: every field is (a head of more than
    /// 64 fields is filtered into `received` itself).
    let passed: UInt64?
    /// The value of the `X-Forwarded-For` field added, if any.
    public let forwardedFor: String?
    /// Added as they are (checked once: the proxy's `X-Forwarded-Proto` and `-Host`).
    public let fixed: [HTTPField.Checked]
    /// The value of the `Authorization` field added, if any.
    public let authorization: String?
    /// Fields about the user added after `Authorization` (the gateway's assertion, identity
    /// headers), checked once when they were made.
    public let identity: [HTTPField.Checked]
    /// The `traceparent` field added, if any.
    public let trace: TraceParent?

    /// Every field of `headers`, nothing added.
    public convenience init(passing headers: HTTPHeaders) {
        self.init(received: headers, passed: nil, forwardedFor: nil, fixed: [], authorization: nil, trace: nil)
    }

    /// The fields of `received` that `passed` has the bit of (nil: all), then the added ones.
    public init(received: HTTPHeaders, passed: UInt64?, forwardedFor: String?, fixed: [HTTPField.Checked],
                authorization: String?, identity: [HTTPField.Checked] = [], trace: TraceParent?) {
        self.identity = identity
        precondition(passed == nil || received.count <= 64, "a field mask covers 64 fields")
        self.received = received
        self.passed = passed
        self.forwardedFor = forwardedFor
        self.fixed = fixed
        self.authorization = authorization
        self.trace = trace
    }

    /// The same fields as a list, in the order they are written.
    public var headers: HTTPHeaders {
        var out = HTTPHeaders(minimumCapacity: received.count + fixed.count + 3, bytes: encodedSize)
        let passed = passed
        out.append(fieldsOf: received) { index, _, _ in passed.map { ($0 >> UInt64(index)) & 1 == 1 } ?? true }
        if let forwardedFor { out.add("X-Forwarded-For", forwardedFor) }
        for field in fixed { out.add(field) }
        if let authorization { out.add("Authorization", authorization) }
        for field in identity { out.add(field) }
        if let trace { out.add(trace) }
        return out
    }

    /// At most how many bytes `write` writes.
    var encodedSize: Int {
        var size = received.encodedSize
        if let forwardedFor { size += 19 + forwardedFor.utf8.count }
        for field in fixed { size += field.line.count }
        if let authorization { size += 17 + authorization.utf8.count }
        for field in identity { size += field.line.count }
        if let trace { size += 15 + (trace.received?.utf8.count ?? 55) }
        return size
    }

    /// Writes the fields as `name: value\r\n` lines, except the passed ones `skip` returns true for
    /// (given the name): checked lines as their bytes, others only when they are safe to write
    /// (`HeadWriter`), as `HTTPHeaders.write` does.
    func write(into head: inout HeadBuffer, skipping skip: (UnsafeBufferPointer<UInt8>) -> Bool) {
        received.write(into: &head, passing: passed, skipping: skip)
        if let forwardedFor { Self.write("X-Forwarded-For: ", forwardedFor, into: &head) }
        for field in fixed { field.line.withUnsafeBufferPointer { head.bytes($0) } }
        if let authorization { Self.write("Authorization: ", authorization, into: &head) }
        for field in identity { field.line.withUnsafeBufferPointer { head.bytes($0) } }
        if let trace {
            // A fresh trace's value is the gateway's own: written unchecked.
            let checked = !trace.isReceived
            trace.withHeaderValue { Self.line("traceparent: ", $0, checked: checked, into: &head) }
        }
    }

    /// `prefix value\r\n`, or nothing when the value could not be written as a field's.
    private static func write(_ prefix: StaticString, _ value: String, into head: inout HeadBuffer) {
        // A native String's own bytes; a copy only for another kind.
        if value.utf8.withContiguousStorageIfAvailable({ line(prefix, $0, checked: false, into: &head) }) != nil { return }
        var copy = value
        copy.withUTF8 { line(prefix, $0, checked: false, into: &head) }
    }

    /// `prefix value\r\n`; unless `checked`, only when `value` can be a field's.
    private static func line(_ prefix: StaticString, _ value: UnsafeBufferPointer<UInt8>, checked: Bool,
                             into head: inout HeadBuffer) {
        guard checked || HeadWriter.isFieldValue(value) else { return }
        head.text(prefix)
        head.bytes(value)
        head.byte(ASCII.cr)
        head.byte(ASCII.lf)
    }
}
