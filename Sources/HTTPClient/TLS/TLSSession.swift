import COpenSSL
#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import TLSTransport

/// The TLS layer of one client connection (`TLSStream`), with what the client side adds: the
/// server's name for SNI and verification, the session offered for resumption, and the context
/// whose session cache keeps what the server sends.
final class TLSSession {
    let stream: TLSStream
    /// Held so the context outlives every connection made with it (OpenSSL counts it too).
    let context: TLSClientContext
    /// `host:port`: the server whose sessions this connection may resume and keeps.
    let server: String

    /// Starts a client connection for `host` (a name or an IP literal) and `port` on the connected
    /// socket `fd`, offering the session kept for that server if there is one.
    init(fd: Int32, host: String, port: Int, context: TLSClientContext) throws(UpstreamError) {
        let isIP = SocketAddress(ip: host, port: 0) != nil
        guard let ssl = gatehouse_tls_client_new(context.pointer, fd, host, isIP ? 1 : 0) else {
            throw .connectFailed("TLS: cannot set up a connection for \(host)")
        }
        stream = TLSStream(ssl: ssl)
        self.context = context
        server = host + ":" + String(port)
        // Unretained: OpenSSL calls back only from this object's own calls, and whoever holds the
        // stream holds this too (`TLSEndpoint`'s `keeping`).
        gatehouse_tls_set_owner(ssl, Unmanaged.passUnretained(self).toOpaque())
        if let kept = context.sessions.resumable(for: server) {
            // OpenSSL takes its own reference; a session the server no longer knows means a full handshake.
            _ = SSL_set_session(ssl, kept.pointer)
        }
    }

    /// One step of the handshake; `.done(0)` once the server is verified.
    func handshake() -> TLSProgress {
        let step = stream.handshake()
        if step == .done(0), gatehouse_tls_alpn_is_http11_or_none(stream.pointer) != 1 {
            return .failed("TLS: the server chose an application protocol other than http/1.1")
        }
        return step
    }

    @inline(__always)
    func read(into buffer: UnsafeMutableRawPointer, count: Int) -> TLSProgress { stream.read(into: buffer, count: count) }

    @inline(__always)
    func write(_ bytes: UnsafeRawPointer, count: Int) -> TLSProgress { stream.write(bytes, count: count) }

    var resumed: Bool { stream.resumed }
    var hasBufferedBytes: Bool { stream.hasBufferedBytes }
    func idleConnectionStillUsable() -> Bool { stream.idleConnectionStillUsable() }
    func free(sendCloseNotify: Bool) { stream.free(sendCloseNotify: sendCloseNotify) }
}
