import GatehouseCore
import HTTP1

/// Where a routed request goes upstream: the route and the origin-form target (the path as the
/// route maps it, then the query byte for byte). API calls and WebSocket handshakes share it.
struct ForwardTarget {
    let route: UpstreamRoute
    let target: String

    /// nil for a refused match: answer `ForwardTarget.unroutable` and forward nothing.
    init?(_ match: consuming RouteMatch, head: HTTPRequestHead) {
        self.init(match, query: head.query)
    }

    /// As above with the request's query alone (the proxy passes that, not a copy of its head).
    init?(_ match: consuming RouteMatch, query: Substring?) {
        guard case .forward(let route, let upstreamPath) = consume match else { return nil }
        self.route = route
        var target = upstreamPath
        if let query { target += "?" + query }
        self.target = target
    }

    static let unroutable = HTTPResponse.jsonError(status: 400, error: "invalid_path",
                                                   description: "The path cannot be routed.")
}
