import GatehouseCore
import GatehouseEncoding
import GatehouseOIDC
import Testing

/// One loopback rule for the issuer check, provider URLs and the development provider (issue 11).
@Suite("LoopbackHost: the one loopback rule")
struct LoopbackHostTests {
    @Test("localhost, 127.0.0.0/8 and ::1 are loopback", arguments: [
        "localhost", "LocalHost", "127.0.0.1", "127.255.255.254", "127.8.9.10", "::1", "[::1]", "0:0:0:0:0:0:0:1",
    ])
    func loopback(host: String) {
        #expect(LoopbackHost.contains(host))
    }

    @Test("Everything else is not: other addresses, lookalike names, short and octal IPv4 forms, IPv4-mapped", arguments: [
        "", "0.0.0.0", "::", "[::]", "::2", "[::2]", "10.0.0.1", "128.0.0.1", "126.255.255.255", "example.com",
        "localhost.", "localhost.example.com", "127.0.0.1.nip.io", "127.1", "0177.0.0.1", "127.000.000.001",
        "127.0.0.1 ", " 127.0.0.1", "[127.0.0.1]", "::ffff:127.0.0.1", "[::ffff:127.0.0.1]", "::ffff:7f00:1",
        "::1%lo", "[::1", "::1]", "2130706433", "[localhost]",
    ])
    func notLoopback(host: String) {
        #expect(!LoopbackHost.contains(host))
    }

    @Test("The issuer check, provider URLs and the development provider agree with it", arguments: [
        ("127.0.0.1", true), ("localhost", true), ("[::1]", true), ("127.8.9.10", true),
        ("127.000.000.001", false), ("[::ffff:127.0.0.1]", false), ("10.0.0.1", false),
    ])
    func everyCallerAgrees(host: String, loopback: Bool) throws {
        #expect(ProviderURL.isLoopbackHost(host) == loopback)
        #expect((ProviderURL.problem(with: "http://\(host)/token") == nil) == loopback)
        if let url = try? AbsoluteURL(parsing: "http://\(host)") {
            #expect(url.isLoopbackHost == loopback)
        }
    }
}
