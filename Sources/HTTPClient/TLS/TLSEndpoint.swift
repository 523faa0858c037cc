#if canImport(Glibc)
import Glibc
#endif
import EventLoops

/// A `wss://` upstream connection after `101 Switching Protocols`, as a tunnel endpoint: the
/// socket and TLS session the HTTP exchange ran on (`UpstreamConnection.detachForTunnel`), starting
/// with the bytes already decrypted behind the `101` head.
///
/// Registered with the loop only in `attach`, so the previous owner must have deregistered the fd.
final class TLSEndpoint: TunnelEndpoint, EventLoopSelectable {
    let fd: Int32
    let loop: EventLoop
    private let session: TLSSession
    private var leftover: [UInt8]
    private var leftoverOffset = 0
    private weak var handler: (any TunnelEndpointHandler)?
    private var closed = false
    private var registered = false
    /// A read needed the socket writable (a TLS 1.3 key update's answer), or a write needed it
    /// readable: that readiness is passed on as the other direction's too.
    private var readWaitsForWritable = false
    private var writeWaitsForReadable = false

    init(fd: Int32, loop: EventLoop, session: TLSSession, leftover: [UInt8]) {
        self.fd = fd
        self.loop = loop
        self.session = session
        self.leftover = leftover
    }

    func attach(_ handler: any TunnelEndpointHandler) {
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

    func receive(into buffer: UnsafeMutableRawBufferPointer) -> TunnelIO {
        if closed { return .closed }
        if leftoverOffset < leftover.count {
            let n = min(buffer.count, leftover.count - leftoverOffset)
            leftover.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + leftoverOffset, byteCount: n) }
            leftoverOffset += n
            if leftoverOffset == leftover.count { leftover = []; leftoverOffset = 0 }
            return .bytes(n)
        }
        switch session.read(into: buffer.baseAddress!, count: buffer.count) {
        case .done(let n): return .bytes(n)
        case .wantRead: return .wouldBlock
        case .wantWrite: readWaitsForWritable = true; return .wouldBlock
        case .closed, .failed: return .closed
        }
    }

    func send(_ bytes: UnsafeRawBufferPointer) -> TunnelIO {
        if closed { return .closed }
        if bytes.isEmpty { return .bytes(0) }
        switch session.write(bytes.baseAddress!, count: bytes.count) {
        case .done(let n): return .bytes(n)
        case .wantWrite: return .wouldBlock
        case .wantRead: writeWaitsForReadable = true; return .wouldBlock
        case .closed, .failed: return .closed
        }
    }

    /// TLS has no half-close the tunnel could rely on: the tunnel closes the whole connection.
    func shutdownOutput() -> Bool { false }

    func close() {
        guard !closed else { return }
        closed = true
        handler = nil
        if registered { loop.deregister(fd) }
        session.free(sendCloseNotify: true)
        Glibc.close(fd)
    }

    // MARK: EventLoopSelectable

    func socketReadable() {
        handler?.endpointReadable(self)
        if writeWaitsForReadable, !closed {
            writeWaitsForReadable = false
            handler?.endpointWritable(self)
        }
    }

    func socketWritable() {
        handler?.endpointWritable(self)
        if readWaitsForWritable, !closed {
            readWaitsForWritable = false
            handler?.endpointReadable(self)
        }
    }

    func socketHangup() {
        handler?.endpointReadable(self)
        if !closed { handler?.endpointEnded(self, graceful: false) }
    }
}
