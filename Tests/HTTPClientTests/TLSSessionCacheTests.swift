import COpenSSL
@testable import HTTPClient
import Testing

/// `TLSSessionCache`: which kept session a new connection may offer.
@Suite("TLSSessionCache: sessions resumed per server")
struct TLSSessionCacheTests {
    /// A resumable session of `version` (a session id is what makes it resumable).
    static func session(version: Int32, id: UInt8) -> OpaquePointer {
        let session = SSL_SESSION_new()!
        let bytes = [UInt8](repeating: id, count: 32)
        _ = SSL_SESSION_set1_id(session, bytes, 32)
        _ = SSL_SESSION_set_protocol_version(session, version)
        return session
    }

    @Test("A session is offered only to the server it was kept for")
    func perServer() throws {
        let cache = TLSSessionCache()
        let kept = Self.session(version: TLS1_2_VERSION, id: 1)
        cache.keep(kept, for: "api.example.com:443")
        #expect(cache.resumable(for: "api.example.com:8443") == nil)
        #expect(cache.resumable(for: "other.example.com:443") == nil)
        #expect(cache.resumable(for: "api.example.com:443")?.pointer == kept)
    }

    @Test("A TLS 1.2 session stays for later connections; a TLS 1.3 ticket is offered once")
    func singleUseTickets() {
        let cache = TLSSessionCache()
        cache.keep(Self.session(version: TLS1_2_VERSION, id: 1), for: "a:443")
        cache.keep(Self.session(version: TLS1_3_VERSION, id: 2), for: "b:443")
        #expect(cache.resumable(for: "a:443") != nil)
        #expect(cache.resumable(for: "a:443") != nil)
        #expect(cache.resumable(for: "b:443") != nil)
        #expect(cache.resumable(for: "b:443") == nil)
    }

    @Test("A newer session replaces the kept one; one that cannot be resumed is not kept")
    func replacement() {
        let cache = TLSSessionCache()
        let first = Self.session(version: TLS1_2_VERSION, id: 1)
        let second = Self.session(version: TLS1_2_VERSION, id: 2)
        cache.keep(first, for: "a:443")
        cache.keep(second, for: "a:443")
        #expect(cache.resumable(for: "a:443")?.pointer == second)
        cache.keep(SSL_SESSION_new()!, for: "c:443")
        #expect(cache.resumable(for: "c:443") == nil)
        #expect(cache.count == 1)
    }

    @Test("The cache holds at most `capacity` servers")
    func bounded() {
        let cache = TLSSessionCache()
        for index in 0..<(TLSSessionCache.capacity + 10) {
            cache.keep(Self.session(version: TLS1_2_VERSION, id: UInt8(truncatingIfNeeded: index)), for: "h\(index):443")
        }
        #expect(cache.count <= TLSSessionCache.capacity)
        #expect(cache.resumable(for: "h\(TLSSessionCache.capacity + 9):443") != nil)
    }
}
