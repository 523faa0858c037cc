@testable import HTTPClient
import HTTP1
import Testing

/// `FetchTarget`: the provider-call URLs the gateway's own client accepts (libcurl's URL parser did
/// this before), and `Host` as sent for each scheme.
@Suite("FetchTarget: absolute http(s) URLs for provider calls")
struct FetchTargetTests {
    @Test("Scheme, host, port and origin-form target", arguments: [
        ("https://login.example.com/oauth/token", true, "login.example.com", 443, "/oauth/token"),
        ("HTTPS://Login.Example.COM", true, "login.example.com", 443, "/"),
        ("http://127.0.0.1:8081/jwks?kid=a&b=%20", false, "127.0.0.1", 8081, "/jwks?kid=a&b=%20"),
        ("https://idp.example:8443?x=1", true, "idp.example", 8443, "/?x=1"),
        ("https://[::1]:9443/token", true, "::1", 9443, "/token"),
        ("https://[2001:DB8::1]/", true, "2001:db8::1", 443, "/"),
        ("http://example.com:/a#fragment", false, "example.com", 80, "/a"),
        ("https://tenant_1.auth0.example/userinfo", true, "tenant_1.auth0.example", 443, "/userinfo"),
    ])
    func parsed(url: String, tls: Bool, host: String, port: Int, path: String) throws {
        let target = try #require(FetchTarget(url))
        #expect(target.tls == tls)
        #expect(target.host == host)
        #expect(target.port == port)
        #expect(target.path == path)
    }

    @Test("Refused without a request", arguments: [
        "", "file:///etc/passwd", "ftp://example.com/", "https:/example.com", "https://", "https:///path",
        "https://user:secret@example.com/", "https://@example.com/", "https://example.com:0/", "https://example.com:65536/",
        "https://example.com:8o/", "https://example.com:123456/", "https://[::1/", "https://[127.0.0.1]/", "https://[::1]x/",
        "https://exa mple.com/", "https://example.com/a b", "https://example.com/\r\nX: y", "https://exämple.com/",
        "https://example.com\u{7F}/", "https://ex%41mple.com/", "javascript://example.com/%0aalert(1)",
    ])
    func refused(url: String) {
        #expect(FetchTarget(url) == nil, "\(url)")
    }

    @Test("Host leaves out the scheme's own port only")
    func hostField() {
        let request = UpstreamRequest(host: "idp.example", port: 443, method: "GET", target: "/", headers: [:])
        #expect(request.hostField(defaultPort: 443) == "idp.example")
        #expect(request.hostField(defaultPort: 80) == "idp.example:443")
        let plain = UpstreamRequest(host: "::1", port: 80, method: "GET", target: "/", headers: [:])
        #expect(plain.hostField(defaultPort: 80) == "[::1]")
        #expect(plain.hostField(defaultPort: 443) == "[::1]:80")
        for (port, text) in [(8, "a:8"), (10, "a:10"), (8080, "a:8080"), (65535, "a:65535")] {
            #expect(UpstreamRequest(host: "a", port: port, method: "GET", target: "/", headers: [:]).hostField() == text)
        }
    }

    @Test("The head's Host line, written without building the String, is hostField's value")
    func hostLine() {
        for host in ["idp.example", "::1", "127.0.0.1", "a"] {
            for port in [1, 80, 443, 8080, 65535] {
                for defaultPort in [80, 443] {
                    let request = UpstreamRequest(host: host, port: port, method: "GET", target: "/", headers: ["Host": "x"])
                    let head = String(decoding: request.encodedHead(bodyFraming: nil, defaultPort: defaultPort), as: UTF8.self)
                    #expect(head == "GET / HTTP/1.1\r\nHost: \(request.hostField(defaultPort: defaultPort))\r\n\r\n", "\(head)")
                }
            }
        }
    }
}
