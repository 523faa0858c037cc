import COpenSSL
#if canImport(Glibc)
import Glibc
#endif
import EventLoops

/// What one step of a TLS connection did.
enum TLSProgress: Equatable {
    /// This many plaintext bytes moved (> 0), or the handshake finished (0).
    case done(Int)
    /// Nothing now: call again once the socket is readable.
    case wantRead
    /// Nothing now: call again once the socket is writable.
    case wantWrite
    /// The peer closed the connection (close_notify, or EOF without one).
    case closed
    /// The handshake or a record failed; the reason is for the operator's log.
    case failed(String)
}

/// The TLS layer of one client connection on a non-blocking socket (OpenSSL `SSL`), confined to
/// the event loop that owns the socket. The socket itself stays the owner's: `free` releases only
/// the TLS state.
///
/// With edge-triggered readiness a reader must go on until `.wantRead`: OpenSSL reads the socket
/// one record at a time, so bytes may wait in the kernel after a read that returned data.
final class TLSSession {
    private let ssl: OpaquePointer
    /// Held so the context outlives every connection made with it (OpenSSL counts it too).
    let context: TLSClientContext
    /// `host:port`: the server whose sessions this connection may resume and keeps.
    let server: String
    private var freed = false

    /// Starts a client connection for `host` (a name or an IP literal) and `port` on the connected
    /// socket `fd`, offering the session kept for that server if there is one.
    init(fd: Int32, host: String, port: Int, context: TLSClientContext) throws(UpstreamError) {
        let isIP = SocketAddress(ip: host, port: 0) != nil
        guard let ssl = gatehouse_tls_client_new(context.pointer, fd, host, isIP ? 1 : 0) else {
            throw .connectFailed("TLS: cannot set up a connection for \(host)")
        }
        self.ssl = ssl
        self.context = context
        server = host + ":" + String(port)
        // Unretained: OpenSSL calls back only from this object's own calls.
        gatehouse_tls_set_owner(ssl, Unmanaged.passUnretained(self).toOpaque())
        if let kept = context.sessions.resumable(for: server) {
            // OpenSSL takes its own reference; a session the server no longer knows means a full handshake.
            _ = SSL_set_session(ssl, kept.pointer)
        }
    }

    deinit { free(sendCloseNotify: false) }

    /// One step of the handshake; `.done(0)` once the server is verified.
    func handshake() -> TLSProgress {
        let status = gatehouse_tls_connect(ssl)
        if status == Int32(GATEHOUSE_TLS_OK.rawValue) {
            guard gatehouse_tls_alpn_is_http11_or_none(ssl) == 1 else {
                return .failed("TLS: the server chose an application protocol other than http/1.1")
            }
            return .done(0)
        }
        return progress(status, during: "handshake")
    }

    func read(into buffer: UnsafeMutableRawPointer, count: Int) -> TLSProgress {
        let n = gatehouse_tls_read(ssl, buffer, count)
        return n > 0 ? .done(n) : progress(Int32(-n), during: "read")
    }

    func write(_ bytes: UnsafeRawPointer, count: Int) -> TLSProgress {
        let n = gatehouse_tls_write(ssl, bytes, count)
        return n > 0 ? .done(n) : progress(Int32(-n), during: "write")
    }

    /// Whether the finished handshake resumed a kept session.
    var resumed: Bool { gatehouse_tls_resumed(ssl) == 1 }

    /// Plaintext OpenSSL has decrypted and not yet handed over.
    var hasBufferedBytes: Bool { SSL_pending(ssl) > 0 }

    /// Whether an idle connection can still be used: records that carry no data (a TLS 1.3 session
    /// ticket) are taken in; data, a close or a failure mean it cannot.
    func idleConnectionStillUsable() -> Bool {
        let n = gatehouse_tls_peek(ssl)
        return n == -Int(GATEHOUSE_TLS_WANT_READ.rawValue) || n == -Int(GATEHOUSE_TLS_WANT_WRITE.rawValue)
    }

    /// Releases the TLS state, first sending close_notify if asked and the socket takes it at once.
    func free(sendCloseNotify: Bool) {
        guard !freed else { return }
        freed = true
        gatehouse_tls_set_owner(ssl, nil)
        gatehouse_tls_free(ssl, sendCloseNotify ? 1 : 0)
    }

    private func progress(_ status: Int32, during step: String) -> TLSProgress {
        switch UInt32(status) {
        case GATEHOUSE_TLS_WANT_READ.rawValue: return .wantRead
        case GATEHOUSE_TLS_WANT_WRITE.rawValue: return .wantWrite
        case GATEHOUSE_TLS_CLOSED.rawValue: return .closed
        default:
            var reason = [CChar](repeating: 0, count: 256)
            gatehouse_tls_failure(ssl, &reason, reason.count)
            return .failed("TLS \(step): " + String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }
}
