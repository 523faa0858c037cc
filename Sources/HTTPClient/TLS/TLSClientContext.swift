import COpenSSL
#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import Synchronization

/// The gateway's one OpenSSL client context: every `https://` upstream connection, provider call
/// and `wss://` tunnel verifies its server against the system CA bundle parsed here once, not once
/// per connection (each parse costs about 24 ms of CPU; bench/RESULTS.md, the entry of 6669abe).
///
/// - Trusted: the PEM bundle named by `SSL_CERT_FILE`, else Debian's
///   `/etc/ssl/certs/ca-certificates.crt` (what `update-ca-certificates` writes), and nothing else.
///   A bundle that cannot be read fails every handshake: nothing unverified is ever accepted.
/// - TLS 1.2 or newer; the certificate must match the host name (no partial wildcards) or the IP
///   address; SNI for names; ALPN offers `http/1.1` only; no renegotiation, no compression.
/// - The context is rebuilt when it is an hour old, so an updated bundle is used without a restart;
///   connections made before keep the context they were made with.
/// - Sessions are resumed per server (`TLSSessionCache`), never across a bundle change.
public final class TLSClientContext: @unchecked Sendable {
    let pointer: OpaquePointer
    /// Sessions verified with this context's bundle, to resume (`TLSSessionCache`).
    let sessions = TLSSessionCache()

    private init(pointer: OpaquePointer) {
        self.pointer = pointer
        gatehouse_tls_keep_client_sessions(pointer, keepNewSession)
    }
    deinit { SSL_CTX_free(pointer) }

    /// How long a parsed bundle is used before the file is read again.
    public static let bundleLifetimeSeconds: UInt64 = 3600

    /// The bundle a context is built from.
    public static var bundlePath: String {
        if let raw = getenv("SSL_CERT_FILE"), raw.pointee != 0 { return String(cString: raw) }
        return "/etc/ssl/certs/ca-certificates.crt"
    }

    /// The context in use (built now when there is none or it is older than `bundleLifetimeSeconds`).
    static func current() throws(UpstreamError) -> TLSClientContext {
        let now = EventLoop.monotonicNow()
        let context: TLSClientContext? = cache.withLock { cached in
            if let (context, builtAt) = cached, now &- builtAt < bundleLifetimeSeconds * 1_000_000_000 {
                return context
            }
            guard let built = gatehouse_tls_client_context(bundlePath) else {
                cached = nil
                return nil
            }
            let context = TLSClientContext(pointer: built)
            cached = (context, now)
            return context
        }
        guard let context else { throw .connectFailed("TLS: the CA bundle \(bundlePath) could not be read") }
        return context
    }

    private static let cache = Mutex<(TLSClientContext, UInt64)?>(nil)
}

/// OpenSSL's new-session callback: the session goes to the cache of the connection's context, under
/// the connection's server. Runs inside the connection's own `SSL_connect`/`SSL_read`, on its loop,
/// while its `TLSSession` (the owner) is alive.
private func keepNewSession(_ ssl: OpaquePointer?, _ session: OpaquePointer?) -> Int32 {
    guard let ssl, let session, let owner = gatehouse_tls_owner(ssl) else { return 0 }
    let connection = Unmanaged<TLSSession>.fromOpaque(owner).takeUnretainedValue()
    connection.context.sessions.keep(session, for: connection.server)
    return 1
}
