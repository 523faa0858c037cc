/// Serialises heads for the wire.
///
/// Only what our own parser would accept is written: a field whose name is not a token, or whose
/// value holds CR, LF, NUL or another control character, is dropped, so no header value coming from
/// an upstream or a handler can split the response (or the forwarded request).
///
/// For example: `ResponseHeadEncoder.encode(HTTPResponseHead(status: 204))` is `HTTP/1.1 204 No Content\r\n\r\n`.
public enum ResponseHeadEncoder {
    /// `HTTP/1.1 200 OK\r\n`, the fields, and the empty line. The caller puts Content-Length,
    /// Transfer-Encoding and Connection in `head.headers`. A status outside 100...599 is sent as 500.
    public static func encode(_ head: HTTPResponseHead, version: HTTPVersion = .http1_1) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64 + head.headers.count * 32)
        encode(head, version: version, into: &bytes)
        return bytes
    }

    /// Appends the encoded head to `bytes` (a connection's output buffer: no intermediate array).
    public static func encode(_ head: HTTPResponseHead, version: HTTPVersion = .http1_1, into bytes: inout [UInt8]) {
        let status = (100...599).contains(head.status) ? head.status : 500
        appendVersion(version, to: &bytes)
        bytes.append(ASCII.space)
        bytes.append(contentsOf: String(status).utf8)
        bytes.append(ASCII.space)
        for b in HTTPStatus.reason(status).utf8 where ASCII.isFieldValueChar(b) { bytes.append(b) }
        bytes.append(contentsOf: ASCII.crlf)
        appendFields(head.headers, to: &bytes)
    }

    /// `METHOD target HTTP/x.y\r\n`, the fields, and the empty line (for requests to upstreams).
    /// Parsed heads always hold a token method and a visible-ASCII target; any other byte in them is
    /// percent-encoded so that the line can never be split.
    public static func encodeRequest(_ head: HTTPRequestHead) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64 + head.target.utf8.count + head.headers.count * 32)
        appendPercentEncoded(head.method.utf8, allowed: ASCII.isTokenChar, to: &bytes)
        bytes.append(ASCII.space)
        appendPercentEncoded(head.target.utf8, allowed: ASCII.isVisible, to: &bytes)
        bytes.append(ASCII.space)
        appendVersion(head.version, to: &bytes)
        bytes.append(contentsOf: ASCII.crlf)
        appendFields(head.headers, to: &bytes)
        return bytes
    }

    /// True when `field` can be written without changing the message structure.
    static func isSafe(_ field: HTTPField) -> Bool {
        !field.name.isEmpty && field.name.utf8.allSatisfy(ASCII.isTokenChar)
            && field.value.utf8.allSatisfy(ASCII.isFieldValueChar)
    }

    private static func appendFields(_ headers: HTTPHeaders, to bytes: inout [UInt8]) {
        for field in headers where isSafe(field) {
            bytes.append(contentsOf: field.name.utf8)
            bytes.append(ASCII.colon)
            bytes.append(ASCII.space)
            bytes.append(contentsOf: field.value.utf8)
            bytes.append(contentsOf: ASCII.crlf)
        }
        bytes.append(contentsOf: ASCII.crlf)
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
        if text.allSatisfy(allowed) {
            bytes.append(contentsOf: text)
            return
        }
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
