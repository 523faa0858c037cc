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
