#if canImport(Glibc)
import Glibc
#endif

/// A non-blocking socket as a tunnel endpoint: the browser's connection after `101 Switching
/// Protocols`, or a plain upstream connection. It starts with the bytes its previous owner had
/// already read past the handshake (`leftover`) and any it had not sent yet (`unsent`), so nothing
/// between the HTTP exchange and the tunnel is lost.
///
/// Registered with the loop only in `attach`, so the previous owner must have deregistered the fd.
public final class SocketEndpoint: AttachedTunnelEndpoint {
    public let fd: Int32
    public let loop: EventLoop
    private var takenOver: TakenOverBytes
    public var attachment = TunnelAttachment()

    public init(fd: Int32, loop: EventLoop, leftover: [UInt8] = [], unsent: [UInt8] = []) {
        self.fd = fd
        self.loop = loop
        takenOver = TakenOverBytes(leftover: leftover, unsent: unsent)
    }

    // MARK: AttachedTunnelEndpoint

    /// Bytes taken over from the previous owner are not in the socket.
    public var holdsBytesBeforeAttach: Bool { takenOver.hasLeftover }

    public func closeTransport() {}

    // MARK: TunnelEndpoint

    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> TunnelIO {
        if isClosed { return .closed }
        if let n = takenOver.takeLeftover(into: buffer) { return .bytes(n) }
        while true {
            let n = recv(fd, buffer.baseAddress!, buffer.count, 0)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .closed }
            let err = errno
            if err == EINTR { continue }
            return err == EAGAIN || err == EWOULDBLOCK ? .wouldBlock : .closed
        }
    }

    public func send(_ bytes: UnsafeRawBufferPointer) -> TunnelIO {
        if isClosed { return .closed }
        // What the previous owner left unsent (the end of the 101 head) goes first.
        if let stopped = takenOver.flushUnsent(sendSome) { return stopped }
        if bytes.isEmpty { return .bytes(0) }
        return sendSome(bytes)
    }

    /// True while bytes of the previous owner still wait to be sent.
    public var hasUnsent: Bool { takenOver.hasUnsent }

    private func sendSome(_ bytes: UnsafeRawBufferPointer) -> TunnelIO {
        while true {
            let n = Glibc.send(fd, bytes.baseAddress!, bytes.count, Int32(MSG_NOSIGNAL))
            if n > 0 { return .bytes(n) }
            let err = errno
            if n < 0 && err == EINTR { continue }
            if n < 0 && (err == EAGAIN || err == EWOULDBLOCK) { return .wouldBlock }
            return .closed
        }
    }

    public func shutdownOutput() -> Bool {
        guard !isClosed else { return false }
        return shutdown(fd, Int32(SHUT_WR)) == 0
    }

    // MARK: EventLoopSelectable

    public func socketReadable() { handler?.endpointReadable(self) }
    public func socketWritable() {
        // The previous owner's unsent bytes (the end of a 101 head, say) leave even when the tunnel
        // has nothing to send this way yet.
        if hasUnsent, case .closed = send(UnsafeRawBufferPointer(start: nil, count: 0)) {
            handler?.endpointEnded(self, graceful: false)
            return
        }
        handler?.endpointWritable(self)
    }
    public func socketHangup() {
        // Bytes may still wait before the hang-up: let the tunnel read them first.
        handler?.endpointReadable(self)
        if !isClosed { handler?.endpointEnded(self, graceful: false) }
    }
}
