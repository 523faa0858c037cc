import Foundation
import Testing
import TestSupport

/// The route policies through the whole gateway, in process (issue 14). The routes point at a port
/// where nothing listens: `502 upstream_unreachable` shows the policy let the request through,
/// anything else shows where it stopped.
@Suite("Gateway: route policies (auth=none|optional|client)")
struct RoutePolicyGatewayTests {
    static let closed = "http://127.0.0.1:1"
    static let options = HarnessOptions(environment: ["GATEHOUSE_ROUTES": [
        "/api=\(closed)", "/open=\(closed);auth=none", "/maybe=\(closed);auth=optional",
        "/svc=\(closed);auth=client;scope=reports.read", "/svcopen=\(closed);auth=client;session=optional",
    ].joined(separator: ",")])

    private func error(_ response: RawResponse) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])?["error"] as? String
    }

    @Test("Signed out: auth=none and auth=optional are forwarded without the CSRF header; user and client are 401")
    func signedOut() async throws {
        try await GatewayHarness.with(Self.options) { harness in
            for path in ["/open/x", "/maybe/x"] {
                let response = try await harness.send("GET", path)
                #expect(response.status == 502 && error(response) == "upstream_unreachable", "\(path)")
            }
            for path in ["/api/x", "/svc/x"] {
                let response = try await harness.send("GET", path, headers: [("X-CSRF", "1")])
                #expect(response.status == 401 && error(response) == "unauthenticated", "\(path)")
            }
        }
    }

    @Test("Signed in: the CSRF header is required on auth=optional, not on auth=none")
    func signedIn() async throws {
        try await GatewayHarness.with(Self.options) { harness in
            let browser = harness.browser()
            try await browser.login()
            let optional = try await browser.get("/maybe/x")
            #expect(optional.status == 401 && error(optional) == "csrf_header_missing")
            #expect(error(try await browser.get("/maybe/x", csrf: true)) == "upstream_unreachable")
            #expect(error(try await browser.get("/open/x")) == "upstream_unreachable")
        }
    }

    @Test("A provider that refuses the client-credentials grant gives 502 client_token_failed")
    func grantRefused() async throws {
        // The development provider has no client-credentials grant: it answers unsupported_grant_type.
        try await GatewayHarness.with(Self.options) { harness in
            let response = try await harness.send("GET", "/svcopen/x")
            #expect(response.status == 502)
            #expect(error(response) == "client_token_failed")
            #expect(harness.logLines().contains { $0.contains("client-credentials grant failed") })
        }
    }
}
