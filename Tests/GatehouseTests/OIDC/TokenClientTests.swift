import Foundation
import GatehouseOIDC
import Testing

@Suite("Token client (RFC 6749 §4.1.3, §6, §2.3.1; RFC 7009)")
struct TokenClientTests {
    static let tokenURL = "https://idp.example.com/token"
    static let revokeURL = "https://idp.example.com/revoke"
    static let verifier = CodeVerifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")!
    static let okBody = #"{"access_token":"at-1","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-1","id_token":"h.p.s","scope":"openid profile"}"#

    private func client(_ method: ClientAuthMethod, secret: String? = "s3cr:t+ é", http: FakeProviderHTTP) throws -> TokenClient {
        try TokenClient(metadata: TestProvider.metadata, clientID: "my client", clientSecret: secret, authMethod: method, http: http)
    }

    private func form(_ request: ProviderHTTPRequest) -> String { String(decoding: request.body, as: UTF8.self) }

    @Test("client_secret_basic: form-urlencoded id and secret in Basic, nothing in the body")
    func basicAuth() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: Self.tokenURL, json: Self.okBody)
        let tokens = try await client(.clientSecretBasic, http: http)
            .exchangeCode(code: "c/1 2", codeVerifier: Self.verifier, redirectURI: "https://app.example/callback")
        let request = try #require(http.requests.first)
        #expect(request.method == .post && request.url == Self.tokenURL)
        #expect(request.header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(request.header("Accept") == "application/json")
        let expected = Data("my+client:s3cr%3At%2B+%C3%A9".utf8).base64EncodedString()
        #expect(request.header("Authorization") == "Basic \(expected)")
        #expect(form(request) == "grant_type=authorization_code&code=c%2F1+2&redirect_uri=https%3A%2F%2Fapp.example%2Fcallback&code_verifier=dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        #expect(tokens == TokenResponse(accessToken: "at-1", tokenType: "Bearer", expiresIn: 3600, refreshToken: "rt-1",
                                        idToken: "h.p.s", scope: "openid profile"))
    }

    @Test("client_secret_post: client_id and client_secret in the body, no Authorization")
    func postAuth() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: Self.tokenURL, json: Self.okBody)
        _ = try await client(.clientSecretPost, http: http).refresh(refreshToken: "rt-1", scope: "openid")
        let request = try #require(http.requests.first)
        #expect(request.header("Authorization") == nil)
        #expect(form(request) == "grant_type=refresh_token&refresh_token=rt-1&scope=openid&client_id=my+client&client_secret=s3cr%3At%2B+%C3%A9")
    }

    @Test("none: only client_id in the body")
    func noAuth() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: Self.tokenURL, json: Self.okBody)
        _ = try await client(.none, secret: nil, http: http).refresh(refreshToken: "rt-1")
        let request = try #require(http.requests.first)
        #expect(request.header("Authorization") == nil)
        #expect(form(request) == "grant_type=refresh_token&refresh_token=rt-1&client_id=my+client")
    }

    @Test("A secret-based method without a secret is a configuration error")
    func missingSecret() {
        #expect(throws: TokenEndpointError.invalidConfiguration("client_secret_basic needs GATEHOUSE_CLIENT_SECRET")) {
            try TokenClient(metadata: TestProvider.metadata, clientID: "c", clientSecret: nil, authMethod: .clientSecretBasic,
                            http: FakeProviderHTTP())
        }
        #expect(ClientAuthMethod(rawValue: "client_secret_post") == .clientSecretPost)
        #expect(ClientAuthMethod(rawValue: "tls_client_auth") == nil)
    }

    @Test("An OAuth error body becomes a typed code (RFC 6749 §5.2)")
    func oauthError() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: Self.tokenURL, json: #"{"error":"invalid_grant","error_description":"Refresh token expired\n"}"#, status: 400)
        let client = try client(.clientSecretBasic, http: http)
        await #expect(throws: TokenEndpointError.oauth(code: .invalidGrant, description: "Refresh token expired", httpStatus: 400)) {
            try await client.refresh(refreshToken: "rt")
        }
        http.respond(to: Self.tokenURL, json: #"{"error":"login_required"}"#, status: 401)
        await #expect(throws: TokenEndpointError.oauth(code: .other("login_required"), description: nil, httpStatus: 401)) {
            try await client.refresh(refreshToken: "rt")
        }
    }

    @Test("A non-OAuth failure status and a transport failure are told apart")
    func statusAndTransport() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: Self.tokenURL, with: ProviderHTTPResponse(status: 503, body: Array("<html>busy</html>".utf8)))
        let client = try client(.clientSecretBasic, http: http)
        await #expect(throws: TokenEndpointError.unexpectedStatus(503)) { try await client.refresh(refreshToken: "rt") }
        http.fail(Self.tokenURL, with: .unreachable("connection refused"))
        await #expect(throws: TokenEndpointError.transport(.unreachable("connection refused"))) {
            try await client.refresh(refreshToken: "rt")
        }
    }

    @Test("Token responses are decoded strictly", arguments: [
        (#"{"token_type":"Bearer"}"#, false),
        (#"{"access_token":"","token_type":"Bearer"}"#, false),
        (#"{"access_token":"a","token_type":"mac"}"#, false),
        (#"{"access_token":"a"}"#, false),
        (#"{"access_token":7,"token_type":"Bearer"}"#, false),
        (#"{"access_token":"a","token_type":"Bearer","expires_in":-1}"#, false),
        (#"{"access_token":"a","token_type":"Bearer","refresh_token":5}"#, false),
        (#"["access_token"]"#, false),
        (#"{"access_token":"a","token_type":"bearer"}"#, true),
        (#"{"access_token":"a","token_type":"BEARER","expires_in":"3600"}"#, true),
    ])
    func strictDecoding(body: String, accepted: Bool) {
        let result = Result { () throws(TokenEndpointError) in try TokenResponse.decode(Array(body.utf8)) }
        switch result {
        case .success: #expect(accepted)
        case .failure(let error):
            #expect(!accepted)
            guard case .invalidResponse(let reason) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(!reason.contains("\"a\""))
        }
    }

    @Test("A code exchange without an id_token is refused (OIDC Core §3.1.3.3)")
    func exchangeNeedsIDToken() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: Self.tokenURL, json: #"{"access_token":"a","token_type":"Bearer"}"#)
        let client = try client(.none, secret: nil, http: http)
        await #expect(throws: TokenEndpointError.invalidResponse("no id_token in the code exchange response")) {
            try await client.exchangeCode(code: "c", codeVerifier: Self.verifier, redirectURI: "https://a/cb")
        }
    }

    @Test("Revocation posts the token with its hint (RFC 7009 §2.1) and maps errors")
    func revocation() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: Self.revokeURL, with: ProviderHTTPResponse(status: 200))
        let client = try client(.clientSecretBasic, http: http)
        try await client.revoke(token: "rt-1")
        let request = try #require(http.requests.first)
        #expect(request.url == Self.revokeURL)
        #expect(form(request) == "token=rt-1&token_type_hint=refresh_token")
        #expect(request.header("Authorization")?.hasPrefix("Basic ") == true)

        http.respond(to: Self.revokeURL, json: #"{"error":"unsupported_token_type"}"#, status: 400)
        await #expect(throws: TokenEndpointError.oauth(code: .unsupportedTokenType, description: nil, httpStatus: 400)) {
            try await client.revoke(token: "at", tokenTypeHint: .accessToken)
        }

        var metadata = TestProvider.metadata
        metadata.revocationEndpoint = nil
        let noRevocation = try TokenClient(metadata: metadata, clientID: "c", clientSecret: nil, authMethod: .none, http: http)
        await #expect(throws: TokenEndpointError.self) { try await noRevocation.revoke(token: "rt") }
    }

    @Test("Descriptions of requests and responses never contain secrets")
    func redaction() {
        let request = ProviderHTTPRequest(method: .post, url: Self.tokenURL, body: Array("client_secret=hunter2".utf8))
        #expect(!"\(request)".contains("hunter2"))
        let tokens = TokenResponse(accessToken: "hunter2", refreshToken: "hunter3", idToken: "hunter4")
        #expect(!"\(tokens)".contains("hunter"))
    }
}
