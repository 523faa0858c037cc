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
