import Foundation
import Gatehouse
import GatehouseOIDC
import Testing
import TestSupport

/// The provider client over real TLS, with the same test CA arrangement as `TLSUpstreamTests`: the
/// trusted case runs this test binary again inside a private mount namespace whose system CA bundle
/// includes this run's certificate; outside it, the certificate is as unknown as a forged one.
@Suite("libcurl provider client over TLS")
struct CurlProviderClientTLSTests {
    static let directoryVariable = "GATEHOUSE_PROVIDER_TLS_TEST_DIR"

    @Test("a provider whose certificate the system trusts answers over https")
    func trusted() async throws {
        let certificates = try await TLSTestCertificates.make()
        defer { certificates.remove() }
        var environment = ProcessInfo.processInfo.environment
        environment[Self.directoryVariable] = certificates.directory.path
        let result = try await runTLSTestCommand("/usr/bin/unshare", [
            "--mount", "--propagation", "private", "/bin/sh", "-c",
            #"mount --bind "$0" /etc/ssl/certs/ca-certificates.crt && exec "$@""#,
            certificates.bundle, CommandLine.arguments[0], "--testing-library", "swift-testing",
            "--filter", "CurlProviderClientTLSScenario/"], environment: environment)
        let ran = FileManager.default.fileExists(atPath: certificates.directory.appendingPathComponent("provider-ran").path)
        #expect(ran, "the scenario did not run in the child process:\n\(result.output.suffix(3000))")
        #expect(result.status == 0, "the scenario failed in the child process:\n\(result.output.suffix(6000))")
    }

    @Test("a provider whose certificate the system does not trust is unreachable, nothing sent")
    func untrusted() async throws {
        let certificates = try await TLSTestCertificates.make()
        defer { certificates.remove() }
        let server = try await TLSTestServer.start(certificates: certificates)
        defer { server.stop() }
        do {
            _ = try await CurlProviderClient(timeout: 5).send(ProviderHTTPRequest(
                method: .post, url: "https://127.0.0.1:\(server.port)/token", body: Array("code=secret".utf8)))
            Issue.record("an untrusted certificate was accepted")
        } catch {
            guard case .unreachable = error else {
                Issue.record("unexpected \(error)")
                return
            }
        }
    }
}

/// Runs only inside the child process that `CurlProviderClientTLSTests.trusted` starts.
@Suite(.enabled(if: ProcessInfo.processInfo.environment[CurlProviderClientTLSTests.directoryVariable] != nil))
struct CurlProviderClientTLSScenario {
    @Test func postOverTLS() async throws {
        let path = try #require(ProcessInfo.processInfo.environment[CurlProviderClientTLSTests.directoryVariable])
        let certificates = TLSTestCertificates(directory: URL(fileURLWithPath: path))
        try Data().write(to: certificates.directory.appendingPathComponent("provider-ran"))
        let server = try TLSTestServer(certificates: certificates)
        defer { server.stop() }
        let response = try await CurlProviderClient(timeout: 5).send(ProviderHTTPRequest(
            method: .post, url: "https://127.0.0.1:\(server.port)/token",
            headers: [ProviderHTTPHeader("Content-Type", "application/x-www-form-urlencoded")],
            body: Array("grant_type=authorization_code&code=c".utf8)))
        #expect(response.status == 200)
        let echo = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        #expect(echo?["method"] as? String == "POST")
        #expect(echo?["bodyLength"] as? Int == 36)
        let redirect = try await CurlProviderClient(timeout: 5).send(ProviderHTTPRequest(
            method: .get, url: "https://127.0.0.1:\(server.port)/redirect"))
        #expect(redirect.status == 302)
    }
}
