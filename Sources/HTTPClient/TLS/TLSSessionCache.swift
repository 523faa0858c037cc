import COpenSSL
import Synchronization

/// TLS sessions to resume, one per server (host name or address, and port), so that a new
/// connection to an upstream or provider that closes its connections costs an abbreviated
/// handshake instead of a full one: no certificate chain to send, parse and verify again (nginx
/// does the same by default, `proxy_ssl_session_reuse`).
///
/// - A session is offered only to the host and port it was verified for (the key), and it lives in
///   the `TLSClientContext` whose CA bundle verified it: when the bundle is read again (hourly),
///   sessions verified against the old one are dropped with it.
/// - TLS 1.3 tickets are used once (RFC 8446 §C.4: reuse would let an observer link connections);
///   each resumed connection brings new ones. A TLS 1.2 session stays until a newer one replaces it.
/// - At most `capacity` servers are kept; past that the cache starts over (the keys are the few
///   configured upstreams and the provider, so this bounds only a misbehaving configuration).
final class TLSSessionCache: Sendable {
    static let capacity = 256

    private let sessions = Mutex<[String: KeptTLSSession]>([:])

    /// Keeps `session` (taking OpenSSL's reference) as the one to resume for `key`.
    func keep(_ session: OpaquePointer, for key: String) {
        guard SSL_SESSION_is_resumable(session) == 1 else {
            SSL_SESSION_free(session)
            return
        }
        let kept = KeptTLSSession(session)
        // The replaced session (if any) is freed outside the lock, when `previous` goes.
        let previous: KeptTLSSession? = sessions.withLock { sessions in
            if sessions.count >= Self.capacity && sessions[key] == nil { sessions.removeAll() }
            return sessions.updateValue(kept, forKey: key)
        }
        _ = previous
    }

    /// The session to offer on a new connection to `key`, if any; a TLS 1.3 one leaves the cache.
    func resumable(for key: String) -> KeptTLSSession? {
        sessions.withLock { sessions in
            guard let kept = sessions[key] else { return nil }
            if SSL_SESSION_get_protocol_version(kept.pointer) >= TLS1_3_VERSION { sessions[key] = nil }
            return kept
        }
    }

    /// How many servers have a session kept (tests).
    var count: Int { sessions.withLock { $0.count } }
}

/// One OpenSSL session reference, released with the value.
final class KeptTLSSession: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { SSL_SESSION_free(pointer) }
}
