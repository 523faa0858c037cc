import GatehouseCore
import HTTPClient
import HTTP1

/// The browser-facing head of an upstream's answer (either transport).
struct BrowserAnswerHead: Equatable {
    var head: HTTPResponseHead
    /// The length announced to the browser (`UpstreamResponseFraming.announcedLength`: the body is
    /// relayed byte for byte, encoded or not); nil means chunked (or no body at all).
    var contentLength: Int?

    /// The proxy's header policy with the security headers added (noted while the upstream's
    /// fields are kept: no second pass over them; from `memo` when the upstream's field list is
    /// the one it saw last), and the length the client decided from a validated head (conflicting
    /// or malformed lengths never get here).
    static func make(status: Int, upstreamHeaders: HTTPHeaders, framing: UpstreamResponseFraming,
                     strictTransportSecurity: String? = nil, memo: BrowserHeadMemo? = nil) -> BrowserAnswerHead {
        let headers = memo?.fields(upstreamHeaders: upstreamHeaders, strictTransportSecurity: strictTransportSecurity)
            ?? fields(upstreamHeaders: upstreamHeaders, strictTransportSecurity: strictTransportSecurity)
        return BrowserAnswerHead(head: HTTPResponseHead(status: status, headers: headers), contentLength: framing.announcedLength)
    }

    /// The fields alone: a function of the upstream's fields and the HSTS value only (which is
    /// what lets `BrowserHeadMemo` reuse them).
    static func fields(upstreamHeaders: HTTPHeaders, strictTransportSecurity: String?) -> HTTPHeaders {
        var present = SecurityHeaders.Present()
        var headers = ProxyHeaderPolicy.downstreamResponseHeaders(from: upstreamHeaders, noting: &present)
        SecurityHeaders.apply(to: &headers, present: present, strictTransportSecurity: strictTransportSecurity)
        return headers
    }
}
