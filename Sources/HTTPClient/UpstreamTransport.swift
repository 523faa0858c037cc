import EventLoops
import HTTP1

/// One way of reaching upstreams: the pooled client (`UpstreamClient`), plain for `http://` and with
/// TLS for `https://`. The proxy holds one per scheme and picks it from the route, so tests can put
/// a fake in place of either.
///
/// One protocol call per exchange; the body pieces are read through the answer (`UpstreamAnswer`).
public protocol UpstreamTransport: Sendable {
    /// Sends `request` and returns once the upstream's final head has arrived; the browser's `body`
    /// (`declaredLength == 0`: none) keeps streaming meanwhile. Fails before any byte of an answer
    /// has been relayed, so the caller can still answer with a status of its own.
    func exchange(_ request: UpstreamRequest, body: any HTTPRequestBody) async throws(UpstreamError) -> any UpstreamAnswer
}

/// The upstream's answer to a protocol-switch request (a WebSocket handshake).
public enum UpstreamSwitch {
    /// `101 Switching Protocols`: the connection is now the caller's, as a tunnel endpoint on the
    /// caller's loop. It was opened for this request alone and never goes back to a pool.
    case switched(HTTPResponseHead, any TunnelEndpoint)
    /// Any other final answer, relayed as usual; its connection is closed after it, never pooled.
    case answered(any UpstreamAnswer)
}

/// A transport that can carry a protocol switch (`Upgrade`, RFC 9110 §7.8).
public protocol UpstreamSwitchingTransport: Sendable {
    /// Sends the bodiless `request` on a new connection of the caller's event loop and returns the
    /// switched connection or the upstream's other answer. Fails before any answer byte is relayed.
    func switchProtocols(_ request: UpstreamRequest) async throws(UpstreamError) -> UpstreamSwitch
}
