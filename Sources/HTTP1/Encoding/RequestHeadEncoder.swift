import CByteScan

/// Serialises request heads for an upstream (the field checks are `HeadWriter`'s): a field that
/// our own parser would refuse is dropped, so no header value can split the forwarded request.
public enum RequestHeadEncoder {
    /// A request head for an upstream, written in one pass: the request line, `Host` (`hostName`,
    /// in `[…]` when it is an IPv6 literal, then `:port` unless `port` is nil), the given fields
    /// except `Host`, `Content-Length` and `Transfer-Encoding`, then the framing of the body as it
    /// will be relayed (`Content-Length: n` or `Transfer-Encoding: chunked`).
    public static func encodeUpstreamRequest(method: String, target: String, hostName: String, port: Int?,
                                             headers: HTTPHeaders, contentLength: Int?, chunked: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        encodeUpstreamRequest(method: method, target: target, hostName: hostName, port: port, headers: headers,
                              contentLength: contentLength, chunked: chunked, into: &bytes)
        return bytes
    }

    /// As above, appended to `bytes` (a connection's reused head buffer: no allocation per request
    /// once it has grown to the usual head size). No String is put together for `Host`.
    public static func encodeUpstreamRequest(method: String, target: String, hostName: String, port: Int?,
                                             headers: HTTPHeaders, contentLength: Int?, chunked: Bool,
                                             into bytes: inout [UInt8]) {
        encodeUpstreamRequest(method: method, target: target, hostName: hostName, port: port,
                              fields: ForwardedRequestFields(passing: headers), contentLength: contentLength,
                              chunked: chunked, into: &bytes)
    }

    /// As above with a proxy's fields, written from the received head's bytes and the added values.
    /// `hostLine`, when given, is the `Host` line `hostLine(hostName:port:)` wrote for `hostName`
    /// and `port` beforehand (once per upstream connection instead of once per request).
    public static func encodeUpstreamRequest(method: String, target: String, hostName: String, port: Int?,
                                             hostLine: [UInt8]? = nil,
                                             fields: ForwardedRequestFields, contentLength: Int?, chunked: Bool,
                                             into bytes: inout [UInt8]) {
        // "Host: [" name "]:" port CRLF
        let capacity = size(method: method, target: target, fieldsSize: fields.encodedSize) + hostName.utf8.count + 8 + 1 + 20 + 2
        HeadBuffer.append(to: &bytes, capacity: capacity) { head in
            requestLine(method: method, target: target, into: &head)
            if let hostLine {
                hostLine.withUnsafeBufferPointer { head.bytes($0) }
            } else {
                HeadWriter.writeHostField(hostName: hostName, port: port, into: &head)
            }
            fields.write(into: &head, skipping: isUpstreamManaged)
            head.framing(contentLength: contentLength, chunked: chunked)
            head.byte(ASCII.cr)
            head.byte(ASCII.lf)
        }
    }

    /// The `Host` line `encodeUpstreamRequest` writes for `hostName` and `port` (empty when it
    /// writes none: a name that cannot be a field value).
    public static func hostLine(hostName: String, port: Int?) -> [UInt8] {
        var line: [UInt8] = []
        HeadBuffer.append(to: &line, capacity: hostName.utf8.count + 8 + 1 + 20 + 2) { head in
            HeadWriter.writeHostField(hostName: hostName, port: port, into: &head)
        }
        return line
    }

    /// At most how long the head is without its `Host` line.
    private static func size(method: String, target: String, fieldsSize: Int) -> Int {
        method.utf8.count * 3 + 1 + target.utf8.count * 3 + 11 + HeadBuffer.framingSize + 2 + fieldsSize
    }

    private static func requestLine(method: String, target: String, into head: inout HeadBuffer) {
        head.percentEncoded(method, allowed: ASCII.isTokenChar)
        head.byte(ASCII.space)
        // Usually every byte is visible ASCII: checked a vector at a time, then copied whole.
        let visible = target.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard let base = bytes.baseAddress, gatehouse_is_visible(base, bytes.count) != 0 else { return false }
            head.bytes(bytes)
            return true
        } ?? false
        if !visible { head.percentEncoded(target, allowed: ASCII.isVisible) }
        head.text(" HTTP/1.1\r\n")
    }

    private static func isUpstreamManaged(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        switch name.count {
        case 4: ByteSearch.equalIgnoringASCIICase(name, "Host")
        case 14: ByteSearch.equalIgnoringASCIICase(name, "Content-Length")
        case 17: ByteSearch.equalIgnoringASCIICase(name, "Transfer-Encoding")
        default: false
        }
    }
}

/// One head written into a piece of memory sized beforehand (an upper bound of its length), then
/// appended to the output with one call.
///
/// Appending piece by piece to the output array cost a uniqueness and capacity check per piece,
/// about a dozen per head and the larger part of writing one (`bench/instructions`). Every write is
/// checked against the capacity: an upper bound that was too small stops the process rather than
/// write past the memory.
struct HeadBuffer {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private(set) var count = 0

    /// Writes a head of at most `capacity` bytes with `body`, then appends it to `bytes`.
    @inline(__always)
    static func append(to bytes: inout [UInt8], capacity: Int, _ body: (inout HeadBuffer) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { memory in
            var head = HeadBuffer(base: memory.baseAddress!, capacity: capacity)
            body(&head)
            bytes.append(contentsOf: UnsafeBufferPointer(start: memory.baseAddress!, count: head.count))
        }
    }

    private init(base: UnsafeMutablePointer<UInt8>, capacity: Int) {
        self.base = base
        self.capacity = capacity
    }

    @inline(__always)
    mutating func byte(_ value: UInt8) {
        precondition(count < capacity, "head larger than its computed size")
        base[count] = value
        count += 1
    }

    @inline(__always)
    mutating func bytes(_ source: UnsafeBufferPointer<UInt8>) {
        precondition(source.count <= capacity - count, "head larger than its computed size")
        if let from = source.baseAddress { (base + count).initialize(from: from, count: source.count) }
        count += source.count
    }

    @inline(__always)
    mutating func text(_ literal: StaticString) {
        bytes(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    mutating func utf8(_ text: String) {
        let copied = text.utf8.withContiguousStorageIfAvailable { bytes($0) } != nil
        if !copied { for b in text.utf8 { byte(b) } }
    }

    /// A non-negative number in decimal (at most 20 bytes).
    mutating func decimal(_ value: Int) {
        guard value > 0 else {
            if value == 0 { byte(UInt8(ascii: "0")) } else { utf8(String(value)) }
            return
        }
        // Digits counted by comparison (a division per digit was counted twice).
        var digits = 1
        var power = 10
        while digits < 19 && value >= power {
            digits += 1
            power &*= 10
        }
        precondition(digits <= capacity - count, "head larger than its computed size")
        var rest = value
        for position in stride(from: count + digits - 1, through: count, by: -1) {
            base[position] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        count += digits
    }

    /// `text` with every byte not `allowed` as `%XX` (at most three bytes per byte of `text`).
    mutating func percentEncoded(_ text: String, allowed: (UInt8) -> Bool) {
        let copied = text.utf8.withContiguousStorageIfAvailable { raw -> Bool in
            for b in raw where !allowed(b) { return false }
            bytes(raw)
            return true
        } ?? false
        if copied { return }
        for b in text.utf8 {
            if allowed(b) {
                byte(b)
            } else {
                byte(UInt8(ascii: "%"))
                byte(Self.hexDigit(b >> 4))
                byte(Self.hexDigit(b & 0x0F))
            }
        }
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x41 + nibble - 10 }

    /// The framing the connection decided on: `Content-Length: n\r\n` or
    /// `Transfer-Encoding: chunked\r\n`, or nothing (at most `framingSize` bytes).
    mutating func framing(contentLength: Int?, chunked: Bool) {
        if let contentLength {
            text("Content-Length: ")
            decimal(contentLength)
            byte(ASCII.cr)
            byte(ASCII.lf)
        }
        if chunked { text("Transfer-Encoding: chunked\r\n") }
    }

    static let framingSize = 16 + 20 + 2 + 28
}

/// The rules every head is written by (`HeadBuffer`, the encoders).
///
/// Only what our own parser would accept is written: a field whose name is not a token, or whose
/// value holds CR, LF, NUL or another control character, is dropped, so no header value coming from
/// an upstream or a handler can split the response (or the forwarded request).
enum HeadWriter {
    /// True when `field` can be written without changing the message structure.
    static func isSafe(_ field: HTTPField) -> Bool {
        // On the contiguous bytes where the strings have them (native strings do): a proof or an
        // assertion is hundreds of bytes, and the generic `UTF8View` walk costs about 30
        // instructions a byte.
        let name = field.name.utf8.withContiguousStorageIfAvailable(isToken)
            ?? (!field.name.isEmpty && field.name.utf8.allSatisfy(ASCII.isTokenChar))
        guard name else { return false }
        return field.value.utf8.withContiguousStorageIfAvailable(isFieldValue)
            ?? field.value.utf8.allSatisfy(ASCII.isFieldValueChar)
    }

    /// `Host: name\r\n`, `Host: name:port\r\n` or `Host: [v6]:port\r\n` (at most the name's length
    /// plus 31 bytes), or nothing when the name could not be written as a field value.
    static func writeHostField(hostName: String, port: Int?, into head: inout HeadBuffer) {
        // On the contiguous bytes: the generic `UTF8View` walks cost about 30 instructions a byte.
        let checked: (safe: Bool, bracketed: Bool) = hostName.utf8.withContiguousStorageIfAvailable { name in
            (!name.isEmpty && isFieldValue(name),
             ByteSearch.firstIndex(of: ASCII.colon, in: name, from: 0, to: name.count) < name.count)
        } ?? (!hostName.isEmpty && hostName.utf8.allSatisfy(ASCII.isFieldValueChar), hostName.utf8.contains(ASCII.colon))
        guard checked.safe else { return }
        head.text("Host: ")
        if checked.bracketed { head.byte(UInt8(ascii: "[")) }
        head.utf8(hostName)
        if checked.bracketed { head.byte(UInt8(ascii: "]")) }
        if let port {
            head.byte(ASCII.colon)
            head.decimal(port)
        }
        head.byte(ASCII.cr)
        head.byte(ASCII.lf)
    }

    /// Values such as a bearer token are a kilobyte long and written on every proxied request: the
    /// check runs 16 bytes a step (`CByteScan`).
    @inline(__always)
    static func isFieldValue(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        return gatehouse_is_field_value(base, bytes.count) != 0
    }

    /// A non-empty name of token characters only.
    @inline(__always)
    static func isToken(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return false }
        return gatehouse_token_prefix(base, bytes.count) == bytes.count
    }
}

// MARK: - ForwardedRequestFields, written into a head

extension ForwardedRequestFields {
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

// MARK: - HTTPHeaders, written into a head

extension HTTPHeaders {

    /// Writes each field `skip` returns false for (given its name) as `name: value\r\n`: a checked
    /// field as its bytes, another only when it is safe to write (`HeadWriter`), else dropped.
    /// At most `encodedSize` bytes.
    func write(into head: inout HeadBuffer, skipping skip: (UnsafeBufferPointer<UInt8>) -> Bool) {
        write(into: &head, passing: nil, skipping: skip)
    }

    /// As above, only the fields whose bit `passed` has (nil: all; a mask covers the first 64).
    func write(into head: inout HeadBuffer, passing passed: UInt64?, skipping skip: (UnsafeBufferPointer<UInt8>) -> Bool) {
        let marks = checkedFields
        let passes = passed ?? .max
        lines.withUnsafeBufferPointer { bytes in
            spans.withUnsafeBufferPointer { spans in
                guard let base = bytes.baseAddress else { return }
                // Runs of consecutive kept, checked lines are copied at once.
                var runStart = 0, runEnd = 0
                for index in spans.indices {
                    if index < 64, (passes >> UInt64(index)) & 1 == 0 { continue }
                    let span = spans[index]
                    let start = Int(span.start)
                    let name = UnsafeBufferPointer(start: base + start, count: Int(span.nameLength))
                    if skip(name) { continue }
                    let line = UnsafeBufferPointer(start: base + start, count: span.lineLength)
                    let checked = index < 64 && (marks >> UInt64(index)) & 1 == 1
                    if checked || (HeadWriter.isToken(name)
                                   && HeadWriter.isFieldValue(UnsafeBufferPointer(start: base + span.valueStart,
                                                                                  count: Int(span.valueLength)))) {
                        if start == runEnd {
                            runEnd = start + line.count
                        } else {
                            if runEnd > runStart { head.bytes(UnsafeBufferPointer(rebasing: bytes[runStart..<runEnd])) }
                            runStart = start
                            runEnd = start + line.count
                        }
                    }
                }
                if runEnd > runStart { head.bytes(UnsafeBufferPointer(rebasing: bytes[runStart..<runEnd])) }
            }
        }
    }
}
