/// Serialises heads for the wire.
///
/// Only what our own parser would accept is written: a field whose name is not a token, or whose
/// value holds CR, LF, NUL or another control character, is dropped, so no header value coming from
/// an upstream or a handler can split the response (or the forwarded request).
///
/// For example: `encodeServerHead(status: 204, headers: [:], keepContentLength: false, contentLength: nil,
/// chunked: false, connection: nil, into: &bytes)` writes `HTTP/1.1 204 No Content\r\n\r\n`.
public enum ResponseHeadEncoder {
    /// The head the server writes for a handler's response, straight into the connection's output
    /// buffer: the handler's fields minus the ones the connection decides (`Connection`,
    /// `Keep-Alive`, `Transfer-Encoding`, and `Content-Length` unless `keepContentLength`), then
    /// the connection's own framing and `Connection` fields. Nothing is copied or rebuilt on the way.
    static func encodeServerHead(status: Int, headers: HTTPHeaders, keepContentLength: Bool, contentLength: Int?,
                                 chunked: Bool, connection: String?, into bytes: inout [UInt8]) {
        let status = (100...599).contains(status) ? status : 500
        appendVersion(.http1_1, to: &bytes)
        bytes.append(ASCII.space)
        appendDecimal(status, to: &bytes)
        bytes.append(ASCII.space)
        for b in HTTPStatus.reason(status).utf8 where ASCII.isFieldValueChar(b) { bytes.append(b) }
        bytes.append(contentsOf: ASCII.crlf)
        for field in headers.fields where !isConnectionManaged(field.name, keepContentLength: keepContentLength) {
            appendField(field, to: &bytes)
        }
        if let contentLength {
            bytes.append(contentsOf: "Content-Length: ".utf8)
            appendDecimal(contentLength, to: &bytes)
            bytes.append(contentsOf: ASCII.crlf)
        }
        if chunked { bytes.append(contentsOf: "Transfer-Encoding: chunked\r\n".utf8) }
        if let connection {
            bytes.append(contentsOf: "Connection: ".utf8)
            bytes.append(contentsOf: connection.utf8)
            bytes.append(contentsOf: ASCII.crlf)
        }
        bytes.append(contentsOf: ASCII.crlf)
    }

    /// The fields whose meaning belongs to the connection, not the handler.
    private static func isConnectionManaged(_ name: String, keepContentLength: Bool) -> Bool {
        switch name.utf8.count {
        case 10: name.asciiCaseInsensitiveEquals("Connection") || name.asciiCaseInsensitiveEquals("Keep-Alive")
        case 14: !keepContentLength && name.asciiCaseInsensitiveEquals("Content-Length")
        case 17: name.asciiCaseInsensitiveEquals("Transfer-Encoding")
        default: false
        }
    }

    private static func appendDecimal(_ value: Int, to bytes: inout [UInt8]) {
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

    /// A request head for an upstream, written in one pass: the request line, `Host: host`, the given
    /// fields except `Host`, `Content-Length` and `Transfer-Encoding`, then the framing of the body
    /// as it will be relayed (`Content-Length: n` or `Transfer-Encoding: chunked`).
    public static func encodeUpstreamRequest(method: String, target: String, host: String, headers: HTTPHeaders,
                                             contentLength: Int?, chunked: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(96 + target.utf8.count + headers.count * 48)
        appendPercentEncoded(method.utf8, allowed: ASCII.isTokenChar, to: &bytes)
        bytes.append(ASCII.space)
        appendPercentEncoded(target.utf8, allowed: ASCII.isVisible, to: &bytes)
        bytes.append(ASCII.space)
        appendVersion(.http1_1, to: &bytes)
        bytes.append(contentsOf: ASCII.crlf)
        appendField(HTTPField(name: "Host", value: host), to: &bytes)
        for field in headers.fields where !isUpstreamManaged(field.name) {
            appendField(field, to: &bytes)
        }
        if let contentLength {
            bytes.append(contentsOf: "Content-Length: ".utf8)
            appendDecimal(contentLength, to: &bytes)
            bytes.append(contentsOf: ASCII.crlf)
        }
        if chunked { bytes.append(contentsOf: "Transfer-Encoding: chunked\r\n".utf8) }
        bytes.append(contentsOf: ASCII.crlf)
        return bytes
    }

    private static func isUpstreamManaged(_ name: String) -> Bool {
        switch name.utf8.count {
        case 4: name.asciiCaseInsensitiveEquals("Host")
        case 14: name.asciiCaseInsensitiveEquals("Content-Length")
        case 17: name.asciiCaseInsensitiveEquals("Transfer-Encoding")
        default: false
        }
    }

    /// True when `field` can be written without changing the message structure.
    static func isSafe(_ field: HTTPField) -> Bool {
        !field.name.isEmpty && field.name.utf8.allSatisfy(ASCII.isTokenChar)
            && field.value.utf8.allSatisfy(ASCII.isFieldValueChar)
    }

    /// `name: value\r\n`, or nothing when the field is not safe to write.
    @inline(__always)
    private static func appendField(_ field: HTTPField, to bytes: inout [UInt8]) {
        // Checked and copied from contiguous storage (every native string has it): the generic
        // per-byte iteration of `String.UTF8View` costs more than writing the whole head.
        let written = field.name.utf8.withContiguousStorageIfAvailable { name -> Bool in
            field.value.utf8.withContiguousStorageIfAvailable { value -> Bool in
                guard !name.isEmpty, isToken(name), isFieldValue(value) else { return true }
                bytes.append(contentsOf: name)
                bytes.append(ASCII.colon)
                bytes.append(ASCII.space)
                bytes.append(contentsOf: value)
                bytes.append(ASCII.cr)
                bytes.append(ASCII.lf)
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

    private static func isToken(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        for b in bytes where !ASCII.isTokenChar(b) { return false }
        return true
    }

    /// Branch-free over the whole value (no early exit), so the compiler can vectorise it: values
    /// such as a bearer token are a kilobyte long and written on every proxied request.
    private static func isFieldValue(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var bad: UInt8 = 0
        for b in bytes {
            // Control characters except HTAB, and DEL.
            bad |= (b < 0x20 && b != 0x09) || b == 0x7F ? 1 : 0
        }
        return bad == 0
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x41 + nibble - 10 }

    private static func appendVersion(_ version: HTTPVersion, to bytes: inout [UInt8]) {
        // Single digits only: anything else is not an HTTP/1.x version we could speak.
        let major = (0...9).contains(version.major) ? version.major : 1
        let minor = (0...9).contains(version.minor) ? version.minor : 1
        bytes.append(contentsOf: "HTTP/".utf8)
        bytes.append(UInt8(0x30 + major))
        bytes.append(ASCII.dot)
        bytes.append(UInt8(0x30 + minor))
    }

    private static func appendPercentEncoded(_ text: String.UTF8View, allowed: (UInt8) -> Bool,
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
