import GatehouseCore
import HTTPClient
import HTTP1

/// The browser-facing head of an upstream's answer (either transport).
struct BrowserAnswerHead: Equatable {
    var head: HTTPResponseHead
    /// The length announced to the browser (`UpstreamResponseFraming.announcedLength`: the body is
    /// relayed byte for byte, encoded or not); nil means chunked (or no body at all).
    var contentLength: Int?

    /// The proxy's header policy with the security headers added (`SecuredAnswers.relayed`; from
    /// `memo` when the upstream's field list is the one it saw last), and the length the client
    /// decided from a validated head (conflicting or malformed lengths never get here).
    static func make(status: Int, upstreamHeaders: HTTPHeaders, framing: UpstreamResponseFraming,
                     secure: SecuredAnswers = SecuredAnswers(strictTransportSecurity: nil),
                     memo: BrowserHeadMemo? = nil) -> BrowserAnswerHead {
        let headers = memo?.fields(upstreamHeaders, secure: secure) ?? secure.relayed(upstreamHeaders)
        return BrowserAnswerHead(head: HTTPResponseHead(status: status, headers: headers), contentLength: framing.announcedLength)
    }
}
