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

@Suite("Aggregated and distributed claims (OIDC Core 5.6.2)")
struct ExternalClaimsTests {
    let provider = TestProvider()

    private func client(_ http: FakeProviderHTTP) -> UserInfoClient {
        let keys = KeySet(jwksURI: TestProvider.jwksURI, http: http, allowedAlgorithms: [.rs256])
        return UserInfoClient(endpoint: UserInfoClientTests.endpoint, http: http, signed: UserInfoClient.SignedResponses(
            keySet: keys, issuer: TestProvider.issuer, clientID: TestProvider.clientID))
    }

    @Test("An aggregated JWT the provider signed gives exactly the claims mapped to it")
    func aggregated() async throws {
        let http = provider.http()
        let jwt = try await provider.signRS256(["iss": .string(TestProvider.issuer), "address": .string("1 Main St"),
                                                "phone_number": .string("+1 555"), "sub": .string("other")])
        http.respond(to: UserInfoClientTests.endpoint, json: #"""
            {"sub":"user-42","name":"Ada","_claim_names":{"address":"src1","name":"src1"},"_claim_sources":{"src1":{"JWT":"\#(jwt)"}}}
            """#)
        let claims = try await client(http).fetch(accessToken: "at", expectedSubject: "user-42")
        #expect(claims["address"] == .string("1 Main St"))
        #expect(claims["phone_number"] == nil)  // not mapped to the source
        #expect(claims["name"] == .string("Ada"))  // the provider's own claim is not replaced
        #expect(claims["sub"] == .string("user-42") && claims["_claim_names"] == nil && claims["_claim_sources"] == nil)
    }

    @Test("A distributed source is fetched with its access token and verified; a forged or plain-http one adds nothing")
    func distributed() async throws {
        let http = provider.http()
        let jwt = try await provider.signRS256(["iss": .string(TestProvider.issuer), "credit_score": .number(650)])
        http.respond(to: "https://claims.example.com/score", with: ProviderHTTPResponse(status: 200, body: Array(jwt.utf8)))
        let forged = try await provider.signRS256(["credit_score": .number(900)], key: TestProvider.otherRSAKey)
        http.respond(to: "https://claims.example.com/forged", with: ProviderHTTPResponse(status: 200, body: Array(forged.utf8)))
        http.respond(to: UserInfoClientTests.endpoint, json: #"""
            {"sub":"user-42","_claim_names":{"credit_score":"a","payment":"b","plain":"c"},
             "_claim_sources":{"a":{"endpoint":"https://claims.example.com/score","access_token":"ksj3n283dke"},
                               "b":{"endpoint":"https://claims.example.com/forged"},
                               "c":{"endpoint":"http://claims.example.com/plain"}}}
            """#)
        let claims = try await client(http).fetch(accessToken: "at", expectedSubject: "user-42")
        #expect(claims["credit_score"] == .number(650) && claims["payment"] == nil && claims["plain"] == nil)
        let fetched = try #require(http.requests.first { $0.url == "https://claims.example.com/score" })
        #expect(fetched.header("Authorization") == "Bearer ksj3n283dke")
        #expect(!http.requests.contains { $0.url.hasPrefix("http://claims") })
        #expect(ExternalClaims.isAllowed("http://127.0.0.1:9/x") && ExternalClaims.isAllowed("http://[::1]:9/x"))
        #expect(!ExternalClaims.isAllowed("http://127.0.0.1.evil.com/x") && !ExternalClaims.isAllowed("http://127.0.0.1@evil.com/x"))
        #expect(!ExternalClaims.isAllowed("ftp://claims.example.com/x") && ExternalClaims.isAllowed("https://claims.example.com/x"))
    }
}
