import HTTP1
import Testing
@testable import GatehouseCore

/// SPEC "Routing and header names cannot be re-spelled": CGI, WSGI and Rack servers read `_` as
/// `-`, so `X_Forwarded_User: admin` reached an application as `X-Forwarded-User`.
@Suite("Proxy header policy: names with underscores")
struct UnderscoreHeaderTests {
    private func forwarded(_ incoming: HTTPHeaders, underscores: Bool, peer: String = "203.0.113.9") -> HTTPHeaders {
        let forwarding = ProxyForwarding(forwardedHost: "app.example.com", forwardedProto: "https",
                                         trustedProxies: [CIDR("10.0.0.0/8")!], csrfHeader: "X-CSRF",
                                         forwardsUnderscoreHeaders: underscores)
        return ProxyHeaderPolicy.upstreamRequestHeaders(from: incoming, peerIP: peer, authorization: "Bearer AT",
                                                        forwarding: forwarding)
    }

    @Test("every name with _ is dropped by default, from any peer", arguments: [
        "X_Forwarded_User", "Remote_User", "X_Forwarded_Email", "X_Forwarded_For", "X_Real_IP", "x_custom_thing",
        "_", "A_B",
    ])
    func droppedByDefault(name: String) {
        for peer in ["203.0.113.9", "10.0.0.2"] {
            let out = forwarded([name: "admin", "X-Custom": "kept"], underscores: false, peer: peer)
            #expect(!out.contains(name), "\(name) from \(peer)")
            #expect(out["X-Custom"] == "kept")
        }
    }

    @Test("forwarded when allowed, except identity and forwarding names in any spelling", arguments: [
        ("X_Forwarded_User", false), ("remote_user", false), ("X_FORWARDED_EMAIL", false), ("X_Forwarded_For", false),
        ("X_Real_IP", false), ("Gatehouse_Assertion", false), ("X_Forwarded-Groups", false), ("X_CSRF", false),
        ("X_Original_URL", false), ("DPoP", false), ("Cookie", false), ("x_custom_thing", true), ("my_header", true),
    ])
    func allowed(name: String, passes: Bool) {
        for peer in ["203.0.113.9", "10.0.0.2"] {
            let out = forwarded([name: "admin"], underscores: true, peer: peer)
            #expect(out.values(name).contains("admin") == passes, "\(name) from \(peer)")
        }
    }

    @Test("the browser's own DPoP proof never goes upstream")
    func dpopStripped() {
        let out = forwarded(["DPoP": "eyJ.forged.proof", "dpop": "x"], underscores: false)
        #expect(!out.contains("DPoP"))
    }
}
