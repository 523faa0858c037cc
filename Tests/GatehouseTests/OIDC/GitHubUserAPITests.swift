import Foundation
@testable import GatehouseOIDC
import Testing

@Suite("GitHub: OAuth 2.0 without OpenID Connect, the identity from the user API")
struct GitHubUserAPITests {
    static let api = "https://api.github.test"

    private func http(emails: String = #"[{"email":"octo@example.com","primary":true,"verified":true}]"#) -> FakeProviderHTTP {
        let http = FakeProviderHTTP()
        http.respond(to: Self.api + "/user",
                     json: #"{"login":"octocat","id":583231,"name":"The Octocat","avatar_url":"https://avatars.test/u/583231","email":"public@example.com"}"#)
        http.respond(to: Self.api + "/user/emails", json: emails)
        http.respond(to: Self.api + "/user/orgs?per_page=100&page=1", json: #"[{"login":"octo-org"},{"login":"other"}]"#)
        http.respond(to: Self.api + "/user/teams?per_page=100&page=1",
                     json: #"[{"slug":"platform","organization":{"login":"octo-org"}},{"slug":"x"}]"#)
        return http
    }

    @Test("sub the numeric id as a string, the login, name and avatar; the verified primary email")
    func claims() async throws {
        let fake = http()
        let claims = try await GitHubUserAPI(baseURL: Self.api, http: fake, readsOrganizations: false)
            .claims(accessToken: "gho_secret", issuer: "https://github.com")
        #expect(claims["sub"] == .string("583231") && claims["preferred_username"] == .string("octocat"))
        #expect(claims["name"] == .string("The Octocat") && claims["picture"] == .string("https://avatars.test/u/583231"))
        #expect(claims["email"] == .string("octo@example.com") && claims["email_verified"] == .bool(true))
        #expect(claims["groups"] == nil)  // without read:org
        #expect(fake.requests.count == 2)
        let first = try #require(fake.requests.first)
        #expect(first.header("Authorization") == "Bearer gho_secret" && first.operation == .userinfo)
        #expect(first.header("X-GitHub-Api-Version") == "2022-11-28")
    }

    @Test("An unverified primary address names no one, even beside a verified secondary one")
    func unverifiedPrimary() async throws {
        let fake = http(emails: #"[{"email":"a@example.com","primary":true,"verified":false},{"email":"b@example.com","primary":false,"verified":true}]"#)
        let claims = try await GitHubUserAPI(baseURL: Self.api, http: fake, readsOrganizations: false)
            .claims(accessToken: "t", issuer: "https://github.com")
        #expect(claims["email"] == nil && claims["email_verified"] == nil)
        // The public profile email is never taken for the user's address.
        #expect(!claims.values.contains(.string("public@example.com")))
    }

    @Test("With read:org: groups are the organisations and ORG/TEAM slugs, each once")
    func groups() async throws {
        let claims = try await GitHubUserAPI(baseURL: Self.api, http: http(), readsOrganizations: true)
            .claims(accessToken: "t", issuer: "https://github.com")
        #expect(claims["groups"] == .array([.string("octo-org"), .string("other"), .string("octo-org/platform")]))
    }

    @Test("A refused token or an answer without a numeric id fails the login")
    func failures() async {
        let refused = FakeProviderHTTP()
        refused.respond(to: Self.api + "/user", json: #"{"message":"Bad credentials"}"#, status: 401)
        await #expect(throws: UserInfoError.unexpectedStatus(401)) {
            _ = try await GitHubUserAPI(baseURL: Self.api, http: refused, readsOrganizations: false).claims(accessToken: "t", issuer: "i")
        }
        let odd = FakeProviderHTTP()
        odd.respond(to: Self.api + "/user", json: #"{"login":"x","id":"583231"}"#)
        await #expect(throws: UserInfoError.self) {
            _ = try await GitHubUserAPI(baseURL: Self.api, http: odd, readsOrganizations: false).claims(accessToken: "t", issuer: "i")
        }
    }

    @Test("The endpoints under the web host (Enterprise Server's too); no keys, no end session, no revocation")
    func metadata() {
        let metadata = GitHubUserAPI.metadata(issuer: "https://ghe.example.com/")
        #expect(metadata.authorizationEndpoint == "https://ghe.example.com/login/oauth/authorize")
        #expect(metadata.tokenEndpoint == "https://ghe.example.com/login/oauth/access_token")
        #expect(metadata.endSessionEndpoint == nil && metadata.revocationEndpoint == nil && metadata.userinfoEndpoint == nil)
        #expect(metadata.codeChallengeMethodsSupported == ["S256"])
    }

    @Test("GitHub's token-endpoint errors come with 200: read as errors, not tokens; a code exchange needs no ID token here")
    func tokenEndpoint() async throws {
        let fake = FakeProviderHTTP()
        fake.respond(to: "https://github.test/login/oauth/access_token",
                     json: #"{"error":"bad_verification_code","error_description":"The code passed is incorrect or expired."}"#)
        let client = try TokenClient(tokenEndpoint: "https://github.test/login/oauth/access_token", revocationEndpoint: nil,
                                     clientID: "c", clientSecret: "s", authMethod: .clientSecretPost, http: fake)
        await #expect(throws: TokenEndpointError.self) {
            _ = try await client.exchangeCode(code: "c", codeVerifier: CodeVerifier.make(), redirectURI: "https://a/callback",
                                              requireIDToken: false)
        }
        fake.respond(to: "https://github.test/login/oauth/access_token",
                     json: #"{"access_token":"gho_1","token_type":"bearer","scope":"read:user,user:email"}"#)
        let tokens = try await client.exchangeCode(code: "c", codeVerifier: CodeVerifier.make(), redirectURI: "https://a/callback",
                                                   requireIDToken: false)
        #expect(tokens.accessToken == "gho_1" && tokens.idToken == nil)
    }

    @Test("The authorization request to a plain OAuth 2.0 provider: its scopes only (no openid), state and PKCE, no nonce")
    func authorizationRequest() {
        let (parameters, _) = AuthorizationRequest.parameters(clientID: "c", redirectURI: "https://a/callback",
                                                               scopes: ["read:user", "user:email"], extraParameters: [],
                                                               openIDConnect: false)
        let names = parameters.map(\.0)
        #expect(parameters.first { $0.0 == "scope" }?.1 == "read:user user:email")
        #expect(names.contains("state") && names.contains("code_challenge") && !names.contains("nonce"))
    }

    @Test("read:org unticked by the user (not in the granted scope): no groups, and no call that would fail")
    func untickedReadOrg() async throws {
        let fake = http()
        let claims = try await GitHubUserAPI(baseURL: Self.api, http: fake, readsOrganizations: true)
            .claims(accessToken: "t", issuer: "https://github.com", grantedScope: "read:user,user:email")
        #expect(claims["groups"] == nil && fake.requests.count == 2)
        #expect(GitHubUserAPI.granted("read:org", in: "read:user,read:org") && GitHubUserAPI.granted("read:org", in: nil))
    }

    @Test("Lists are followed page by page (Link rel=next), at most ten pages")
    func pagination() async throws {
        let fake = http()
        let page = (0..<100).map { #"{"login":"org\#($0)"}"# }.joined(separator: ",")
        for n in 1...12 {
            fake.respond(to: Self.api + "/user/orgs?per_page=100&page=\(n)", with: ProviderHTTPResponse(
                status: 200, headers: [ProviderHTTPHeader("Link", #"<https://api.github.test/user/orgs?page=\#(n + 1)>; rel="next""#)],
                body: Array("[\(page)]".utf8)))
        }
        fake.respond(to: Self.api + "/user/teams?per_page=100&page=1", json: "[]")
        let claims = try await GitHubUserAPI(baseURL: Self.api, http: fake, readsOrganizations: true)
            .claims(accessToken: "t", issuer: "https://github.com")
        #expect(fake.requests.filter { $0.url.contains("/user/orgs") }.count == 10)
        #expect(claims["groups"]?.arrayValue?.count == 100)  // the same hundred names on every page, each once
    }
}
