/// Serialises the server's response heads for the wire (the field checks are `HeadWriter`'s).
///
/// For example: `encodeServerHead(status: 204, headers: [:], keepContentLength: false, contentLength: nil,
/// chunked: false, connection: nil, into: &bytes)` writes `HTTP/1.1 204 No Content\r\n\r\n`.
public enum ResponseHeadEncoder {
    /// The head the server writes for a handler's response, straight into the connection's output
    /// buffer: the handler's fields minus the ones the connection decides (`Connection`,
    /// `Keep-Alive`, `Transfer-Encoding`, and `Content-Length` unless `keepContentLength`), then
    /// the connection's own framing and `Connection` fields. Nothing is copied or rebuilt on the way.
    package static func encodeServerHead(status: Int, headers: HTTPHeaders, keepContentLength: Bool, contentLength: Int?,
                                 chunked: Bool, connection: String?, into bytes: inout [UInt8]) {
        let status = (100...599).contains(status) ? status : 500
        let reason = HTTPStatus.reason(status)
        // "HTTP/1.1 " status " " reason CRLF, fields, framing, "Connection: " value CRLF, CRLF
        var capacity = 9 + 3 + 1 + reason.utf8.count + 2 + HeadBuffer.framingSize + 2
        if let connection { capacity += 14 + connection.utf8.count }
        capacity += headers.encodedSize
        HeadBuffer.append(to: &bytes, capacity: capacity) { head in
            head.text("HTTP/1.1 ")
            head.decimal(status)
            head.byte(ASCII.space)
            for b in reason.utf8 where ASCII.isFieldValueChar(b) { head.byte(b) }
            head.byte(ASCII.cr)
            head.byte(ASCII.lf)
            headers.write(into: &head) { isConnectionManaged($0, keepContentLength: keepContentLength) }
            head.framing(contentLength: contentLength, chunked: chunked)
            if let connection {
                head.text("Connection: ")
                head.utf8(connection)
                head.byte(ASCII.cr)
                head.byte(ASCII.lf)
            }
            head.byte(ASCII.cr)
            head.byte(ASCII.lf)
        }
    }

    /// The fields whose meaning belongs to the connection, not the handler.
    private static func isConnectionManaged(_ name: UnsafeBufferPointer<UInt8>, keepContentLength: Bool) -> Bool {
        switch name.count {
        case 10: ByteSearch.equalIgnoringASCIICase(name, "Connection") || ByteSearch.equalIgnoringASCIICase(name, "Keep-Alive")
        case 14: !keepContentLength && ByteSearch.equalIgnoringASCIICase(name, "Content-Length")
        case 17: ByteSearch.equalIgnoringASCIICase(name, "Transfer-Encoding")
        default: false
        }
    }
}
