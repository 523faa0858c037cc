import GatehouseCore
import HTTPServer

/// The browser-facing head of an `https://` upstream's answer, and its framing.
struct TLSUpstreamHead: Equatable {
    var head: HTTPResponseHead
    /// The upstream's `Content-Length` (the body is relayed byte for byte, encoded or not); nil
    /// means chunked.
    var contentLength: Int?

    /// Pure: the header policy of the `http://` path, and the upstream's length when it framed the
    /// body by length (never with `Transfer-Encoding`, never a malformed or negative value).
    static func make(status: Int, upstreamHeaders: HTTPHeaders) -> TLSUpstreamHead {
        var length: Int? = nil
        if !upstreamHeaders.contains("Transfer-Encoding"), let declared = upstreamHeaders["Content-Length"],
           let n = Int(declared.trimmingASCIIWhitespace()), n >= 0 {
            length = n
        }
        return TLSUpstreamHead(head: HTTPResponseHead(status: status,
                                                      headers: ProxyHeaderPolicy.downstreamResponseHeaders(from: upstreamHeaders)),
                               contentLength: length)
    }
}
