import COpenSSL

/// What one step of a TLS connection did.
public enum TLSProgress: Equatable, Sendable {
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

/// The TLS layer of one connection on a non-blocking socket (an OpenSSL `SSL`, client or server
/// side), confined to the event loop that owns the socket. The socket itself stays the owner's:
/// `free` (or the last reference) releases only the TLS state.
///
/// With edge-triggered readiness a reader must go on until `.wantRead`: OpenSSL reads the socket
/// one record at a time, so bytes may wait in the kernel after a read that returned data.
public final class TLSStream {
    let ssl: OpaquePointer
    private var freed = false

    /// Takes ownership of `ssl`, already bound to its socket and in connect or accept state.
    public init(ssl: OpaquePointer) {
        self.ssl = ssl
    }

    deinit { free(sendCloseNotify: false) }

    /// The raw connection, for side-specific set-up (the client's session offer, its owner).
    public var pointer: OpaquePointer { ssl }

    /// One step of the handshake; `.done(0)` once it is complete.
    public func handshake() -> TLSProgress {
        let status = gatehouse_tls_handshake(ssl)
        return status == Int32(GATEHOUSE_TLS_OK.rawValue) ? .done(0) : progress(status, during: "handshake")
    }

    public func read(into buffer: UnsafeMutableRawPointer, count: Int) -> TLSProgress {
        let n = gatehouse_tls_read(ssl, buffer, count)
        return n > 0 ? .done(n) : progress(Int32(-n), during: "read")
    }

    public func write(_ bytes: UnsafeRawPointer, count: Int) -> TLSProgress {
        let n = gatehouse_tls_write(ssl, bytes, count)
        return n > 0 ? .done(n) : progress(Int32(-n), during: "write")
    }

    /// Whether the finished handshake resumed a session.
    public var resumed: Bool { gatehouse_tls_resumed(ssl) == 1 }

    /// Whether the handshake chose ALPN `acme-tls/1`: an ACME validator, which only looks at the
    /// certificate (RFC 8737); the connection is closed once the handshake is done.
    public var isACMEChallenge: Bool { gatehouse_tls_is_acme_challenge(ssl) == 1 }

    /// Plaintext OpenSSL has decrypted and not yet handed over.
    public var hasBufferedBytes: Bool { SSL_pending(ssl) > 0 }

    /// Whether an idle connection can still be used: records that carry no data (a TLS 1.3 session
    /// ticket) are taken in; data, a close or a failure mean it cannot.
    public func idleConnectionStillUsable() -> Bool {
        let n = gatehouse_tls_peek(ssl)
        return n == -Int(GATEHOUSE_TLS_WANT_READ.rawValue) || n == -Int(GATEHOUSE_TLS_WANT_WRITE.rawValue)
    }

    /// Sends close_notify now if the socket takes it (never waits); the connection stays usable for
    /// reading what the peer still sends.
    public func sendCloseNotify() {
        gatehouse_tls_close_notify(ssl)
    }

    /// Releases the TLS state, first sending close_notify if asked and the socket takes it at once.
    public func free(sendCloseNotify: Bool) {
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
