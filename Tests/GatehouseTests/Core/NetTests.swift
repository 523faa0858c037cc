import Testing
@testable import GatehouseCore
import GatehouseEncoding

@Suite("CIDR")
struct CIDRTests {
    @Test("contains addresses inside the network", arguments: [
        ("10.0.0.0/8", "10.1.2.3"), ("10.0.0.0/8", "10.255.255.255"), ("192.168.1.0/24", "192.168.1.77"),
        ("127.0.0.1", "127.0.0.1"), ("0.0.0.0/0", "8.8.8.8"), ("::1/128", "::1"), ("::1", "::1"),
        ("fd00::/8", "fd12:3456::1"), ("::/0", "2001:db8::1"), ("10.0.0.0/8", "::ffff:10.0.0.1"),
        ("2001:db8::/32", "[2001:db8::5]"), ("10.1.2.3/8", "10.9.9.9"), ("172.16.0.0/12", "172.31.255.1"),
    ])
    func contains(cidr: String, ip: String) throws {
        let network = try #require(CIDR(cidr))
        #expect(network.contains(ip: ip))
    }

    @Test("does not contain addresses outside", arguments: [
        ("10.0.0.0/8", "11.0.0.1"), ("192.168.1.0/24", "192.168.2.1"), ("127.0.0.1", "127.0.0.2"),
        ("::1/128", "::2"), ("10.0.0.0/8", "::1"), ("::/0", "10.0.0.1"), ("fd00::/8", "fe80::1"),
        ("10.0.0.0/8", "not-an-ip"), ("10.0.0.0/8", ""), ("10.0.0.0/8", "10.0.0.1:80"), ("172.16.0.0/12", "172.32.0.1"),
        ("10.0.0.0/8", "010.0.0.1"), ("::1/128", "::1%lo"),
    ])
    func doesNotContain(cidr: String, ip: String) throws {
        let network = try #require(CIDR(cidr))
        #expect(!network.contains(ip: ip))
    }

    @Test("refuses malformed networks", arguments: [
        "", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/-1", "10.0.0/8", "10.0.0.256", "example.com",
        "10.0.0.0/8/8", "::1/1x", "10.0.0.0/ 8", " 10.0.0.0/8", "10.0.0.0/0008",
    ])
    func refuses(text: String) {
        #expect(CIDR(text) == nil)
    }

    @Test("normalizes host bits and prints canonically")
    func description() throws {
        #expect(try #require(CIDR("10.1.2.3/8")).description == "10.0.0.0/8")
        #expect(try #require(CIDR("192.168.1.1")).description == "192.168.1.1/32")
        #expect(try #require(CIDR("::1")).prefixLength == 128)
    }
}

@Suite("AbsoluteURL")
struct AbsoluteURLTests {
    @Test("parses the parts")
    func parts() throws {
        let url = try AbsoluteURL(parsing: "HTTPS://IdP.Example.com:8443/realms/a?x=1#f")
        #expect(url.scheme == "https")
        #expect(url.host == "idp.example.com")
        #expect(url.port == 8443)
        #expect(url.path == "/realms/a")
        #expect(url.query == "x=1")
        #expect(url.fragment == "f")
        #expect(url.origin == "https://idp.example.com:8443")
    }

    @Test("default ports are left out of the origin", arguments: [
        ("http://h:80", "http://h"), ("https://h:443/", "https://h"), ("http://h:443", "http://h:443"),
        ("http://[::1]:8080", "http://[::1]:8080"),
    ])
    func origin(text: String, origin: String) throws {
        #expect(try AbsoluteURL(parsing: text).origin == origin)
    }

    @Test("loopback hosts", arguments: [
        ("http://localhost:1", true), ("http://127.0.0.1", true), ("http://127.8.9.10", true), ("http://[::1]", true),
        ("http://128.0.0.1", false), ("http://localhost.evil.com", false), ("http://[::2]", false),
        ("http://127.0.0.1.nip.io", false),
    ])
    func loopback(text: String, loopback: Bool) throws {
        #expect(try AbsoluteURL(parsing: text).isLoopbackHost == loopback)
    }

    @Test("refuses malformed URLs", arguments: [
        "", "example.com", "//example.com", "ftp://example.com", "http://", "http://:80", "http://h:0", "http://h:65536",
        "http://h:", "http://h:8a", "http://exa mple.com", "http://[::1", "http://[zz]/", "http://h/%zz", "http://ex\u{e4}mple.com",
        "http://a..b", "javascript://x", "http://h/\n",
    ])
    func refuses(text: String) {
        #expect(throws: AbsoluteURL.ParseError.self) { try AbsoluteURL(parsing: text) }
    }

    @Test("notices user information")
    func userInfo() throws {
        #expect(try AbsoluteURL(parsing: "https://user:pw@h/").hasUserInfo)
    }
}

@Suite("Listen address")
struct ListenAddressTests {
    @Test("accepts IP literals and ports", arguments: [
        ("0.0.0.0:8080", "0.0.0.0", 8080), ("[::]:8080", "::", 8080), ("127.0.0.1:0", "127.0.0.1", 0),
        ("[::1]:443", "::1", 443), ("localhost:9000", "127.0.0.1", 9000),
    ])
    func accepts(text: String, host: String, port: Int) throws {
        let listen = try ListenAddress(parsing: text)
        #expect(listen.host == host)
        #expect(listen.port == port)
    }

    @Test("refuses bad addresses", arguments: [
        "8080", "0.0.0.0", "0.0.0.0:", "0.0.0.0:65536", "0.0.0.0:-1", ":::8080", "[::]8080", "example.com:80",
        "[::1:80", "1.2.3:80", "0.0.0.0:8o",
    ])
    func refuses(text: String) {
        #expect(throws: ListenAddress.ParseError.self) { try ListenAddress(parsing: text) }
    }
}
