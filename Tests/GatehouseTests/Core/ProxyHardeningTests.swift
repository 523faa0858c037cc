import HTTP1
import Testing
@testable import GatehouseCore

/// Security review, issue 10: which methods and forwarding headers cross the proxy.
@Suite("Proxy hardening: methods and forwarding headers")
struct ProxyHardeningTests {
    // MARK: Methods (item 2)

    @Test("CONNECT, TRACE and TRACK are not forwarded, in any letter case", .bug(id: 10, "security review, item 2"),
          arguments: ["CONNECT", "TRACE", "TRACK", "connect", "Trace", "track"])
    func refusedMethods(method: String) {
        #expect(!ProxyMethodPolicy.isForwardable(method))
    }

    @Test("every other method is forwarded, including extension methods of the same length",
          arguments: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "PROPFIND", "TRACES", "CONNEC",
                      "PURGE", "MKCOL", "CONNECX", "UNLOCK"])
    func forwardedMethods(method: String) {
        #expect(ProxyMethodPolicy.isForwardable(method))
    }

    @Test("the 405's Allow lists what an API route forwards, never a refused method")
    func allowValue() {
        let allowed = ProxyMethodPolicy.allowed.split(separator: ",").map { $0.trimmingASCIIWhitespace() }
        #expect(allowed.contains("GET") && allowed.contains("POST") && allowed.contains("OPTIONS"))
        #expect(allowed.allSatisfy { ProxyMethodPolicy.isForwardable(String($0)) })
    }

    // MARK: Forwarding headers (item 5)

    private static let trusted = [CIDR("10.0.0.0/8")!]

    private static func forwarding(_ publicURL: String) throws -> ProxyForwarding {
        ProxyForwarding(publicURL: try PublicURL(parsing: publicURL), trustedProxies: trusted, csrfHeader: "X-CSRF")
    }

    private static let forged: HTTPHeaders = [
        "Host": "evil.example:1234", "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https",
        "X-Forwarded-Port": "8443", "X-Real-IP": "198.51.100.7", "True-Client-IP": "198.51.100.8",
        "X-Forwarded-Prefix": "/admin", "X-Original-URL": "/admin/delete", "X-Rewrite-URL": "/admin/delete",
        "Forwarded": "for=198.51.100.9;host=evil.example", "X-Forwarded-For": "198.51.100.10", "Accept": "*/*",
    ]

    @Test("X-Forwarded-Host and -Proto come from GATEHOUSE_PUBLIC_URL (host[:port] as written), never the browser",
          .bug(id: 10, "security review, item 5"),
          arguments: [("https://app.example.com", "app.example.com", "https"),
                      ("http://127.0.0.1:8080", "127.0.0.1:8080", "http"),
                      ("https://App.Example.com:8443/", "app.example.com:8443", "https"),
                      ("http://[::1]:9000", "[::1]:9000", "http")])
    func forwardedHostFromPublicURL(publicURL: String, host: String, scheme: String) throws {
        let forwarding = try Self.forwarding(publicURL)
        #expect(forwarding.forwardedHost == host)
        #expect(forwarding.forwardedProto == scheme)
        for peer in ["203.0.113.9", "10.0.0.2"] {
            let out = ProxyHeaderPolicy.upstreamRequestHeaders(from: Self.forged, peerIP: peer, authorization: "Bearer AT",
                                                               forwarding: forwarding)
            #expect(out.values("X-Forwarded-Host") == [host])
            #expect(out.values("X-Forwarded-Proto") == [scheme])
        }
    }

    @Test("an untrusted browser's client and URL claims never reach the upstream", .bug(id: 10, "security review, item 5"))
    func untrustedClaimsStripped() throws {
        let out = ProxyHeaderPolicy.upstreamRequestHeaders(from: Self.forged, peerIP: "203.0.113.9", authorization: "Bearer AT",
                                                           forwarding: try Self.forwarding("https://app.example.com"))
        for name in ["X-Forwarded-Port", "X-Real-IP", "True-Client-IP", "X-Forwarded-Prefix", "X-Original-URL",
                     "X-Rewrite-URL", "Forwarded", "Host"] {
            #expect(!out.contains(name), "\(name) was forwarded")
        }
        #expect(out.values("X-Forwarded-For") == ["203.0.113.9"])
        #expect(out["Accept"] == "*/*")
    }

    @Test("a trusted proxy's claims pass unchanged; Host and scheme stay the gateway's own")
    func trustedClaimsKept() throws {
        let out = ProxyHeaderPolicy.upstreamRequestHeaders(from: Self.forged, peerIP: "10.0.0.2", authorization: "Bearer AT",
                                                           forwarding: try Self.forwarding("https://app.example.com"))
        for name in ["X-Forwarded-Port", "X-Real-IP", "True-Client-IP", "X-Forwarded-Prefix", "X-Original-URL",
                     "X-Rewrite-URL", "Forwarded"] {
            #expect(out.values(name) == Self.forged.values(name), "\(name)")
        }
        #expect(out.values("X-Forwarded-For") == ["198.51.100.10, 10.0.0.2"])
        #expect(out.values("X-Forwarded-Host") == ["app.example.com"])
        #expect(!out.contains("Host"))
    }
}
