import EventLoops
import HTTP1

/// The browser-facing fields last made from an upstream's fields, kept per event loop.
///
/// An upstream on a keep-alive connection usually answers with the same field lines again, and the
/// connection's parser then hands back the very same field list (`RepeatedFieldLines`). The
/// browser's fields are a pure function of it (`BrowserAnswerHead.fields`: the header policy and
/// the security headers), so the same list gives the same fields: one look at two buffer
/// addresses instead of the filtering, a new list and the security headers (about 2,800
/// instructions per proxied request). Any other list, or another `Strict-Transport-Security`
/// value, is made anew. Holding the upstream's list keeps its storage alive, so an address seen
/// again is never a new list's.
final class BrowserHeadMemo {
    private var upstream: HTTPHeaders?
    private var strictTransportSecurity: String?
    private var browser = HTTPHeaders()

    /// `BrowserAnswerHead.fields(upstreamHeaders:strictTransportSecurity:)`, from this loop's memo
    /// when called on an event loop.
    static func fields(upstreamHeaders: HTTPHeaders, strictTransportSecurity: String?) -> HTTPHeaders {
        let memo = EventLoop.withCurrent { loop in
            loop.localValue(for: ObjectIdentifier(BrowserHeadMemo.self)) { BrowserHeadMemo() }
        }
        guard let memo else {
            return BrowserAnswerHead.fields(upstreamHeaders: upstreamHeaders, strictTransportSecurity: strictTransportSecurity)
        }
        return memo.fields(upstreamHeaders: upstreamHeaders, strictTransportSecurity: strictTransportSecurity)
    }

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
