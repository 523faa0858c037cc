import GatehouseCore
import HTTPClient
import HTTP1

/// The browser-facing head of an upstream's answer (either transport).
struct BrowserAnswerHead: Equatable {
    var head: HTTPResponseHead
    /// The length announced to the browser (`UpstreamResponseFraming.announcedLength`: the body is
    /// relayed byte for byte, encoded or not); nil means chunked (or no body at all).
    var contentLength: Int?

    /// Pure: the proxy's header policy with the security headers added (noted while the upstream's
    /// fields are kept: no second pass over them), and the length the client decided from a
    /// validated head (conflicting or malformed lengths never get here).
    static func make(status: Int, upstreamHeaders: HTTPHeaders, framing: UpstreamResponseFraming,
                     strictTransportSecurity: String? = nil) -> BrowserAnswerHead {
        var present = SecurityHeaders.Present()
        var headers = ProxyHeaderPolicy.downstreamResponseHeaders(from: upstreamHeaders, noting: &present)
        SecurityHeaders.apply(to: &headers, present: present, strictTransportSecurity: strictTransportSecurity)
        return BrowserAnswerHead(head: HTTPResponseHead(status: status, headers: headers), contentLength: framing.announcedLength)
    }
}
