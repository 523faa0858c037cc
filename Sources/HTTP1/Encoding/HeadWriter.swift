import CByteScan

/// The pieces every head is written from.
///
/// Only what our own parser would accept is written: a field whose name is not a token, or whose
/// value holds CR, LF, NUL or another control character, is dropped, so no header value coming from
/// an upstream or a handler can split the response (or the forwarded request).
enum HeadWriter {
    static func appendDecimal(_ value: Int, to bytes: inout [UInt8]) {
        guard value > 0 else {
            if value == 0 { bytes.append(0x30) } else { bytes.append(contentsOf: String(value).utf8) }
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            while rest > 0 {
                buffer[19 - count] = UInt8(0x30 + rest % 10)
                rest /= 10
                count += 1
            }
            bytes.append(contentsOf: buffer[(20 - count)...])
        }
    }

    /// `Host: name\r\n`, `Host: name:port\r\n` or `Host: [v6]:port\r\n`, or nothing when the name
    /// could not be written as a field value.
    static func appendHostField(hostName: String, port: Int?, to bytes: inout [UInt8]) {
        // On the contiguous bytes: the generic `UTF8View` walks cost about 30 instructions a byte.
        let checked: (safe: Bool, bracketed: Bool) = hostName.utf8.withContiguousStorageIfAvailable { name in
            (!name.isEmpty && isFieldValue(name),
             ByteSearch.firstIndex(of: ASCII.colon, in: name, from: 0, to: name.count) < name.count)
        } ?? (!hostName.isEmpty && hostName.utf8.allSatisfy(ASCII.isFieldValueChar), hostName.utf8.contains(ASCII.colon))
        guard checked.safe else { return }
        let bracketed = checked.bracketed
        bytes.append(contentsOf: "Host: ".utf8)
        if bracketed { bytes.append(UInt8(ascii: "[")) }
        bytes.append(contentsOf: hostName.utf8)
        if bracketed { bytes.append(UInt8(ascii: "]")) }
        if let port {
            bytes.append(ASCII.colon)
            appendDecimal(port, to: &bytes)
        }
        bytes.append(contentsOf: ASCII.crlf)
    }

    /// True when `field` can be written without changing the message structure.
    static func isSafe(_ field: HTTPField) -> Bool {
        !field.name.isEmpty && field.name.utf8.allSatisfy(ASCII.isTokenChar)
            && field.value.utf8.allSatisfy(ASCII.isFieldValueChar)
    }

    /// `name: value\r\n`, or nothing when the field is not safe to write.
    @inline(__always)
    static func appendField(_ field: HTTPField, checked: Bool = false, to bytes: inout [UInt8]) {
        // Checked and copied from contiguous storage (every native string has it): the generic
        // per-byte iteration of `String.UTF8View` costs more than writing the whole head. A field
        // already checked (`HTTPHeaders.isChecked(at:)`) is copied as it is.
        let written = field.name.utf8.withContiguousStorageIfAvailable { name -> Bool in
            field.value.utf8.withContiguousStorageIfAvailable { value -> Bool in
                guard checked || (!name.isEmpty && isToken(name) && isFieldValue(value)) else { return true }
                appendLine(name, value, to: &bytes)
                return true
            } ?? false
        } ?? false
        guard !written, isSafe(field) else { return }
        bytes.append(contentsOf: field.name.utf8)
        bytes.append(ASCII.colon)
        bytes.append(ASCII.space)
        bytes.append(contentsOf: field.value.utf8)
        bytes.append(contentsOf: ASCII.crlf)
    }

    /// `name: value\r\n` put together first and appended with one call: each `append` checks the
    /// array's uniqueness and capacity, and six of them cost more than the copies of a field.
    @inline(__always)
    private static func appendLine(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>,
                                   to bytes: inout [UInt8]) {
        let total = name.count + value.count + 4
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: total) { line in
            let base = line.baseAddress!
            if let from = name.baseAddress { (base).initialize(from: from, count: name.count) }
            base[name.count] = ASCII.colon
            base[name.count + 1] = ASCII.space
            if let from = value.baseAddress { (base + name.count + 2).initialize(from: from, count: value.count) }
            base[total - 2] = ASCII.cr
            base[total - 1] = ASCII.lf
            bytes.append(contentsOf: UnsafeBufferPointer(line))
        }
    }

    private static func isToken(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        gatehouse_token_prefix(bytes.baseAddress!, bytes.count) == bytes.count
    }

    /// Values such as a bearer token are a kilobyte long and written on every proxied request: the
    /// check runs 16 bytes a step (`CByteScan`).
    private static func isFieldValue(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        return gatehouse_is_field_value(base, bytes.count) != 0
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x41 + nibble - 10 }

    /// The body framing the connection (not the handler or the browser) decided on:
    /// `Content-Length: n` or `Transfer-Encoding: chunked`, or nothing.
    static func appendFraming(contentLength: Int?, chunked: Bool, to bytes: inout [UInt8]) {
        if let contentLength {
            bytes.append(contentsOf: "Content-Length: ".utf8)
            appendDecimal(contentLength, to: &bytes)
            bytes.append(contentsOf: ASCII.crlf)
        }
        if chunked { bytes.append(contentsOf: "Transfer-Encoding: chunked\r\n".utf8) }
    }

    static func appendVersion(_ version: HTTPVersion, to bytes: inout [UInt8]) {
        // Single digits only: anything else is not an HTTP/1.x version we could speak.
        let major = (0...9).contains(version.major) ? version.major : 1
        let minor = (0...9).contains(version.minor) ? version.minor : 1
        bytes.append(contentsOf: "HTTP/".utf8)
        bytes.append(UInt8(0x30 + major))
        bytes.append(ASCII.dot)
        bytes.append(UInt8(0x30 + minor))
    }

    static func appendPercentEncoded(_ text: String.UTF8View, allowed: (UInt8) -> Bool,
                                             to bytes: inout [UInt8]) {
        // The usual case: nothing to encode, one copy.
        let copied = text.withContiguousStorageIfAvailable { raw -> Bool in
            for b in raw where !allowed(b) { return false }
            bytes.append(contentsOf: raw)
            return true
        } ?? false
        if copied { return }
        for b in text {
            if allowed(b) {
                bytes.append(b)
            } else {
                bytes.append(0x25)
                bytes.append(hexDigit(b >> 4))
                bytes.append(hexDigit(b & 0x0F))
            }
        }
    }
}
