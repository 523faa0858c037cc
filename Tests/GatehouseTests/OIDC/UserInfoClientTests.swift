import Foundation
import GatehouseOIDC
import Testing

@Suite("UserInfo (OIDC Core §5.3)")
struct UserInfoClientTests {
    static let endpoint = "https://idp.example.com/userinfo"

    @Test("The access token goes in the Authorization header; a matching sub returns the claims")
    func bearerHeader() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: Self.endpoint, json: #"{"sub":"user-42","name":"Ada","email":"ada@example.com"}"#)
        let claims = try await UserInfoClient(endpoint: Self.endpoint, http: http).fetch(accessToken: "at-1", expectedSubject: "user-42")
        #expect(claims["name"] == .string("Ada"))
        let request = try #require(http.requests.first)
        #expect(request.method == .get && request.header("Authorization") == "Bearer at-1")
        #expect(request.body.isEmpty)
    }

    @Test("Another sub, a missing sub, a JWT answer or an error status is refused")
    func refused() async throws {
        let http = FakeProviderHTTP()
        let client = UserInfoClient(endpoint: Self.endpoint, http: http)
        http.respond(to: Self.endpoint, json: #"{"sub":"mallory"}"#)
        await #expect(throws: UserInfoError.subjectMismatch) { try await client.fetch(accessToken: "at", expectedSubject: "user-42") }
        http.respond(to: Self.endpoint, json: #"{"name":"x"}"#)
        await #expect(throws: UserInfoError.malformed("sub is missing or not a string")) {
            try await client.fetch(accessToken: "at", expectedSubject: "user-42")
        }
        http.respond(to: Self.endpoint, with: ProviderHTTPResponse(status: 200, headers: [ProviderHTTPHeader("Content-Type", "application/jwt")],
                                                                   body: Array("eyJ.eyJ.sig".utf8)))
        await #expect(throws: UserInfoError.signedResponseUnsupported) { try await client.fetch(accessToken: "at", expectedSubject: "user-42") }
        http.respond(to: Self.endpoint, json: #"{"error":"invalid_token"}"#, status: 401)
        await #expect(throws: UserInfoError.unexpectedStatus(401)) { try await client.fetch(accessToken: "at", expectedSubject: "user-42") }
    }

    @Test("UserInfo adds claims; ID-token claims and protocol claims are never replaced")
    func merge() {
        let idToken: [String: JSONValue] = ["sub": .string("user-42"), "iss": .string("https://idp"), "email": .string("id@x")]
        let userinfo: [String: JSONValue] = ["sub": .string("user-42"), "email": .string("ui@x"), "name": .string("Ada"),
                                             "iss": .string("https://evil"), "aud": .string("evil"), "nonce": .string("n"),
                                             "exp": .number(1)]
        let merged = UserInfoClaims.merge(idToken: idToken, userinfo: userinfo)
        #expect(merged == ["sub": .string("user-42"), "iss": .string("https://idp"), "email": .string("id@x"),
                           "name": .string("Ada")])
    }
}

@Suite("Signed UserInfo (OIDC Core §5.3.2)")
struct SignedUserInfoTests {
    let provider = TestProvider()

    private func client(_ http: FakeProviderHTTP) -> UserInfoClient {
        let keys = KeySet(jwksURI: TestProvider.jwksURI, http: http, allowedAlgorithms: [.rs256])
        return UserInfoClient(endpoint: UserInfoClientTests.endpoint, http: http, signed: UserInfoClient.SignedResponses(
            keySet: keys, issuer: TestProvider.issuer, clientID: TestProvider.clientID))
    }

    private func answer(_ http: FakeProviderHTTP, _ jwt: String) {
        http.respond(to: UserInfoClientTests.endpoint, with: ProviderHTTPResponse(
            status: 200, headers: [ProviderHTTPHeader("Content-Type", "application/jwt; charset=utf-8")], body: Array(jwt.utf8)))
    }

    private let claims: [String: JSONValue] = ["iss": .string(TestProvider.issuer), "aud": .string(TestProvider.clientID),
                                               "sub": .string("user-42"), "name": .string("Ada")]

    @Test("A signed answer with the right sub (and iss, aud when present) is accepted")
    func accepted() async throws {
        let http = provider.http()
        answer(http, try await provider.signRS256(claims))
        let result = try await client(http).fetch(accessToken: "at", expectedSubject: "user-42")
        #expect(result["name"] == .string("Ada"))
        // Providers omit iss and aud although §5.3.2 asks for them: tolerated when absent.
        answer(http, try await provider.signRS256(["sub": .string("user-42")]))
        #expect(try await client(http).fetch(accessToken: "at", expectedSubject: "user-42")["sub"] == .string("user-42"))
    }

    @Test("A bad signature, a foreign aud or iss, another sub, or an unpinned algorithm is refused")
    func refused() async throws {
        let http = provider.http()
        answer(http, try await provider.signRS256(claims, key: TestProvider.otherRSAKey))
        await #expect(throws: UserInfoError.signature(.invalidSignature(kid: "rsa-1"))) {
            try await client(http).fetch(accessToken: "at", expectedSubject: "user-42")
        }
        var foreign = claims
        foreign["aud"] = .string("someone-else")
        answer(http, try await provider.signRS256(foreign))
        await #expect(throws: UserInfoError.signedClaimMismatch("aud does not contain the client id \"\(TestProvider.clientID)\"")) {
            try await client(http).fetch(accessToken: "at", expectedSubject: "user-42")
        }
        foreign = claims
        foreign["iss"] = .string("https://evil.example")
        answer(http, try await provider.signRS256(foreign))
        await #expect(throws: UserInfoError.signedClaimMismatch("iss is not the issuer \"\(TestProvider.issuer)\"")) {
            try await client(http).fetch(accessToken: "at", expectedSubject: "user-42")
        }
        answer(http, try await provider.signRS256(claims))
        await #expect(throws: UserInfoError.subjectMismatch) {
            try await client(http).fetch(accessToken: "at", expectedSubject: "user-43")
        }
        answer(http, try await provider.signES256(claims))
        await #expect(throws: UserInfoError.signature(.algorithmNotAllowed("ES256", allowed: ["RS256"]))) {
            try await client(http).fetch(accessToken: "at", expectedSubject: "user-42")
        }
    }
}
