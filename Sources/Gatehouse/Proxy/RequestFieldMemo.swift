import GatehouseCore
import HTTP1
import HTTPServer

/// What the gateway read from a browser request's fields, kept with the browser's connection
/// (`HTTPRequest.connectionMemo`) for its next request with the very same field list.
///
/// A keep-alive browser sends the same field lines again, and the connection's parser then hands
/// back the same list (`RepeatedFieldLines`). What the gateway reads from it is a function of the
/// list and of what stays put for the connection (its peer, the loop's gateway and configuration):
/// whether the session cookie is there and which one it is, whether the anti-forgery header is
/// valid, which fields go upstream and the `X-Forwarded-For` sent with them. Each is read the
/// first time it is asked for; another list starts over. Holding the list keeps its storage
/// alive, so an address seen again is never another list's. The server drops the memo with an
/// idle connection's buffers. Loop thread only, like the connection.
final class RequestFieldMemo {
    private var source: HTTPHeaders?
    private var cookiePresent: (name: String, present: Bool)?
    private var antiForgery: (name: String, valid: Bool)?
    private var sessionKey: SessionCookieKey??
    private var passing: (peerIP: String, passesTracestate: Bool, passing: UpstreamFieldPassing)?

    /// The memo of `request`'s connection, about `request`'s fields; nil when the request has no
    /// connection to keep it with (or is handled off its loop).
    static func of(_ request: HTTPRequest) -> RequestFieldMemo? {
        guard let memo = request.connectionMemo({ RequestFieldMemo() }) else { return nil }
        memo.use(request.head.headers)
        return memo
    }

    /// Makes `headers` the list the answers are about: what was read stays when it is the list
    /// seen last, else it is forgotten.
    func use(_ headers: HTTPHeaders) {
        if let source, source.isSameStorage(as: headers) { return }
        source = headers
        cookiePresent = nil
        antiForgery = nil
        sessionKey = .none
        passing = nil
    }

    /// `CookieParser.isPresent(named:in:)`.
    func sessionCookiePresent(named name: String) -> Bool {
        if let cookiePresent, cookiePresent.name == name { return cookiePresent.present }
        let present = CookieParser.isPresent(named: name, in: source ?? HTTPHeaders())
        cookiePresent = (name, present)
        return present
    }

    /// `CSRFPolicy.check(_:headerName:)`.
    func antiForgeryHeaderValid(named name: String) -> Bool {
        if let antiForgery, antiForgery.name == name { return antiForgery.valid }
        let valid = CSRFPolicy.check(source ?? HTTPHeaders(), headerName: name)
        antiForgery = (name, valid)
        return valid
    }

    /// `SessionCache.loneSessionCookieKey(in:)` (one cache per gateway, so per connection).
    func loneSessionKey(in sessions: SessionCache) -> SessionCookieKey? {
        if case .some(let known) = sessionKey { return known }
        let key = sessions.loneSessionCookieKey(in: source ?? HTTPHeaders())
        sessionKey = .some(key)
        return key
    }

    /// `ProxyHeaderPolicy.upstreamFieldPassing` (one forwarding configuration per gateway, so per
    /// connection).
    func upstreamPassing(peerIP: String, passesTracestate: Bool, forwarding: ProxyForwarding) -> UpstreamFieldPassing {
        if let passing, passing.passesTracestate == passesTracestate, passing.peerIP == peerIP { return passing.passing }
        let made = ProxyHeaderPolicy.upstreamFieldPassing(from: source ?? HTTPHeaders(), peerIP: peerIP,
                                                          passesTracestate: passesTracestate, forwarding: forwarding)
        passing = (peerIP, passesTracestate, made)
        return made
    }
}
