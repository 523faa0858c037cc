import GatehouseCore
import HTTP1

/// What the gateway decides about a request that needs more than an answer from memory, once, on
/// its loop: where it goes (`RequestRoute`: an own endpoint, an API route with its upstream target,
/// the static files) and the gate's verdict (the route's methods, then the one anti-forgery check).
/// The endpoints, both proxy transports and the access record read this value; nothing routes or
/// gates the request again.
struct RequestPlan {
    let route: RequestRoute
    let verdict: Verdict

    enum Verdict {
        case pass
        case refuse(HTTPResponse)
        /// A WebSocket handshake under a route: the Origin stands in for the CSRF header (browsers
        /// cannot add headers to it), checked by the WebSocket proxy.
        case webSocket
    }

    /// The plan for `head` on `route`. `fieldsRead`: what was read from the request's fields (the
    /// connection's memo, or a fresh one with the speed layer off).
    init(_ route: RequestRoute, head: HTTPRequestHead, cookieName: String, csrfHeader: String,
         fieldsRead: RequestFieldMemo) {
        verdict = Self.gate(route, head, cookieName: cookieName, csrfHeader: csrfHeader, fieldsRead: fieldsRead)
        self.route = route
    }

    /// What every request meets before its handler: the route's methods, then (WebSocket handshakes
    /// aside) the one anti-forgery gate (SPEC: `/user`, `POST /logout`, every API call), so a
    /// cross-site request changes nothing, not even the idle timer.
    private static func gate(_ route: RequestRoute, _ head: HTTPRequestHead, cookieName: String, csrfHeader: String,
                             fieldsRead: RequestFieldMemo) -> Verdict {
        guard route.allows(method: head.method) else {
            return .refuse(Responses.methodNotAllowed(route.allowedMethods ?? ""))
        }
        if case .api = route, WebSocketHandshake.isUpgrade(method: head.method, version: head.version, headers: head.headers) {
            return .webSocket
        }
        if route.requiresAntiForgery(method: head.method,
                                     sessionCookiePresent: fieldsRead.sessionCookiePresent(named: cookieName)),
           !fieldsRead.antiForgeryHeaderValid(named: csrfHeader) {
            return .refuse(Responses.csrfMissing)
        }
        return .pass
    }
}
