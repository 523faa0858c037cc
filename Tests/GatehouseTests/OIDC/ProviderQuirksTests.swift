import Foundation
import GatehouseOIDC
import Testing

/// The provider quirks of issue 13 in the OIDC layer: endpoint overrides, issuer forms, GET token
/// requests, required claims, the logout template and per-login parameters.
@Suite("Provider quirks (Facebook, Google, Entra ID, Auth0)")
struct ProviderQuirksTests {
    // MARK: Endpoint overrides

    @Test("Facebook's document has no token_endpoint: an error naming GATEHOUSE_TOKEN_ENDPOINT")
    func missingTokenEndpointNamesTheVariable() {
        let document = ProviderMetadataTests.document(removing: ["token_endpoint"])
        #expect(throws: DiscoveryError.missingEndpoint(field: "token_endpoint", variable: "GATEHOUSE_TOKEN_ENDPOINT")) {
            try ProviderMetadata.decode(document, expectedIssuer: ProviderMetadataTests.issuer)
        }
        let error = DiscoveryError.missingEndpoint(field: "token_endpoint", variable: "GATEHOUSE_TOKEN_ENDPOINT")
        #expect(error.description.contains("set GATEHOUSE_TOKEN_ENDPOINT"))
        #expect(error.isMisconfiguration)
    }

    @Test("A missing or null jwks_uri names GATEHOUSE_JWKS_URI")
    func missingJWKS() {
        for document in [ProviderMetadataTests.document(removing: ["jwks_uri"]), ProviderMetadataTests.document(["jwks_uri": .null])] {
            #expect(throws: DiscoveryError.missingEndpoint(field: "jwks_uri", variable: "GATEHOUSE_JWKS_URI")) {
                try ProviderMetadata.decode(document, expectedIssuer: ProviderMetadataTests.issuer)
            }
        }
    }

    @Test("Overrides supply missing endpoints and win over discovered ones")
    func overridesWin() throws {
        let overrides = EndpointOverrides(token: "https://graph.example.com/oauth/access_token",
                                          endSession: "https://idp.example.com/v2/logout")
        let metadata = try ProviderMetadata.decode(ProviderMetadataTests.document(removing: ["token_endpoint"]),
                                                   expectedIssuer: ProviderMetadataTests.issuer, overrides: overrides)
        #expect(metadata.tokenEndpoint == "https://graph.example.com/oauth/access_token")
        #expect(metadata.endSessionEndpoint == "https://idp.example.com/v2/logout")
        #expect(metadata.authorizationEndpoint == "https://idp.example.com/authorize")
    }

    @Test("An override is validated like a discovered endpoint")
    func overrideValidated() {
        #expect(throws: DiscoveryError.self) {
            try ProviderMetadata.decode(ProviderMetadataTests.document(), expectedIssuer: ProviderMetadataTests.issuer,
                                        overrides: EndpointOverrides(token: "http://evil.example.com/token"))
        }
    }

    // MARK: Issuer forms

    @Test("Google: iss with or without https:// passes; others do not")
    func googleIssuerForms() {
        let policy = IssuerPolicy.schemeOptional
        let issuer = "https://accounts.google.com"
        #expect(policy.acceptsTokenIssuer("https://accounts.google.com", issuer: issuer, claims: [:]))
        #expect(policy.acceptsTokenIssuer("accounts.google.com", issuer: issuer, claims: [:]))
        #expect(!policy.acceptsTokenIssuer("http://accounts.google.com", issuer: issuer, claims: [:]))
        #expect(!policy.acceptsTokenIssuer("accounts.google.com.evil", issuer: issuer, claims: [:]))
        #expect(!IssuerPolicy.exact.acceptsTokenIssuer("accounts.google.com", issuer: issuer, claims: [:]))
    }

    @Test("A refreshed Google ID token may use the other issuer form; other policies compare exactly")
    func sameIssuerAcrossRefresh() {
        #expect(IssuerPolicy.schemeOptional.sameIssuer("accounts.google.com", "https://accounts.google.com"))
        #expect(!IssuerPolicy.schemeOptional.sameIssuer("accounts.google.com", "https://accounts.google.com.evil"))
        #expect(!IssuerPolicy.tenantTemplate.sameIssuer("https://l/a/v2.0", "https://l/b/v2.0"))
        #expect(!IssuerPolicy.exact.sameIssuer("accounts.google.com", "https://accounts.google.com"))
    }

    static let entraTemplate = "https://login.microsoftonline.com/{tenantid}/v2.0"
    static let tenant = "9188040d-6c67-4c5b-b112-36a304b66dad"

    @Test("Entra: the common document's template fits GATEHOUSE_ISSUER …/common/v2.0")
    func entraDocumentIssuer() {
        let policy = IssuerPolicy.tenantTemplate
        #expect(policy.acceptsDocumentIssuer(Self.entraTemplate, configured: "https://login.microsoftonline.com/common/v2.0"))
        #expect(policy.acceptsDocumentIssuer(Self.entraTemplate, configured: "https://login.microsoftonline.com/organizations/v2.0"))
        #expect(!policy.acceptsDocumentIssuer(Self.entraTemplate, configured: "https://login.microsoftonline.com/a/b/v2.0"))
        #expect(!policy.acceptsDocumentIssuer(Self.entraTemplate, configured: "https://evil.example.com/common/v2.0"))
        #expect(!IssuerPolicy.exact.acceptsDocumentIssuer(Self.entraTemplate, configured: "https://login.microsoftonline.com/common/v2.0"))
    }

    @Test("Entra: iss must be the template with the token's own tid")
    func entraTokenIssuer() {
        let policy = IssuerPolicy.tenantTemplate
        let iss = "https://login.microsoftonline.com/\(Self.tenant)/v2.0"
        #expect(policy.acceptsTokenIssuer(iss, issuer: Self.entraTemplate, claims: ["tid": .string(Self.tenant)]))
        #expect(!policy.acceptsTokenIssuer(iss, issuer: Self.entraTemplate, claims: ["tid": .string("72f988bf-86f1-41af-91ab-2d7cd011db47")]))
        #expect(!policy.acceptsTokenIssuer(iss, issuer: Self.entraTemplate, claims: [:]))
        #expect(!policy.acceptsTokenIssuer("https://login.microsoftonline.com/x/y/v2.0", issuer: Self.entraTemplate,
                                           claims: ["tid": .string("x/y")]))
        // A single-tenant document carries the tenant's issuer: exact match.
        #expect(policy.acceptsTokenIssuer(iss, issuer: iss, claims: [:]))
        #expect(policy.acceptsTokenIssuer(iss, issuer: iss, claims: ["tid": .string(Self.tenant.uppercased())]))
        #expect(!policy.acceptsTokenIssuer(iss, issuer: iss, claims: ["tid": .string("72f988bf-86f1-41af-91ab-2d7cd011db47")]))
    }

    @Test("Entra: a one-tenant issuer over the template document accepts only that tenant's tokens")
    func entraTenantSpecificIssuer() {
        let policy = IssuerPolicy.tenantTemplate
        let configured = "https://login.microsoftonline.com/\(Self.tenant)/v2.0"
        // Found by an outside review: the template document made any tenant's token acceptable.
        let issuer = policy.tokenIssuer(documentIssuer: Self.entraTemplate, configured: configured)
        #expect(issuer == configured)
        let other = "72f988bf-86f1-41af-91ab-2d7cd011db47"
        #expect(!policy.acceptsTokenIssuer("https://login.microsoftonline.com/\(other)/v2.0", issuer: issuer,
                                           claims: ["tid": .string(other)]))
        #expect(policy.acceptsTokenIssuer(configured, issuer: issuer, claims: ["tid": .string(Self.tenant)]))
        // The shared endpoints stay multi-tenant.
        for shared in ["common", "organizations", "consumers"] {
            let sharedIssuer = "https://login.microsoftonline.com/\(shared)/v2.0"
            #expect(policy.tokenIssuer(documentIssuer: Self.entraTemplate, configured: sharedIssuer) == Self.entraTemplate)
        }
        #expect(IssuerPolicy.exact.tokenIssuer(documentIssuer: Self.entraTemplate, configured: configured) == Self.entraTemplate)
    }

    @Test("The ID token validator applies the issuer policy (Google's short form)")
    func validatorUsesPolicy() async throws {
        let provider = TestProvider()
        let now = Date()
        var claims = TestProvider.idTokenClaims(now: now)
        claims["iss"] = .string("idp.example.com")
        let jwt = try await provider.signRS256(claims)
        let keys = KeySet(metadata: TestProvider.metadata, http: provider.http())
        let strict = IDTokenValidator(issuer: TestProvider.issuer, clientID: TestProvider.clientID, keySet: keys)
        await #expect(throws: IDTokenError.self) { try await strict.validate(jwt, expectedNonce: "nonce-123", now: now) }
        let google = IDTokenValidator(issuer: TestProvider.issuer, clientID: TestProvider.clientID, keySet: keys,
                                      issuerPolicy: .schemeOptional)
        let validated = try await google.validate(jwt, expectedNonce: "nonce-123", now: now)
        #expect(validated.sub == "user-42")
    }

    // MARK: GET token request (Facebook Graph API)

    private func getClient(_ method: ClientAuthMethod, clientID: String, http: FakeProviderHTTP) throws -> TokenClient {
        var client = try TokenClient(metadata: TestProvider.metadata, clientID: clientID, clientSecret: "s3cret",
                                     authMethod: method, http: http)
        client.tokenRequestMethod = .get
        return client
    }

    @Test("GET token request: parameters in the query, no body; the description drops the query")
    func getTokenRequest() async throws {
        let http = FakeProviderHTTP()
        let client = try getClient(.clientSecretPost, clientID: "app 1", http: http)
        let url = "https://idp.example.com/token?grant_type=authorization_code&code=c1&redirect_uri=https%3A%2F%2Fapp%2Fcallback&code_verifier=\(TokenClientTests.verifier.value)&client_id=app%201&client_secret=s3cret"
        http.respond(to: url, json: #"{"access_token":"at","token_type":"bearer","expires_in":5183944,"id_token":"h.p.s"}"#)
        let tokens = try await client.exchangeCode(code: "c1", codeVerifier: TokenClientTests.verifier,
                                                   redirectURI: "https://app/callback")
        #expect(tokens.refreshToken == nil)
        let request = try #require(http.requests.first)
        #expect(request.method == .get && request.body.isEmpty && request.header("Content-Type") == nil)
        #expect("\(request)" == "GET https://idp.example.com/token")
        #expect(!"\(ProviderTransportError.invalidURL(url))".contains("s3cret"))
    }

    @Test("GET with client_secret_basic keeps the secret in the header; revocation stays POST")
    func getKeepsBasicInHeader() async throws {
        let http = FakeProviderHTTP()
        let client = try getClient(.clientSecretBasic, clientID: "app", http: http)
        _ = try? await client.refresh(refreshToken: "rt")
        http.respond(to: "https://idp.example.com/revoke", json: "{}")
        try await client.revoke(token: "rt")
        let requests = http.requests
        #expect(requests.count == 2)
        #expect(requests[0].method == .get && !requests[0].url.contains("s3cret") && requests[0].header("Authorization") != nil)
        #expect(requests[1].method == .post && requests[1].url == "https://idp.example.com/revoke")
    }

    @Test("A Graph API error object is reported with its type and message (log-safe)")
    func graphError() async throws {
        let http = FakeProviderHTTP()
        let client = try getClient(.none, clientID: "app", http: http)
        let body = #"{"error":{"message":"This authorization code has expired.\u001b[2J","type":"OAuthException","code":100}}"#
        http.respond(to: "https://idp.example.com/token?grant_type=refresh_token&refresh_token=rt&client_id=app", json: body, status: 400)
        await #expect(throws: TokenEndpointError.oauth(code: .other("OAuthException"),
                                                       description: "This authorization code has expired.[2J", httpStatus: 400)) {
            _ = try await client.refresh(refreshToken: "rt")
        }
    }

    // MARK: Required claims

    @Test("Required claims: strings, booleans, numbers, arrays; missing and mismatching named")
    func requiredClaims() {
        let required = RequiredClaims([("hd", "example.com"), ("email_verified", "true")])
        #expect(required.firstMismatch(in: ["hd": .string("example.com"), "email_verified": .bool(true)]) == nil)
        #expect(required.firstMismatch(in: ["hd": .string("gmail.com"), "email_verified": .bool(true)])?.contains("hd claim is not") == true)
        #expect(required.firstMismatch(in: ["email_verified": .bool(true)])?.contains("no hd claim") == true)
        #expect(required.firstMismatch(in: ["hd": .string("example.com"), "email_verified": .string("false")]) != nil)
        #expect(RequiredClaims([("groups", "admins")]).firstMismatch(in: ["groups": .array([.string("users"), .string("admins")])]) == nil)
        #expect(RequiredClaims([("level", "3")]).firstMismatch(in: ["level": .number(3)]) == nil)
        #expect(RequiredClaims([("org_id", "org_1")]).firstMismatch(in: ["org_id": .null]) != nil)
        #expect(RequiredClaims([]).firstMismatch(in: [:]) == nil)
    }

    // MARK: Logout template

    @Test("Auth0 /v2/logout: placeholders URL-encoded; the end-session endpoint wins when present")
    func logoutTemplate() {
        let template = "https://t.auth0.com/v2/logout?client_id={client_id}&returnTo={post_logout_redirect_uri}&hint={id_token_hint}"
        let url = LogoutURLTemplate.expand(template, clientID: "a b", postLogoutRedirectURI: "https://app/?x=1&y=2#f",
                                           idTokenHint: nil)
        #expect(url == "https://t.auth0.com/v2/logout?client_id=a%20b&returnTo=https%3A%2F%2Fapp%2F%3Fx%3D1%26y%3D2%23f&hint=")
        var metadata = TestProvider.metadata
        #expect(EndSessionRequest.location(metadata: metadata, logoutTemplate: template, idTokenHint: "h.p.s",
                                           postLogoutRedirectURI: "https://app/", clientID: "c")?.hasPrefix("https://t.auth0.com/v2/logout?client_id=c&returnTo=https%3A%2F%2Fapp%2F&hint=h.p.s") == true)
        #expect(EndSessionRequest.location(metadata: metadata, logoutTemplate: nil, idTokenHint: nil,
                                           postLogoutRedirectURI: "https://app/", clientID: "c") == nil)
        metadata.endSessionEndpoint = "https://idp.example.com/logout"
        #expect(EndSessionRequest.location(metadata: metadata, logoutTemplate: template, idTokenHint: nil,
                                           postLogoutRedirectURI: "https://app/", clientID: "c")?.hasPrefix("https://idp.example.com/logout?") == true)
    }

    // MARK: Login parameters

    @Test("Login parameters: only allowed names, in allow-list order; repeats and control characters refused")
    func loginParameters() throws {
        let query: [(String, String?)] = [("invitation", "inv_1"), ("organization", "org_1"), ("state", "x"), ("evil", "1")]
        let selected = try LoginParameters.select(from: query, allowed: ["organization", "invitation", "prompt"])
        #expect(selected.map(\.0) == ["organization", "invitation"] && selected.map(\.1) == ["org_1", "inv_1"])
        #expect(throws: LoginParameters.Problem.repeated("prompt")) {
            try LoginParameters.select(from: [("prompt", "login"), ("prompt", "none")], allowed: ["prompt"])
        }
        #expect(throws: LoginParameters.Problem.unacceptableValue("login_hint")) {
            try LoginParameters.select(from: [("login_hint", "a\nb")], allowed: ["login_hint"])
        }
        #expect(throws: LoginParameters.Problem.unacceptableValue("login_hint")) {
            try LoginParameters.select(from: [("login_hint", nil)], allowed: ["login_hint"])
        }
        let merged = LoginParameters.merged(configured: [("audience", "https://api"), ("prompt", "consent")],
                                            login: [("prompt", "login")])
        #expect(merged.map(\.0) == ["audience", "prompt"] && merged.map(\.1) == ["https://api", "login"])
    }
}
