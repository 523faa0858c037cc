import GatehouseCore
import HTTPClient
import HTTP1

/// The browser-facing head of an upstream's answer (either transport).
struct BrowserAnswerHead: Equatable {
    var head: HTTPResponseHead
    /// The length announced to the browser (`UpstreamResponseFraming.announcedLength`: the body is
    /// relayed byte for byte, encoded or not); nil means chunked (or no body at all).
    var contentLength: Int?

    /// Pure: the proxy's header policy, and the length the client decided from a validated head
    /// (conflicting or malformed lengths never get here).
    static func make(status: Int, upstreamHeaders: HTTPHeaders, framing: UpstreamResponseFraming) -> BrowserAnswerHead {
        BrowserAnswerHead(head: HTTPResponseHead(status: status,
                                               headers: ProxyHeaderPolicy.downstreamResponseHeaders(from: upstreamHeaders)),
                        contentLength: framing.announcedLength)
    }
}
