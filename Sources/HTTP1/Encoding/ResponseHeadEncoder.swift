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
        HeadWriter.appendVersion(.http1_1, to: &bytes)
        bytes.append(ASCII.space)
        HeadWriter.appendDecimal(status, to: &bytes)
        bytes.append(ASCII.space)
        for b in HTTPStatus.reason(status).utf8 where ASCII.isFieldValueChar(b) { bytes.append(b) }
        bytes.append(contentsOf: ASCII.crlf)
        for (index, field) in headers.fields.enumerated()
        where !isConnectionManaged(field.name, keepContentLength: keepContentLength) {
            HeadWriter.appendField(field, checked: headers.isChecked(at: index), to: &bytes)
        }
        HeadWriter.appendFraming(contentLength: contentLength, chunked: chunked, to: &bytes)
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
}
