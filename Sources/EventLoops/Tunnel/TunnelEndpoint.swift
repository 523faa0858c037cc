/// What one read or write on a tunnel endpoint did.
public enum TunnelIO: Equatable, Sendable {
    /// This many bytes moved (always > 0).
    case bytes(Int)
    /// Nothing now; readiness will be reported again.
    case wouldBlock
    /// End of stream (reads) or a broken connection (either).
    case closed
}

/// One side of a byte tunnel (a proxied WebSocket): the browser's socket after a protocol switch, or
/// the upstream's connection (plain or TLS). Confined to the event loop that owns the tunnel.
///
/// Readiness is reported to the handler given to `attach`; between reports the tunnel keeps reading
/// or writing until an operation answers `.wouldBlock` (edge-triggered, like every socket here).
public protocol TunnelEndpoint: AnyObject {
    /// From now on readiness of this endpoint goes to `handler`, until `close` (which drops it).
    func attach(_ handler: any TunnelEndpointHandler)
    func receive(into buffer: UnsafeMutableRawBufferPointer) -> TunnelIO
    func send(_ bytes: UnsafeRawBufferPointer) -> TunnelIO
    /// Half-closes the sending direction (the peer reads an EOF). False when the endpoint cannot;
    /// the tunnel then closes it whole.
    func shutdownOutput() -> Bool
    /// Closes the endpoint; idempotent. No handler call follows.
    func close()
}

/// A tunnel endpoint the HTTP server handed over after a protocol switch (plain or TLS): still
/// counted as an open connection until it closes, and ended when the server shuts down.
public protocol ServerTunnelEndpoint: TunnelEndpoint {
    /// Called once, when the endpoint closes.
    var onClose: (() -> Void)? { get set }
    /// Asks the tunnel to end gracefully (the server is shutting down).
    func requestEnd()
}

/// Receives an endpoint's readiness (on the loop thread).
public protocol TunnelEndpointHandler: AnyObject {
    func endpointReadable(_ endpoint: any TunnelEndpoint)
    func endpointWritable(_ endpoint: any TunnelEndpoint)
    /// The endpoint failed or its owner (the server shutting down) asks the tunnel to end.
    func endpointEnded(_ endpoint: any TunnelEndpoint, graceful: Bool)
}

extension EventLoop {
    /// Registers a tunnel endpoint's socket with this loop, edge-triggered (a socket already
    /// readable or writable reports it at once); when that fails, `handler` hears that the endpoint
    /// ended. The one way both endpoint kinds (`SocketEndpoint`, the TLS one) start reporting.
    /// - Returns: whether the socket is registered.
    public func registerTunnel(_ fd: Int32, _ endpoint: any TunnelEndpoint & EventLoopSelectable,
                               handler: any TunnelEndpointHandler) -> Bool {
        do {
            try register(fd, endpoint)
            return true
        } catch {
            handler.endpointEnded(endpoint, graceful: false)
            return false
        }
    }
}
