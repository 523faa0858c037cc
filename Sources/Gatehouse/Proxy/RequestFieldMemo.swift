import GatehouseCore
import HTTP1
import HTTPServer

/// What the gateway read from a browser request's fields, kept with the browser's connection
/// (`RequestConnection.memo`) for its next request with the very same field list.
///
/// A keep-alive browser sends the same field lines again, and the connection's parser then hands
/// back the same list (`RepeatedFieldLines`). Each answer here is a function of that list and of a
/// key that holds every other input of its rule, compared whole before a kept answer is used:
///
/// - whether the session cookie is there: the cookie's name;
/// - whether the anti-forgery header is valid: the header's name;
/// - the request's one well-formed session cookie: the session door (`SessionCache`), whose cookie
///   name and rule decide it;
/// - which fields go upstream and the `X-Forwarded-For` sent with them: `UpstreamPassingInputs`,
///   the rule's whole second parameter.
///
/// Another list starts over. Holding the list keeps its storage alive, so an address seen again
/// is never another list's. The server drops the memo with an idle connection's buffers. Loop
/// thread only, like the connection. `MemoDifferentialTests` runs random request sequences through
/// a gateway with and without these memos and requires the same upstream requests and answers.
final class RequestFieldMemo {
    private var source: HTTPHeaders?
    private var cookiePresent: (name: String, present: Bool)?
    private var antiForgery: (name: String, valid: Bool)?
    private var sessionKey: (door: ObjectIdentifier, key: SessionCookieKey?)?
    private var passing: (inputs: UpstreamPassingInputs, passing: UpstreamFieldPassing)?

    /// Makes `headers` the list the answers are about: what was read stays when it is the list
    /// seen last, else it is forgotten.
    func use(_ headers: HTTPHeaders) {
        if let source, source.isSameStorage(as: headers) { return }
        source = headers
        cookiePresent = nil
        antiForgery = nil
        sessionKey = nil
        passing = nil
    }

    private var fields: HTTPHeaders { source ?? HTTPHeaders() }

    /// `CookieParser.isPresent(named:in:)`.
    func sessionCookiePresent(named name: String) -> Bool {
        if let cookiePresent, cookiePresent.name == name { return cookiePresent.present }
        let present = CookieParser.isPresent(named: name, in: fields)
        cookiePresent = (name, present)
        return present
    }

    /// `CSRFPolicy.check(_:headerName:)`.
    func antiForgeryHeaderValid(named name: String) -> Bool {
        if let antiForgery, antiForgery.name == name { return antiForgery.valid }
        let valid = CSRFPolicy.check(fields, headerName: name)
        antiForgery = (name, valid)
        return valid
    }

    /// `SessionCache.loneSessionCookieKey(in:)`.
    func loneSessionKey(in sessions: SessionCache) -> SessionCookieKey? {
        if let sessionKey, sessionKey.door == ObjectIdentifier(sessions) { return sessionKey.key }
        let key = sessions.loneSessionCookieKey(in: fields)
        sessionKey = (ObjectIdentifier(sessions), key)
        return key
    }

    /// `ProxyHeaderPolicy.upstreamFieldPassing`.
    func upstreamPassing(_ inputs: UpstreamPassingInputs) -> UpstreamFieldPassing {
        if let passing, passing.inputs == inputs { return passing.passing }
        let made = ProxyHeaderPolicy.upstreamFieldPassing(from: fields, inputs)
        passing = (inputs, made)
        return made
    }
}
