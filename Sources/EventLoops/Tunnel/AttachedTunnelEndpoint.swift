#if canImport(Glibc)
import Glibc
#endif

/// Where a tunnel endpoint stands on its loop: the handler it reports to, whether its socket is
/// registered, whether it is closed, and who hears of the close.
public struct TunnelAttachment {
    weak var handler: (any TunnelEndpointHandler)?
    var closed = false
    var registered = false
    var onClose: (() -> Void)?

    public init() {}
}

/// A tunnel endpoint over a socket of its own (plain, `SocketEndpoint`; TLS, `TLSEndpoint`): how it
/// is attached to its loop, asked to end and closed is written once here; each kind says how it
/// reads and writes, and what closing it involves beyond the socket.
public protocol AttachedTunnelEndpoint: ServerTunnelEndpoint, EventLoopSelectable {
    var fd: Int32 { get }
    var loop: EventLoop { get }
    var attachment: TunnelAttachment { get set }
    /// Whether bytes are already taken from the socket (a leftover, a record decrypted): no edge
    /// will announce them, so `attach` does once the caller has finished attaching.
    var holdsBytesBeforeAttach: Bool { get }
    /// Ends what lies between the endpoint and its socket (TLS sends `close_notify`), just before
    /// the socket is closed. Called once.
    func closeTransport()
}

extension AttachedTunnelEndpoint {
    public var onClose: (() -> Void)? {
        get { attachment.onClose }
        set { attachment.onClose = newValue }
    }

    public var isClosed: Bool { attachment.closed }
    public var handler: (any TunnelEndpointHandler)? { attachment.handler }

    /// Asks the tunnel to end gracefully (the server is shutting down).
    public func requestEnd() {
        guard !attachment.closed else { return }
        if let handler = attachment.handler { handler.endpointEnded(self, graceful: true) } else { close() }
    }

    public func attach(_ handler: any TunnelEndpointHandler) {
        attachment.handler = handler
        guard !attachment.closed, !attachment.registered else { return }
        attachment.registered = loop.registerTunnel(fd, self, handler: handler)
        guard attachment.registered, holdsBytesBeforeAttach else { return }
        loop.scheduleTimer(afterNanoseconds: 0) { [weak self] in
            guard let self, !self.attachment.closed else { return }
            self.attachment.handler?.endpointReadable(self)
        }
    }

    public func close() {
        guard !attachment.closed else { return }
        attachment.closed = true
        attachment.handler = nil
        if attachment.registered { loop.deregister(fd) }
        closeTransport()
        Glibc.close(fd)
        let onClose = attachment.onClose
        attachment.onClose = nil
        onClose?()
    }
}
