import HTTP1

/// One way of reaching upstreams: the pooled `http://` client (`UpstreamClient`) or libcurl for
/// `https://` (`HTTPSUpstreamClient`, through the gateway's configured adapter). The proxy holds one
/// per scheme and picks it from the route, so tests can put a fake in place of either.
///
/// One protocol call per exchange; the body pieces are read through the answer (`UpstreamAnswer`).
public protocol UpstreamTransport: Sendable {
    /// Sends `request` and returns once the upstream's final head has arrived; the browser's `body`
    /// (`declaredLength == 0`: none) keeps streaming meanwhile. Fails before any byte of an answer
    /// has been relayed, so the caller can still answer with a status of its own.
    func exchange(_ request: UpstreamRequest, body: any HTTPRequestBody) async throws(UpstreamError) -> any UpstreamAnswer
}
