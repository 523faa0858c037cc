@testable import HTTP1
import Testing
@testable import GatehouseCore

/// The event loops' own copies of the configured values (`LoopCopies`): equal to the originals in
/// every way that matters to a request, in storage only their loop touches.
@Suite("Per-loop copies of the configuration")
struct LoopCopiesTests {
    /// Where a string's bytes live (nil for a small string, which has no storage to share).
    private static func storage(_ text: String) -> UnsafeRawPointer? {
        var text = text
        return text.withUTF8 { $0.count > 15 ? UnsafeRawPointer($0.baseAddress) : nil }
    }

    @Test("a string's copy has the same text in storage of its own")
    func ownedCopy() {
        let long = String(repeating: "upstream-host-", count: 4)
        let copy = long.ownedCopy
        #expect(copy == long)
        #expect(Self.storage(copy) != nil && Self.storage(copy) != Self.storage(long))
        #expect("short".ownedCopy == "short")
    }

    @Test("a route table's copy routes every path as the original does, from storage of its own")
    func routeTable() throws {
        let (routes, errors) = UpstreamRoute.parseList(
            "/api=http://api.internal.example.com:9000/v1;auth=none,/v2/orders=https://orders.internal.example.com/o,/ws=http://127.0.0.1:9002")
        try #require(errors.isEmpty)
        let table = RouteTable(routes)
        let copy = table.loopCopy
        #expect(copy == table)
        for (original, copied) in zip(table.routes, copy.routes) {
            #expect(copied == original && copied.description == original.description)
            #expect(copied.host == original.host && copied.port == original.port && copied.auth == original.auth)
            if let storage = Self.storage(original.upstream.host) {
                #expect(Self.storage(copied.upstream.host) != storage, "the host's bytes are the copy's own")
            }
        }
        for path in ["/api", "/api/x?y", "/v2/orders/1", "/v2/order", "/ws/a", "/other", "/api/../x"] {
            let a = table.match(path: path[...]), b = copy.match(path: path[...])
            #expect(String(describing: a) == String(describing: b), "\(path)")
        }
    }

    @Test("the forwarding's copy adds and drops exactly the same fields")
    func forwarding() throws {
        let proxies = [try #require(CIDR("10.0.0.0/8")), try #require(CIDR("2001:db8::/32"))]
        let forwarding = ProxyForwarding(forwardedHost: "app.example.com:8443", forwardedProto: "https",
                                         trustedProxies: proxies, csrfHeader: "X-Requested-With-Gatehouse")
        let copy = forwarding.loopCopy
        #expect(copy == forwarding)
        #expect(copy.addedFields == forwarding.addedFields)
        let incoming: HTTPHeaders = ["Host": "evil", "Cookie": "a=b", "X-Real-IP": "1.2.3.4", "Accept": "*/*",
                                     "X-Requested-With-Gatehouse": "1", "X-Forwarded-For": "9.9.9.9"]
        for peer in ["10.1.2.3", "192.0.2.1", "2001:db8::1"] {
            #expect(copy.trusts(peerIP: peer) == forwarding.trusts(peerIP: peer))
            let a = ProxyHeaderPolicy.upstreamRequestFields(from: incoming, peerIP: peer, authorization: "Bearer t",
                                                            forwarding: forwarding, trace: .fresh())
            let b = ProxyHeaderPolicy.upstreamRequestFields(from: incoming, peerIP: peer, authorization: "Bearer t",
                                                            forwarding: copy, trace: .fresh())
            #expect(a.passed == b.passed && a.forwardedFor == b.forwardedFor, "\(peer)")
        }
    }
}
