import Foundation
import GatehouseCore
import JWTKit
import GatehouseOIDC
import Logging
import Synchronization
import Testing
@testable import Gatehouse

/// A token endpoint double: counts grants, answers after `release()` so that callers overlap.
private final class FakeGrantEndpoint: Sendable {
    private struct State {
        var grants: [ClientCredentialsGrant] = []
        var waiting: [CheckedContinuation<Void, Never>] = []
        var held = false
        var failing = false
        var expiresIn: Int? = 3600
    }
    private let state = Mutex(State())

    var grants: [ClientCredentialsGrant] { state.withLock { $0.grants } }
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    func hold() { state.withLock { $0.held = true } }
    func fail(_ failing: Bool) { state.withLock { $0.failing = failing } }
    func expiresIn(_ seconds: Int?) { state.withLock { $0.expiresIn = seconds } }

    func release() {
        let waiting = state.withLock { state in
            state.held = false
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    func fetch(_ grant: ClientCredentialsGrant) async throws -> TokenResponse {
        let (number, held) = state.withLock { state in
            state.grants.append(grant)
            return (state.grants.count, state.held)
        }
        if held {
            await withCheckedContinuation { continuation in
                let stillHeld = state.withLock { state in
                    if state.held { state.waiting.append(continuation) }
                    return state.held
                }
                if !stillHeld { continuation.resume() }
            }
        }
        let (failing, expiresIn) = state.withLock { ($0.failing, $0.expiresIn) }
        if failing { throw TokenEndpointError.oauth(code: OAuthErrorCode("invalid_client"), description: nil, httpStatus: 401) }
        return TokenResponse(accessToken: "client-token-\(number)", expiresIn: expiresIn)
    }
}

private final class GrantClock: Sendable {
    private let seconds = Mutex<Int64>(1_000_000)
    var now: Int64 { seconds.withLock { $0 } }
    func advance(_ by: Int64) { seconds.withLock { $0 += by } }
}

@Suite("Client-credentials token cache (RFC 6749 §4.4; single flight, renewal before expiry)")
struct ClientTokenCacheTests {
    private let endpoint = FakeGrantEndpoint()
    private let clock = GrantClock()
    private let grant = ClientCredentialsGrant(scope: "reports.read")

    private func cache(margin: Int64 = 60) -> ClientTokenCache {
        let endpoint = endpoint, clock = clock
        return ClientTokenCache(margin: margin, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }, now: { clock.now }) { grant in
            try await endpoint.fetch(grant)
        }
    }

    @Test("50 concurrent calls share one grant")
    func singleFlight() async throws {
        let cache = cache()
        endpoint.hold()
        let results = await withTaskGroup(of: Result<String, ClientTokenCache.Failure>.self) { group in
            for _ in 0..<50 { group.addTask { await cache.authorization(for: self.grant) } }
            // Every caller is in before the provider answers.
            while cache.grantCount == 0 || endpoint.waitingCount == 0 { await Task.yield() }
            endpoint.release()
            var all: [Result<String, ClientTokenCache.Failure>] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(endpoint.grants == [grant])
        #expect(results.count == 50)
        #expect(results.allSatisfy { (try? $0.get()) == "Bearer client-token-1" })
    }

    @Test("The token is reused until the margin before expiry, then fetched again")
    func renewsBeforeExpiry() async throws {
        let cache = cache(margin: 60)
        #expect(try await cache.authorization(for: grant).get() == "Bearer client-token-1")
        clock.advance(3600 - 61)
        #expect(try await cache.authorization(for: grant).get() == "Bearer client-token-1")
        #expect(endpoint.grants.count == 1)
        clock.advance(1)
        #expect(try await cache.authorization(for: grant).get() == "Bearer client-token-2")
        #expect(endpoint.grants.count == 2)
    }

    @Test("Each scope/audience pair has its own token")
    func perGrant() async throws {
        let cache = cache()
        let other = ClientCredentialsGrant(scope: "reports.read", audience: "https://api.example")
        #expect(try await cache.authorization(for: grant).get() == "Bearer client-token-1")
        #expect(try await cache.authorization(for: other).get() == "Bearer client-token-2")
        #expect(try await cache.authorization(for: grant).get() == "Bearer client-token-1")
        #expect(endpoint.grants == [grant, other])
    }

    @Test("A refused grant is not remembered; a token not yet expired still serves while the provider fails")
    func failures() async throws {
        let cache = cache(margin: 60)
        endpoint.fail(true)
        let failure = await cache.authorization(for: grant)
        guard case .failure(let error) = failure else { Issue.record("a refused grant gave a token"); return }
        #expect(error.description.contains("invalid_client"))
        endpoint.fail(false)
        #expect(try await cache.authorization(for: grant).get() == "Bearer client-token-2")

        clock.advance(3600 - 30) // due for renewal, not expired
        endpoint.fail(true)
        #expect(try await cache.authorization(for: grant).get() == "Bearer client-token-2")
        clock.advance(30) // expired
        guard case .failure = await cache.authorization(for: grant) else { Issue.record("an expired token was used"); return }
    }

    @Test("Without expires_in a token is kept for a minute only")
    func noExpiry() async throws {
        endpoint.expiresIn(nil)
        let cache = cache(margin: 0)
        _ = try await cache.authorization(for: grant).get()
        clock.advance(ClientTokenCache.defaultLifetime - 1)
        _ = try await cache.authorization(for: grant).get()
        #expect(endpoint.grants.count == 1)
        clock.advance(1)
        _ = try await cache.authorization(for: grant).get()
        #expect(endpoint.grants.count == 2)
    }
}

@Suite("Client-credentials grant request (RFC 6749 §4.4.2)")
struct ClientCredentialsRequestTests {
    static let tokenURL = "https://idp.example.com/token"

    private func client(_ method: GatehouseOIDC.ClientAuthMethod, http: FakeProviderHTTP) throws -> TokenClient {
        try TokenClient(metadata: TestProvider.metadata, clientID: "gw", clientSecret: method == .none ? nil : "s3cret",
                        authMethod: method, http: http)
    }

    @Test("client_secret_basic: grant_type, scope and audience in the form, credentials in Basic")
    func basic() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: Self.tokenURL, json: #"{"access_token":"cc-1","token_type":"Bearer","expires_in":300}"#)
        let response = try await client(.clientSecretBasic, http: http).clientCredentials(scope: "a b", audience: "https://api/")
        let request = try #require(http.requests.first)
        #expect(String(decoding: request.body, as: UTF8.self) == "grant_type=client_credentials&scope=a+b&audience=https%3A%2F%2Fapi%2F")
        #expect(request.header("Authorization") == "Basic " + Data("gw:s3cret".utf8).base64EncodedString())
        #expect(response.accessToken == "cc-1" && response.expiresIn == 300)
    }

    @Test("client_secret_post: no scope or audience when the route gives none")
    func post() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: Self.tokenURL, json: #"{"access_token":"cc-1","token_type":"Bearer"}"#)
        _ = try await client(.clientSecretPost, http: http).clientCredentials(scope: nil, audience: nil)
        let request = try #require(http.requests.first)
        #expect(String(decoding: request.body, as: UTF8.self) == "grant_type=client_credentials&client_id=gw&client_secret=s3cret")
    }

    @Test("client_secret_jwt: a client assertion, never the secret")
    func jwt() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: Self.tokenURL, json: #"{"access_token":"cc-1","token_type":"Bearer"}"#)
        _ = try await client(.clientSecretJWT, http: http).clientCredentials(scope: "x", audience: nil)
        let body = String(decoding: try #require(http.requests.first).body, as: UTF8.self)
        #expect(body.hasPrefix("grant_type=client_credentials&scope=x&client_id=gw&client_assertion_type="))
        #expect(body.contains("client_assertion=ey") && !body.contains("s3cret"))
    }

    @Test("private_key_jwt: an assertion signed with the client's key, no secret, no Basic")
    func privateKeyJWT() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: Self.tokenURL, json: #"{"access_token":"cc-1","token_type":"Bearer"}"#)
        let key = try await ClientSigningKey(pem: ES256PrivateKey().pemRepresentation, keyID: "k1")
        let client = try TokenClient(metadata: TestProvider.metadata, clientID: "gw", clientSecret: nil,
                                     authMethod: .privateKeyJWT, http: http, signingKey: key)
        _ = try await client.clientCredentials(scope: "x", audience: nil)
        let request = try #require(http.requests.first)
        let body = String(decoding: request.body, as: UTF8.self)
        #expect(body.hasPrefix("grant_type=client_credentials&scope=x&client_id=gw&client_assertion_type="))
        #expect(body.contains("client_assertion=ey") && request.header("Authorization") == nil)
    }

    @Test("A public client cannot use the grant; a provider error is typed")
    func refusals() async throws {
        let http = FakeProviderHTTP()
        await #expect(throws: TokenEndpointError.self) {
            try await client(.none, http: http).clientCredentials(scope: nil, audience: nil)
        }
        #expect(http.requests.isEmpty)
        http.respond(to: Self.tokenURL, json: #"{"error":"invalid_scope"}"#, status: 400)
        await #expect(throws: TokenEndpointError.oauth(code: OAuthErrorCode("invalid_scope"), description: nil, httpStatus: 400)) {
            try await client(.clientSecretBasic, http: http).clientCredentials(scope: "nope", audience: nil)
        }
    }
}
