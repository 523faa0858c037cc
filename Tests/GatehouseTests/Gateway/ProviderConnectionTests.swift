import Foundation
import Gatehouse
import GatehouseCore
import GatehouseOIDC
import Logging
import Testing
import TestSupport

/// Review issue 10 item 6: discovery (with the JWKS) is single-flight and backs off while the
/// provider is down, whatever the request rate.
@Suite("Provider connection: single-flight discovery with back-off")
struct ProviderConnectionTests {
    static let issuer = "https://idp.example.com"
    static let discovery = "https://idp.example.com/.well-known/openid-configuration"

    private func connection(_ http: FakeProviderHTTP, clock: ManualClock,
                            extra: [String: String] = [:]) throws -> ProviderConnection {
        var environment = ["GATEHOUSE_ISSUER": Self.issuer, "GATEHOUSE_CLIENT_ID": TestProvider.clientID]
        for (name, value) in extra { environment[name] = value }
        let configuration = try GatehouseConfiguration.load(environment: environment, requireSecretKey: false).get()
        return ProviderConnection(configuration: configuration, http: http,
                                  logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }, clock: clock)
    }

    private func discoveryCount(_ http: FakeProviderHTTP) -> Int {
        http.requests.filter { $0.url == Self.discovery }.count
    }

    private static func document(issuer: String = issuer, algorithms: [String]? = nil) -> String {
        var fields = [#""issuer":"\#(issuer)""#, #""authorization_endpoint":"https://idp.example.com/authorize""#,
                      #""token_endpoint":"https://idp.example.com/token""#, #""jwks_uri":"\#(TestProvider.jwksURI)""#,
                      #""userinfo_endpoint":"https://idp.example.com/userinfo""#]
        if let algorithms {
            fields.append(#""id_token_signing_alg_values_supported":[\#(algorithms.map { "\"\($0)\"" }.joined(separator: ","))]"#)
        }
        return "{" + fields.joined(separator: ",") + "}"
    }

    @Test("50 concurrent requests while the provider is down: one fetch, all told at once")
    func singleFlightWhileDown() async throws {
        let http = FakeProviderHTTP()
        http.fail(Self.discovery, with: .unreachable("connection refused"))
        let clock = ManualClock(unixSeconds: 1_700_000_000)
        let provider = try connection(http, clock: clock)
        let failures = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    do { _ = try await provider.clients(); return false } catch { return true }
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(failures == 50)
        #expect(discoveryCount(http) == 1)
        guard case .failed(.transport) = provider.status else {
            Issue.record("status is \(provider.status)")
            return
        }
    }

    @Test("Failed attempts back off exponentially up to 60 s; a success resets")
    func backOff() async throws {
        let http = FakeProviderHTTP()
        http.fail(Self.discovery, with: .timeout)
        let clock = ManualClock(unixSeconds: 1_700_000_000)
        let provider = try connection(http, clock: clock)
        var expected = 0
        for delay in [1.0, 2, 4, 8, 16, 32, 60, 60] {
            _ = try? await provider.clients()
            expected += 1
            #expect(discoveryCount(http) == expected)
            clock.advance(seconds: delay - 0.5)
            _ = try? await provider.clients()
            #expect(discoveryCount(http) == expected, "still backing off \(delay) s")
            clock.advance(seconds: 0.5)
        }
        http.respond(to: Self.discovery, json: Self.document())
        http.respond(to: TestProvider.jwksURI, json: TestProvider().jwks())
        let clients = try await provider.clients()
        #expect(clients.metadata.issuer == Self.issuer)
        _ = try await provider.clients()
        #expect(discoveryCount(http) == expected + 1)
    }

    @Test("An issuer mismatch is a misconfiguration, reported as such")
    func issuerMismatch() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: Self.discovery, json: Self.document(issuer: "https://other.example.com"))
        let provider = try connection(http, clock: ManualClock(unixSeconds: 1_700_000_000))
        await #expect(throws: DiscoveryError.issuerMismatch(expected: Self.issuer, actual: "https://other.example.com")) {
            try await provider.clients()
        }
        guard case .failed(let error) = provider.status else {
            Issue.record("status is \(provider.status)")
            return
        }
        #expect(error.isMisconfiguration)
    }

    @Test("Algorithms: RS256 by default, plus the provider's only one; GATEHOUSE_ID_TOKEN_ALGS wins")
    func algorithmPinning() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: TestProvider.jwksURI, json: TestProvider().jwks())
        http.respond(to: Self.discovery, json: Self.document(algorithms: ["RS256", "ES256", "PS256"]))
        #expect(try await connection(http, clock: ManualClock(unixSeconds: 1_700_000_000)).clients().idTokens.keySet.allowedAlgorithms == [.rs256])
        http.respond(to: Self.discovery, json: Self.document(algorithms: ["ES256"]))
        #expect(try await connection(http, clock: ManualClock(unixSeconds: 1_700_000_000)).clients().idTokens.keySet.allowedAlgorithms == [.rs256, .es256])
        let pinned = try connection(http, clock: ManualClock(unixSeconds: 1_700_000_000), extra: ["GATEHOUSE_ID_TOKEN_ALGS": "PS256"])
        #expect(try await pinned.clients().logoutTokens.keySet.allowedAlgorithms == [.ps256])
    }

    @Test("The auth-method check speaks only when the provider lists methods without ours")
    func authMethod() {
        var metadata = TestProvider.metadata
        #expect(ProviderConnection.authMethodProblem(metadata: metadata, method: .clientSecretPost) == nil)
        metadata.tokenEndpointAuthMethodsSupported = ["client_secret_basic", "private_key_jwt"]
        #expect(ProviderConnection.authMethodProblem(metadata: metadata, method: .clientSecretBasic) == nil)
        let problem = ProviderConnection.authMethodProblem(metadata: metadata, method: .clientSecretPost)
        #expect(problem?.contains("GATEHOUSE_CLIENT_AUTH_METHOD is client_secret_post") == true)
    }
}
