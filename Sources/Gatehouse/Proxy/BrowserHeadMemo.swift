import HTTP1

/// The browser-facing fields last made from an upstream connection's fields, kept with that
/// connection (`UpstreamAnswer.connectionMemo`).
///
/// An upstream on a keep-alive connection usually answers with the same field lines again, and the
/// connection's parser then hands back the very same field list (`RepeatedFieldLines`). The
/// browser's fields are a pure function of it (`BrowserAnswerHead.fields`: the header policy and
/// the security headers), so the same list gives the same fields: one look at two buffer
/// addresses instead of the filtering, a new list (a buffer of about a kilobyte, past malloc's
/// per-thread cache) and the security headers. Any other list, or another
/// `Strict-Transport-Security` value, is made anew. Holding the upstream's list keeps its storage
/// alive, so an address seen again is never a new list's.
///
/// Kept per connection, not per event loop: a loop's requests take turns on many pooled
/// connections, each with its own list, and one memo per loop was overwritten by every other
/// connection's answer (it missed on nearly every request under load).
final class BrowserHeadMemo {
    private var upstream: HTTPHeaders?
    private var strictTransportSecurity: String?
    private var browser = HTTPHeaders()

    func fields(upstreamHeaders: HTTPHeaders, strictTransportSecurity: String?) -> HTTPHeaders {
        if let upstream, upstream.isSameStorage(as: upstreamHeaders), self.strictTransportSecurity == strictTransportSecurity {
            return browser
        }
        browser = BrowserAnswerHead.fields(upstreamHeaders: upstreamHeaders, strictTransportSecurity: strictTransportSecurity)
        upstream = upstreamHeaders
        self.strictTransportSecurity = strictTransportSecurity
        return browser
    }
}
