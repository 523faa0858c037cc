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
public final class TLSEndpoint: AttachedTunnelEndpoint {
    public let fd: Int32
    public let loop: EventLoop
    private let stream: TLSStream
    /// What must live as long as the stream (the client session its callbacks reach).
    private let keeping: AnyObject?
    private var takenOver: TakenOverBytes
    public var attachment = TunnelAttachment()
    /// A read needed the socket writable (a TLS 1.3 key update's answer), or a write needed it
    /// readable: that readiness is passed on as the other direction's too.
    private var readWaitsForWritable = false
    private var writeWaitsForReadable = false

    public init(fd: Int32, loop: EventLoop, stream: TLSStream, keeping: AnyObject? = nil,
                leftover: [UInt8], unsent: [UInt8] = []) {
        self.fd = fd
        self.loop = loop
        self.stream = stream
        self.keeping = keeping
        takenOver = TakenOverBytes(leftover: leftover, unsent: unsent)
    }

    // MARK: AttachedTunnelEndpoint

    /// Bytes already taken from the socket (the leftover, or a record OpenSSL holds decrypted)
    /// have no edge to announce them: always announced once attached.
    public var holdsBytesBeforeAttach: Bool { true }

    public func closeTransport() {
        stream.free(sendCloseNotify: true)
    }

    // MARK: TunnelEndpoint

    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> TunnelIO {
        if isClosed { return .closed }
        if let n = takenOver.takeLeftover(into: buffer) { return .bytes(n) }
        switch stream.read(into: buffer.baseAddress!, count: buffer.count) {
        case .done(let n): return .bytes(n)
        case .wantRead: return .wouldBlock
        case .wantWrite: readWaitsForWritable = true; return .wouldBlock
        case .closed, .failed: return .closed
        }
    }

    public func send(_ bytes: UnsafeRawBufferPointer) -> TunnelIO {
        if isClosed { return .closed }
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

    // MARK: EventLoopSelectable

    public func socketReadable() {
        handler?.endpointReadable(self)
        if writeWaitsForReadable, !isClosed {
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
        if readWaitsForWritable, !isClosed {
            readWaitsForWritable = false
            handler?.endpointReadable(self)
        }
    }

    public func socketHangup() {
        handler?.endpointReadable(self)
        if !isClosed { handler?.endpointEnded(self, graceful: false) }
    }
}
