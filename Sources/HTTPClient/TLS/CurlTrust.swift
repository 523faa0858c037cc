import CCurl
import EventLoops
import Synchronization

/// Which certificates every libcurl handle trusts, and how they are kept: the system CA bundle
/// (libcurl's built-in CA file, Debian's `/etc/ssl/certs/ca-certificates.crt`) and nothing else.
///
/// Debian's libcurl also has a built-in CA directory (`/etc/ssl/certs`). With a directory set,
/// libcurl never caches the certificate store, so every new TLS connection parsed the whole bundle
/// again: about 24 ms of CPU each, measured (bench/RESULTS.md, session 7), on every provider call and
/// every new `https://` upstream connection. With the bundle alone, a multi handle parses it once and
/// keeps the store (`CURLOPT_CA_CACHE_TIMEOUT`, libcurl ≥ 7.87, OpenSSL): a new connection costs
/// about 1 ms (0.8–1.0 ms per request in `bench/run`'s `/tls` row). The directory held the same
/// certificates (`update-ca-certificates` writes both).
enum CurlTrust {
    /// How long a parsed bundle is kept before the file is read again: a CA bundle updated on a
    /// running host is in use within the hour, without a restart.
    static let storeCacheSeconds = 3600

    /// For handles in a multi handle (`CurlMulti`): the bundle alone, cached by the multi handle.
    static func apply(to handle: UnsafeMutableRawPointer) -> CURLcode {
        let codes = [
            verify(handle),
            // NULL switches the built-in directory off; the built-in bundle stays.
            gatehouse_curl_easy_setopt_string(handle, CURLOPT_CAPATH, nil),
            gatehouse_curl_easy_setopt_long(handle, CURLOPT_CA_CACHE_TIMEOUT, storeCacheSeconds),
        ]
        return codes.first { $0 != CURLE_OK } ?? CURLE_OK
    }

    /// For a handle of its own (`CurlTunnel`: `curl_easy_perform`, whose cache would die with the
    /// handle): its connection verifies against `store`, the bundle parsed once for all of them.
    static func apply(to handle: UnsafeMutableRawPointer, sharing store: SharedCAStore) -> CURLcode {
        let code = verify(handle)
        return code == CURLE_OK ? gatehouse_curl_easy_share_store(handle, store.pointer) : code
    }

    private static func verify(_ handle: UnsafeMutableRawPointer) -> CURLcode {
        let peer = gatehouse_curl_easy_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1)
        return peer == CURLE_OK ? gatehouse_curl_easy_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2) : peer
    }
}

/// One reference to a parsed CA bundle (an OpenSSL `X509_STORE`), released with this value.
final class SharedCAStore: @unchecked Sendable {
    let pointer: OpaquePointer
    fileprivate init(retained pointer: OpaquePointer) { self.pointer = pointer }
    deinit { gatehouse_x509_store_free(pointer) }

    /// The bundle parsed at most `CurlTrust.storeCacheSeconds` ago, or nil when libcurl names no
    /// bundle or it cannot be read (the handshake then fails: nothing is trusted).
    static func current() -> SharedCAStore? {
        let now = EventLoop.monotonicNow()
        return cache.withLock { cached in
            if let (store, loadedAt) = cached, now &- loadedAt < UInt64(CurlTrust.storeCacheSeconds) * 1_000_000_000 {
                return store
            }
            guard let file = gatehouse_curl_default_ca_file(), let loaded = gatehouse_x509_store_load(file) else {
                cached = nil
                return nil
            }
            let store = SharedCAStore(retained: loaded)
            cached = (store, now)
            return store
        }
    }

    private static let cache = Mutex<(SharedCAStore, UInt64)?>(nil)
}
