import Foundation
import GatehouseOIDC
import Testing
import GatehouseEncoding

@Suite("Authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3)")
struct AuthorizationRequestTests {
    private func queryItems(_ url: String) throws -> [(String, String)] {
        let components = try #require(URLComponents(string: url))
        return (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }
    }

    @Test("The URL carries the protocol parameters in order, then the extra parameters")
    func shape() throws {
        let (url, login) = AuthorizationRequest.make(
            metadata: TestProvider.metadata, clientID: TestProvider.clientID, redirectURI: "https://app.example/callback",
            scopes: ["profile", "openid", "email", "profile"], extraParameters: [("audience", "https://api.example")])
        #expect(url.hasPrefix("https://idp.example.com/authorize?response_type=code&client_id=gatehouse-client&"))
        let items = try queryItems(url)
        #expect(items.map(\.0) == ["response_type", "client_id", "redirect_uri", "scope", "state", "nonce",
                                   "code_challenge", "code_challenge_method", "audience"])
        let values = Dictionary(items, uniquingKeysWith: { first, _ in first })
        #expect(values["redirect_uri"] == "https://app.example/callback")
        #expect(values["scope"] == "openid profile email")
        #expect(values["state"] == login.state)
        #expect(values["nonce"] == login.nonce)
        #expect(values["code_challenge"] == CodeChallenge.s256(for: login.codeVerifier).value)
        #expect(values["code_challenge_method"] == "S256")
        #expect(values["audience"] == "https://api.example")
        #expect(login.state.count == 43 && login.nonce.count == 43 && login.codeVerifier.value.count == 43)
        #expect(login.state != login.nonce)
    }

    @Test("Values are percent-encoded with only RFC 3986 unreserved characters kept")
    func percentEncoding() {
        let (url, _) = AuthorizationRequest.make(
            metadata: TestProvider.metadata, clientID: "a b&c", redirectURI: "https://app.example/cb?x=1 y",
            scopes: [], extraParameters: [("ui_locales", "fr-CA é~")])
        #expect(url.contains("client_id=a%20b%26c&"))
        #expect(url.contains("redirect_uri=https%3A%2F%2Fapp.example%2Fcb%3Fx%3D1%20y&"))
        #expect(url.contains("scope=openid&"))
        #expect(url.hasSuffix("&ui_locales=fr-CA%20%C3%A9~"))
    }

    @Test("Extra parameters cannot override protocol parameters")
    func reservedExtraParameters() throws {
        let extras = [("state", "attacker"), ("code_challenge_method", "plain"), ("response_mode", "form_post"),
                      ("connection", "github")]
        let (url, login) = AuthorizationRequest.make(
            metadata: TestProvider.metadata, clientID: "c", redirectURI: "https://app.example/callback", scopes: [],
            extraParameters: extras)
        let items = try queryItems(url)
        #expect(items.filter { $0.0 == "state" }.map(\.1) == [login.state])
        #expect(items.filter { $0.0 == "code_challenge_method" }.map(\.1) == ["S256"])
        #expect(!items.contains { $0.0 == "response_mode" })
        #expect(items.last?.0 == "connection")
    }

    @Test("An authorization endpoint's own query is kept (RFC 6749 §3.1)")
    func endpointWithQuery() {
        var metadata = TestProvider.metadata
        metadata.authorizationEndpoint = "https://idp.example.com/authorize?tenant=acme"
        let (url, _) = AuthorizationRequest.make(metadata: metadata, clientID: "c", redirectURI: "https://a/cb",
                                                 scopes: [], extraParameters: [])
        #expect(url.hasPrefix("https://idp.example.com/authorize?tenant=acme&response_type=code&"))
    }

    @Test("Injected randomness decides state, nonce and verifier")
    func injectedRandom() {
        let random = RandomBytes { count in Array(repeating: 0, count: count) }
        let (_, login) = AuthorizationRequest.make(metadata: TestProvider.metadata, clientID: "c", redirectURI: "https://a/cb",
                                                   scopes: [], extraParameters: [], random: random)
        #expect(login.state == String(repeating: "A", count: 43))
        #expect(!"\(login)".contains(login.state))
    }

    @Test("End-session URL carries id_token_hint, post_logout_redirect_uri and client_id")
    func endSession() {
        var metadata = TestProvider.metadata
        #expect(EndSessionRequest.url(metadata: metadata, idTokenHint: "t", postLogoutRedirectURI: "https://a/", clientID: "c") == nil)
        metadata.endSessionEndpoint = "https://idp.example.com/logout"
        #expect(EndSessionRequest.url(metadata: metadata, idTokenHint: "h.p.s", postLogoutRedirectURI: "https://a/", clientID: "c")
            == "https://idp.example.com/logout?id_token_hint=h.p.s&post_logout_redirect_uri=https%3A%2F%2Fa%2F&client_id=c")
        // Some providers (Glewlwyd) redirect back to post_logout_redirect_uri only with a `state`.
        #expect(EndSessionRequest.location(metadata: metadata, logoutTemplate: nil, idTokenHint: "h.p.s",
                                           postLogoutRedirectURI: "https://a/", clientID: "c", state: "s-1")
            == "https://idp.example.com/logout?id_token_hint=h.p.s&post_logout_redirect_uri=https%3A%2F%2Fa%2F&client_id=c&state=s-1")
    }
}

@Suite("Authorization response iss (RFC 9207)")
struct AuthorizationResponseIssuerTests {
    @Test("iss must equal the issuer when present, and is required when advertised")
    func issuerParameter() throws {
        func response(iss: String?) throws -> AuthorizationResponse {
            var parameters: [(name: String, value: String?)] = [("state", "s"), ("code", "c")]
            if let iss { parameters.append(("iss", iss)) }
            return try AuthorizationResponse(parameters: parameters)
        }
        #expect(try response(iss: nil).code(expectedIssuer: TestProvider.issuer, issuerRequired: false) == "c")
        #expect(try response(iss: TestProvider.issuer).code(expectedIssuer: TestProvider.issuer, issuerRequired: true) == "c")
        #expect(throws: AuthorizationResponse.Refusal.issuer(.mismatch(expected: TestProvider.issuer, actual: "https://evil.example"))) {
            try response(iss: "https://evil.example").code(expectedIssuer: TestProvider.issuer, issuerRequired: false)
        }
        #expect(throws: AuthorizationResponse.Refusal.issuer(.missing)) {
            try response(iss: nil).code(expectedIssuer: TestProvider.issuer, issuerRequired: true)
        }
    }
}
