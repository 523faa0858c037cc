#if canImport(Glibc)
import Glibc
#endif
import EventLoops

/// A TLS connection after `101 Switching Protocols`, as a tunnel endpoint: a `wss://` upstream
/// (`UpstreamConnection.detachForTunnel`) or a browser's WebSocket on the HTTPS listener. It
/// starts with the bytes already decrypted behind the handshake (`leftover`) and any its previous
/// owner had not sent yet (`unsent`, the end of a 101 head).
///
/// Registered with the loop only in `attach`, so the previous owner must have deregistered the fd.
public final class TLSEndpoint: ServerTunnelEndpoint, EventLoopSelectable {
    public let fd: Int32
    public let loop: EventLoop
    private let stream: TLSStream
    /// What must live as long as the stream (the client session its callbacks reach).
    private let keeping: AnyObject?
    private var takenOver: TakenOverBytes
    private weak var handler: (any TunnelEndpointHandler)?
    private var closed = false
    private var registered = false
    /// A read needed the socket writable (a TLS 1.3 key update's answer), or a write needed it
    /// readable: that readiness is passed on as the other direction's too.
    private var readWaitsForWritable = false
    private var writeWaitsForReadable = false
    /// Called once, when the endpoint closes (the server's connection count, for instance).
    public var onClose: (() -> Void)?

    public init(fd: Int32, loop: EventLoop, stream: TLSStream, keeping: AnyObject? = nil,
                leftover: [UInt8], unsent: [UInt8] = []) {
        self.fd = fd
        self.loop = loop
        self.stream = stream
        self.keeping = keeping
        takenOver = TakenOverBytes(leftover: leftover, unsent: unsent)
    }

    /// Asks the tunnel to end gracefully (the server is shutting down).
    public func requestEnd() {
        guard !closed else { return }
        if let handler { handler.endpointEnded(self, graceful: true) } else { close() }
    }

    public func attach(_ handler: any TunnelEndpointHandler) {
        self.handler = handler
        guard !closed, !registered else { return }
        registered = loop.registerTunnel(fd, self, handler: handler)
        guard registered else { return }
        // Bytes already taken from the socket (the leftover, or a record OpenSSL holds decrypted)
        // have no edge to announce them: say so once the caller has finished attaching.
        loop.scheduleTimer(afterNanoseconds: 0) { [weak self] in
            guard let self, !self.closed else { return }
            self.handler?.endpointReadable(self)
        }
    }

    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> TunnelIO {
        if closed { return .closed }
        if let n = takenOver.takeLeftover(into: buffer) { return .bytes(n) }
        switch stream.read(into: buffer.baseAddress!, count: buffer.count) {
        case .done(let n): return .bytes(n)
        case .wantRead: return .wouldBlock
        case .wantWrite: readWaitsForWritable = true; return .wouldBlock
        case .closed, .failed: return .closed
        }
    }

    public func send(_ bytes: UnsafeRawBufferPointer) -> TunnelIO {
        if closed { return .closed }
        // What the previous owner left unsent goes first.
        if let stopped = takenOver.flushUnsent(writeSome) { return stopped }
        if bytes.isEmpty { return .bytes(0) }
        return writeSome(bytes)
    }

    private func writeSome(_ bytes: UnsafeRawBufferPointer) -> TunnelIO {
        switch stream.write(bytes.baseAddress!, count: bytes.count) {
        case .done(let n): return .bytes(n)
        case .wantWrite: return .wouldBlock
        case .wantRead: writeWaitsForReadable = true; return .wouldBlock
        case .closed, .failed: return .closed
        }
    }

    /// TLS has no half-close the tunnel could rely on: the tunnel closes the whole connection.
    public func shutdownOutput() -> Bool { false }

    public func close() {
        guard !closed else { return }
        closed = true
        handler = nil
        if registered { loop.deregister(fd) }
        stream.free(sendCloseNotify: true)
        Glibc.close(fd)
        let onClose = self.onClose
        self.onClose = nil
        onClose?()
    }

    // MARK: EventLoopSelectable

    public func socketReadable() {
        handler?.endpointReadable(self)
        if writeWaitsForReadable, !closed {
            writeWaitsForReadable = false
            handler?.endpointWritable(self)
        }
    }

    public func socketWritable() {
        if takenOver.hasUnsent, case .closed = send(UnsafeRawBufferPointer(start: nil, count: 0)) {
            handler?.endpointEnded(self, graceful: false)
            return
        }
        handler?.endpointWritable(self)
        if readWaitsForWritable, !closed {
            readWaitsForWritable = false
            handler?.endpointReadable(self)
        }
    }

    public func socketHangup() {
        handler?.endpointReadable(self)
        if !closed { handler?.endpointEnded(self, graceful: false) }
    }
}
