import GatehouseCore
import HTTP1
import HTTPClient

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

/// The browser-facing fields last made from an upstream connection's fields, kept with that
/// connection (`UpstreamAnswer.connectionMemo`).
///
/// An upstream on a keep-alive connection usually answers with the same field lines again, and the
/// connection's parser then hands back the very same field list (`RepeatedFieldLines`). The
/// browser's fields are `secure.relayed(list)`, a function of exactly two inputs, and the memo's
/// key is exactly those two: the list's storage and the `SecuredAnswers` value. A new input of that
/// function is a new parameter (every call here then fails to compile) or a new property of
/// `SecuredAnswers` (compared by its synthesised `==`), so the key cannot go stale by omission.
/// Holding the upstream's list keeps its storage alive, so an address seen again is never a new
/// list's.
///
/// Kept per connection, not per event loop: a loop's requests take turns on many pooled
/// connections, each with its own list, and one memo per loop was overwritten by every other
/// connection's answer (it missed on nearly every request under load).
final class BrowserHeadMemo {
    private var key: (upstream: HTTPHeaders, secure: SecuredAnswers)?
    private var browser = HTTPHeaders()

    func fields(_ upstreamHeaders: HTTPHeaders, secure: SecuredAnswers) -> HTTPHeaders {
        if let key, key.upstream.isSameStorage(as: upstreamHeaders), key.secure == secure {
            return browser
        }
        browser = secure.relayed(upstreamHeaders)
        key = (upstreamHeaders, secure)
        return browser
    }
}
