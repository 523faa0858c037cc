import GatehouseCore
import HTTPClient
import HTTP1

/// The browser-facing head of an `https://` upstream's answer.
struct TLSUpstreamHead: Equatable {
    var head: HTTPResponseHead
    /// The length announced to the browser (`UpstreamResponseFraming.announcedLength`: the body is
    /// relayed byte for byte, encoded or not); nil means chunked (or no body at all).
    var contentLength: Int?

    /// Pure: the header policy of the `http://` path, and the length the client decided from a
    /// validated head (conflicting or malformed lengths never get here).
    static func make(status: Int, upstreamHeaders: HTTPHeaders, framing: UpstreamResponseFraming) -> TLSUpstreamHead {
        TLSUpstreamHead(head: HTTPResponseHead(status: status,
                                               headers: ProxyHeaderPolicy.downstreamResponseHeaders(from: upstreamHeaders)),
                        contentLength: framing.announcedLength)
    }
}
