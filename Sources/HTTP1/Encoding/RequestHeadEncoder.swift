/// Serialises request heads for an upstream (the field checks are `HeadWriter`'s): a field that
/// our own parser would refuse is dropped, so no header value can split the forwarded request.
public enum RequestHeadEncoder {
    /// A request head for an upstream, written in one pass: the request line, `Host: host`, the given
    /// fields except `Host`, `Content-Length` and `Transfer-Encoding`, then the framing of the body
    /// as it will be relayed (`Content-Length: n` or `Transfer-Encoding: chunked`).
    public static func encodeUpstreamRequest(method: String, target: String, host: String, headers: HTTPHeaders,
                                             contentLength: Int?, chunked: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        encodeUpstreamRequest(method: method, target: target, host: host, headers: headers,
                              contentLength: contentLength, chunked: chunked, into: &bytes)
        return bytes
    }

    /// As above, appended to `bytes` (a connection's reused head buffer: no allocation per request
    /// once it has grown to the usual head size).
    public static func encodeUpstreamRequest(method: String, target: String, host: String, headers: HTTPHeaders,
                                             contentLength: Int?, chunked: Bool, into bytes: inout [UInt8]) {
        appendRequestLine(method: method, target: target, headers: headers, to: &bytes)
        HeadWriter.appendField(HTTPField(name: "Host", value: host), to: &bytes)
        appendFields(headers, contentLength: contentLength, chunked: chunked, to: &bytes)
    }

    /// As above, with `Host` written from the upstream's host name and port (`[…]` around an IPv6
    /// literal, `:port` unless `port` is nil): no String is put together for it on every request.
    public static func encodeUpstreamRequest(method: String, target: String, hostName: String, port: Int?,
                                             headers: HTTPHeaders, contentLength: Int?, chunked: Bool,
                                             into bytes: inout [UInt8]) {
        appendRequestLine(method: method, target: target, headers: headers, to: &bytes)
        HeadWriter.appendHostField(hostName: hostName, port: port, to: &bytes)
        appendFields(headers, contentLength: contentLength, chunked: chunked, to: &bytes)
    }

    private static func appendRequestLine(method: String, target: String, headers: HTTPHeaders, to bytes: inout [UInt8]) {
        bytes.reserveCapacity(bytes.count + 96 + target.utf8.count + headers.count * 48)
        HeadWriter.appendPercentEncoded(method.utf8, allowed: ASCII.isTokenChar, to: &bytes)
        bytes.append(ASCII.space)
        HeadWriter.appendPercentEncoded(target.utf8, allowed: ASCII.isVisible, to: &bytes)
        bytes.append(contentsOf: " HTTP/1.1\r\n".utf8)
    }

    private static func appendFields(_ headers: HTTPHeaders, contentLength: Int?, chunked: Bool, to bytes: inout [UInt8]) {
        for (index, field) in headers.fields.enumerated() where !isUpstreamManaged(field.name) {
            HeadWriter.appendField(field, checked: headers.isChecked(at: index), to: &bytes)
        }
        HeadWriter.appendFraming(contentLength: contentLength, chunked: chunked, to: &bytes)
        bytes.append(contentsOf: ASCII.crlf)
    }

    private static func isUpstreamManaged(_ name: String) -> Bool {
        switch name.utf8.count {
        case 4: name.asciiCaseInsensitiveEquals("Host")
        case 14: name.asciiCaseInsensitiveEquals("Content-Length")
        case 17: name.asciiCaseInsensitiveEquals("Transfer-Encoding")
        default: false
        }
    }
}
