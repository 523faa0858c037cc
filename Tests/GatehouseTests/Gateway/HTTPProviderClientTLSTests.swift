import Foundation
import Gatehouse
import GatehouseOIDC
import Testing
import TestSupport

/// The provider client over real TLS, with the same test CA arrangement as `TLSUpstreamTests`: the
/// trusted case runs this test binary again inside a private mount namespace whose system CA bundle
/// includes this run's certificate; outside it, the certificate is as unknown as a forged one.
@Suite("Provider client over TLS")
struct HTTPProviderClientTLSTests {
    static let directoryVariable = "GATEHOUSE_PROVIDER_TLS_TEST_DIR"

    @Test("a provider whose certificate the system trusts answers over https")
    func trusted() async throws {
        let certificates = try await TLSTestCertificates.make()
        defer { certificates.remove() }
        try await expectPassesTrustingTestCertificate(certificates, variable: Self.directoryVariable,
                                                      filter: "HTTPProviderClientTLSScenario/", marker: "provider-ran")
    }

    @Test("a provider whose certificate the system does not trust is unreachable, nothing sent")
    func untrusted() async throws {
        try await withUntrustedTLSServer { port in
            await HTTPProviderClientTests.expectUnreachable(ProviderHTTPRequest(
                method: .post, url: "https://127.0.0.1:\(port)/token", body: Array("code=secret".utf8)))
        }
    }
}

/// Runs only inside the child process that `HTTPProviderClientTLSTests.trusted` starts.
@Suite(.enabled(if: ProcessInfo.processInfo.environment[HTTPProviderClientTLSTests.directoryVariable] != nil))
struct HTTPProviderClientTLSScenario {
    @Test func postOverTLS() async throws {
        let certificates = try TLSTestCertificates.forChildScenario(variable: HTTPProviderClientTLSTests.directoryVariable,
                                                                    marker: "provider-ran")
        let server = try TLSTestServer(certificates: certificates)
        defer { server.stop() }
        // The bundle (bind-mounted over the system one) is parsed once for the client, however many
        // TLS connections it opens (`TLSClientContext`).
        let opens = try FileOpenWatch(path: certificates.bundle)
        defer { opens.close() }
        let client = HTTPProviderClient(timeout: 5)
        let response = try await client.send(ProviderHTTPRequest(
            method: .post, url: "https://127.0.0.1:\(server.port)/token",
            headers: [ProviderHTTPHeader("Content-Type", "application/x-www-form-urlencoded")],
            body: Array("grant_type=authorization_code&code=c".utf8)))
        #expect(response.status == 200)
        let echo = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        #expect(echo?["method"] as? String == "POST")
        #expect(echo?["bodyLength"] as? Int == 36)
        let redirect = try await client.send(ProviderHTTPRequest(
            method: .get, url: "https://127.0.0.1:\(server.port)/redirect"))
        #expect(redirect.status == 302)
        var connections: Set<Int> = []
        for _ in 0..<3 {
            let closing = try await client.send(ProviderHTTPRequest(method: .get, url: "https://127.0.0.1:\(server.port)/close"))
            let answer = try JSONSerialization.jsonObject(with: Data(closing.body)) as? [String: Any]
            connections.insert(try #require(answer?["connection"] as? Int))
        }
        #expect(connections.count == 3, "each /close answer ended its connection")
        let opened = opens.count()
        #expect(opened == 1, "the CA bundle was opened \(opened) times by one provider client")
    }
}
