import HTTP1
import Testing
@testable import GatehouseCore

private let trusted = [CIDR("10.0.0.0/8")!]

private let forwarding = ProxyForwarding(forwardedHost: "app.example.com", forwardedProto: "https",
                                         trustedProxies: trusted, csrfHeader: "X-CSRF")

private func upstream(_ incoming: HTTPHeaders, peer: String = "203.0.113.9") -> HTTPHeaders {
    ProxyHeaderPolicy.upstreamRequestHeaders(from: incoming, peerIP: peer, authorization: "Bearer AT",
                                             forwarding: forwarding)
}

@Suite("Proxy header policy (RFC 9110 §7.6.1)")
struct ProxyHeaderPolicyTests {
    @Test("strips hop-by-hop, credentials and the CSRF header", arguments: [
        "Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Transfer-Encoding", "Upgrade",
        "Proxy-Authorization", "Proxy-Authenticate", "Cookie", "Authorization", "X-CSRF", "x-csrf", "Host", "Forwarded",
        "Expect",
    ])
    func strips(name: String) {
        let out = upstream([name: "v", "Accept": "application/json"])
        #expect(out.values(name).allSatisfy { $0 != "v" })
        #expect(out["Accept"] == "application/json")
    }

    /// SPEC "Identity for your own APIs": a browser's copy of an identity header never reaches an
    /// upstream, from any peer (a trusted proxy's too: the gateway is the one that says who the user is).
    @Test("strips forged identity headers, from a trusted proxy too", arguments: [
        "X-Forwarded-User", "X-Forwarded-Email", "X-Forwarded-Preferred-Username", "X-Forwarded-Groups",
        "X-Forwarded-Access-Token", "X-Auth-Request-User", "X-Auth-Request-Email",
        "X-Auth-Request-Preferred-Username", "X-Auth-Request-Groups", "X-Auth-Request-Access-Token",
        "Remote-User", "X-Remote-User", "Gatehouse-Assertion", "x-forwarded-user", "REMOTE-USER",
    ])
    func stripsIdentityHeaders(name: String) {
        for peer in ["203.0.113.9", "10.0.0.2"] {
            let out = upstream([name: "admin", "Accept": "application/json"], peer: peer)
            #expect(!out.contains(name), "\(name) from \(peer)")
            #expect(out["Accept"] == "application/json")
        }
    }

    @Test("strips the fields named in Connection, but never Content-Length")
    func connectionNamed() {
        let out = upstream(["Connection": "keep-alive, X-Secret-Hop, Content-Length", "X-Secret-Hop": "1",
                            "Content-Length": "5", "X-Other": "2"])
        #expect(!out.contains("X-Secret-Hop"))
        #expect(!out.contains("Connection"))
        #expect(out["Content-Length"] == "5")
        #expect(out["X-Other"] == "2")
    }

    @Test("adds the bearer token and forwarding headers, replacing incoming ones")
    func adds() {
        let out = upstream(["Host": "evil.example", "Authorization": "Basic Zm9v", "X-Forwarded-Proto": "http",
                            "X-Forwarded-Host": "evil.example", "Cookie": "gatehouse=abc"])
        #expect(out.values("Authorization") == ["Bearer AT"])
        #expect(out.values("X-Forwarded-Proto") == ["https"])
        #expect(out.values("X-Forwarded-Host") == ["app.example.com"])
        #expect(out.values("X-Forwarded-For") == ["203.0.113.9"])
        #expect(!out.contains("Host"))
        #expect(!out.contains("Cookie"))
    }

    @Test("an untrusted peer's X-Forwarded-For is replaced")
    func untrustedXFF() {
        let out = upstream(["X-Forwarded-For": "1.2.3.4"], peer: "203.0.113.9")
        #expect(out.values("X-Forwarded-For") == ["203.0.113.9"])
    }

    @Test("a trusted proxy's X-Forwarded-For is kept and appended to")
    func trustedXFF() {
        let out = upstream(["X-Forwarded-For": "1.2.3.4, 5.6.7.8", "x-forwarded-for": "9.9.9.9"], peer: "10.0.0.2")
        #expect(out.values("X-Forwarded-For") == ["1.2.3.4, 5.6.7.8, 9.9.9.9, 10.0.0.2"])
    }

    @Test("a trusted proxy without X-Forwarded-For gives the peer alone")
    func trustedWithoutXFF() {
        #expect(upstream([:], peer: "10.0.0.2").values("X-Forwarded-For") == ["10.0.0.2"])
    }

    @Test("an IPv4-mapped peer is written as IPv4 and matched against IPv4 networks")
    func mappedPeer() {
        #expect(upstream(["X-Forwarded-For": "1.2.3.4"], peer: "::ffff:10.0.0.7").values("X-Forwarded-For") == ["1.2.3.4, 10.0.0.7"])
        #expect(upstream(["X-Forwarded-For": "1.2.3.4"], peer: "::ffff:8.8.8.8").values("X-Forwarded-For") == ["8.8.8.8"])
        #expect(upstream([:], peer: "2001:db8::1").values("X-Forwarded-For") == ["2001:db8::1"])
    }

    @Test("a request without Host still gets X-Forwarded-Host from GATEHOUSE_PUBLIC_URL")
    func noHost() {
        #expect(upstream([:]).values("X-Forwarded-Host") == ["app.example.com"])
    }

    @Test("end-to-end fields and their order are kept, duplicates too")
    func keepsOthers() {
        let out = upstream(["Accept": "a", "X-Custom": "1", "x-custom": "2", "Content-Type": "text/plain"])
        let kept = out.fields.filter { !["X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "Authorization", "traceparent"].contains($0.name) }
        #expect(kept.map(\.name) == ["Accept", "X-Custom", "x-custom", "Content-Type"])
    }

    @Test("downstream drops hop-by-hop, Set-Cookie and framing")
    func downstream() {
        let out = ProxyHeaderPolicy.downstreamResponseHeaders(from: [
            "Content-Type": "text/event-stream", "Set-Cookie": "up=1", "set-cookie": "up=2", "Transfer-Encoding": "chunked",
            "Content-Length": "10", "Connection": "close, X-Hop", "X-Hop": "1", "Keep-Alive": "timeout=5",
            "Cache-Control": "no-cache", "Proxy-Authenticate": "Basic", "Upgrade": "h2c", "Trailer": "X",
        ])
        #expect(out.fields.map(\.name) == ["Content-Type", "Cache-Control"])
    }

    /// The head the upstream client writes from the policy's fields, and the one it wrote from the
    /// policy's field list before (`headers:`), are the same bytes.
    private func bothHeads(_ incoming: HTTPHeaders, peer: String = "203.0.113.9", authorization: String? = "Bearer AT",
                           trace: TraceParent? = nil) -> (direct: [UInt8], listed: [UInt8]) {
        let fields = ProxyHeaderPolicy.upstreamRequestFields(from: incoming, peerIP: peer, authorization: authorization,
                                                             forwarding: forwarding, trace: trace ?? TraceParent.continuing(incoming))
        var direct: [UInt8] = [], listed: [UInt8] = []
        RequestHeadEncoder.encodeUpstreamRequest(method: "GET", target: "/api/x", hostName: "upstream", port: 8080,
                                                 fields: fields, contentLength: 3, chunked: false, into: &direct)
        RequestHeadEncoder.encodeUpstreamRequest(method: "GET", target: "/api/x", hostName: "upstream", port: 8080,
                                                 headers: fields.headers, contentLength: 3, chunked: false, into: &listed)
        return (direct, listed)
    }

    @Test("the upstream head written from the kept fields' bytes is the one written from the field list")
    func directHeadMatchesList() {
        let trace = TraceParent(traceID: TraceID(high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210),
                                parentID: 0x1111_2222_3333_4444, flags: 1)
        let incoming: HTTPHeaders = HTTPHeaders([
            ("Host", "evil.example"), ("Accept", "a"), ("Cookie", "s=1"), ("X-CSRF", "1"), ("Connection", "keep-alive, X-Drop"),
            ("X-Drop", "d"), ("Content-Length", "3"), ("X-Custom", "1"), ("x-custom", "2"), ("X-Forwarded-For", "1.2.3.4"),
            ("tracestate", "a=b"), ("X-Real-IP", "6.6.6.6"), ("Accept-Language", "de"),
        ])
        for peer in ["203.0.113.9", "10.0.0.2"] {
            let heads = bothHeads(incoming, peer: peer, trace: trace)
            #expect(heads.direct == heads.listed)
            let text = String(decoding: heads.direct, as: UTF8.self)
            #expect(text.hasPrefix("GET /api/x HTTP/1.1\r\nHost: upstream:8080\r\nAccept: a\r\nX-Custom: 1\r\nx-custom: 2\r\n"))
            #expect(text.hasSuffix("Authorization: Bearer AT\r\ntraceparent: 00-0123456789abcdeffedcba9876543210-1111222233334444-01\r\nContent-Length: 3\r\n\r\n"))
            #expect(!text.contains("evil") && !text.contains("Cookie") && !text.contains("X-CSRF") && !text.contains("X-Drop")
                    && !text.contains("tracestate"))
            #expect(text.contains("X-Real-IP") == (peer == "10.0.0.2"))
            #expect(text.contains(peer == "10.0.0.2" ? "X-Forwarded-For: 1.2.3.4, 10.0.0.2\r\n" : "X-Forwarded-For: 203.0.113.9\r\n"))
        }
    }

    @Test("a Host line written beforehand is the one written per request", arguments: [
        ("upstream", 8080 as Int?), ("upstream", nil), ("::1", 8443), ("10.0.0.1", nil), ("bad\r\nhost", 80),
    ])
    func hostLineMatches(host: String, port: Int?) {
        let fields = ForwardedRequestFields(passing: ["Accept": "a"])
        var written: [UInt8] = [], listed: [UInt8] = []
        RequestHeadEncoder.encodeUpstreamRequest(method: "GET", target: "/x", hostName: host, port: port,
                                                 hostLine: RequestHeadEncoder.hostLine(hostName: host, port: port),
                                                 fields: fields, contentLength: nil, chunked: false, into: &written)
        RequestHeadEncoder.encodeUpstreamRequest(method: "GET", target: "/x", hostName: host, port: port,
                                                 fields: fields, contentLength: nil, chunked: false, into: &listed)
        #expect(written == listed)
    }

    @Test("a head of more than 64 fields is filtered the same way (past the mask's reach)")
    func directHeadBeyondMask() {
        var pairs = (0..<70).map { ("X-Field-\($0)", "v\($0)") }
        pairs.insert(("Cookie", "s=1"), at: 3)
        pairs.append(("Authorization", "Basic forged"))
        pairs.append(("X-Late", "kept"))
        let heads = bothHeads(HTTPHeaders(pairs))
        #expect(heads.direct == heads.listed)
        let text = String(decoding: heads.direct, as: UTF8.self)
        #expect(text.contains("X-Field-69: v69\r\nX-Late: kept\r\n") && !text.contains("Cookie") && !text.contains("forged"))
        #expect(text.components(separatedBy: "X-Field-").count == 71)
    }

    @Test("values that cannot be written are dropped from the direct head as from the list's")
    func directHeadDropsUnsafe() {
        let received = TraceParent(traceID: TraceID(high: 1, low: 2), parentID: 3, flags: 1, received: "00-x\r\nInjected: 1")
        for authorization in ["Bearer ok", "Bearer a\r\nX-Evil: 1", "Bearer \u{0}"] {
            let heads = bothHeads(["Accept": "a"], authorization: authorization, trace: received)
            #expect(heads.direct == heads.listed)
            let text = String(decoding: heads.direct, as: UTF8.self)
            #expect(!text.contains("Injected") && !text.contains("X-Evil") && !text.contains("traceparent"))
            #expect(text.contains("Authorization") == (authorization == "Bearer ok"))
        }
    }
}
