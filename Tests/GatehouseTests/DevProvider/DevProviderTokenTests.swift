import DevProvider
import Foundation

import JWTKit
import Testing

/// The ID token as a relying party reads it.
struct VerifiedIDToken: JWTPayload {
    var iss: String
    var sub: String
    var aud: String
    var exp: Int
    var iat: Int
    var nonce: String?
    var sid: String
    var auth_time: Int
    var name: String?
    var preferred_username: String?
    var email: String?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Verifies `token` against the provider's published JWKS, as a relying party would.
func verifyWithPublishedKeys<Payload: JWTPayload>(_ token: String, fixture: DevProviderFixture,
                                                  as type: Payload.Type) async throws -> Payload {
    let jwks = await fixture.send("GET", "/jwks").text
    let keys = try await JWTKeyCollection().add(jwksJSON: jwks)
    return try await keys.verify(token, as: type)
}

/// The decoded JOSE header of a compact JWS.
func joseHeader(_ token: String) -> [String: Any] {
    guard var part = token.split(separator: ".").first.map(String.init) else { return [:] }
    part = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while part.count % 4 != 0 { part += "=" }
    guard let data = Data(base64Encoded: part) else { return [:] }
    return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
}

@Suite("Development provider: token endpoint")
struct DevProviderTokenTests {
    @Test("The code exchange with the right verifier returns tokens and an ID token that verifies with the JWKS")
    func codeExchange() async throws {
        let fixture = DevProviderFixture()
        let code = await fixture.authorizationCode()
        let response = await fixture.exchange(code)
        #expect(response.status == 200)
        #expect(response.headers["Cache-Control"] == "no-store")
        let json = response.json
        #expect(json["token_type"] as? String == "Bearer")
        #expect(json["expires_in"] as? Int == 300)
        #expect((json["access_token"] as? String)?.count == 43)
        #expect((json["refresh_token"] as? String)?.count == 43)
        #expect(json["scope"] as? String == "openid profile email offline_access")
        let idToken = try #require(json["id_token"] as? String)
        let claims = try await verifyWithPublishedKeys(idToken, fixture: fixture, as: VerifiedIDToken.self)
        let now = Int(fixture.clock.now().timeIntervalSince1970)
        #expect(claims.iss == DevProviderFixture.issuer)
        #expect(claims.aud == "gatehouse")
        #expect(claims.sub == "alice")
        #expect(claims.nonce == "nonce-456")
        #expect(claims.iat == now && claims.exp == now + 300 && claims.auth_time == now)
        #expect(claims.sid.count == 43)
        #expect(claims.preferred_username == "alice" && claims.name == "alice")
        #expect(claims.email == "alice@example.test")
        let header = joseHeader(idToken)
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == (await fixture.send("GET", "/jwks").json["keys"] as? [[String: Any]])?.first?["kid"] as? String)
        let statistics = fixture.provider.statistics
        #expect(statistics.authorizationCodeGrants == 1 && statistics.failedGrants == 0)
    }

    @Test("A public client exchanges its code without a secret (token_endpoint_auth_method none)")
    func publicClient() async {
        let fixture = DevProviderFixture()
        let code = await fixture.authorizationCode(clientID: "spa", redirectURI: "http://127.0.0.1:3000/cb")
        let response = await fixture.postForm("/token", [
            ("grant_type", "authorization_code"), ("code", code), ("client_id", "spa"),
            ("redirect_uri", "http://127.0.0.1:3000/cb"), ("code_verifier", DevProviderFixture.verifier),
        ])
        #expect(response.status == 200)
        #expect(response.json["id_token"] is String)
    }

    @Test("A wrong code_verifier is invalid_grant, and the code is spent (RFC 7636 §4.6)")
    func wrongVerifier() async {
        let fixture = DevProviderFixture()
        let code = await fixture.authorizationCode()
        let wrong = await fixture.exchange(code, verifier: String(repeating: "a", count: 43))
        #expect(wrong.status == 400)
        #expect(wrong.json["error"] as? String == "invalid_grant")
        #expect(wrong.headers["Cache-Control"] == "no-store")
        let retry = await fixture.exchange(code)
        #expect(retry.json["error"] as? String == "invalid_grant")
        #expect(fixture.provider.statistics.failedGrants == 2)
    }

    @Test("A missing code_verifier is invalid_request")
    func missingVerifier() async {
        let fixture = DevProviderFixture()
        let code = await fixture.authorizationCode()
        let response = await fixture.postForm("/token", [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", DevProviderFixture.redirectURI),
        ], headers: [DevProviderFixture.basic("gatehouse", "s3cret")])
        #expect(response.json["error"] as? String == "invalid_request")
    }

    @Test("Reusing a code is invalid_grant and revokes the tokens issued for it (RFC 6749 §4.1.2)")
    func codeReuse() async {
        let fixture = DevProviderFixture()
        let code = await fixture.authorizationCode()
        let first = await fixture.exchange(code).json
        let second = await fixture.exchange(code)
        #expect(second.status == 400)
        #expect(second.json["error"] as? String == "invalid_grant")
        let refresh = await fixture.refresh(first["refresh_token"] as? String ?? "")
        #expect(refresh.json["error"] as? String == "invalid_grant")
        let userinfo = await fixture.send("GET", "/userinfo", headers: [("Authorization", "Bearer \(first["access_token"] as? String ?? "")")])
        #expect(userinfo.status == 401)
    }

    @Test("A code older than 60 seconds is invalid_grant")
    func expiredCode() async {
        let fixture = DevProviderFixture()
        let code = await fixture.authorizationCode()
        fixture.clock.advance(seconds: 61)
        #expect(await fixture.exchange(code).json["error"] as? String == "invalid_grant")
    }

    @Test("The redirect_uri of the exchange must equal the authorization request's")
    func redirectURIMustMatch() async {
        let fixture = DevProviderFixture()
        let code = await fixture.authorizationCode()
        let response = await fixture.exchange(code, redirectURI: "http://127.0.0.1:8080/other")
        #expect(response.json["error"] as? String == "invalid_grant")
    }

    @Test("A code issued to one client cannot be redeemed by another")
    func codeBoundToClient() async {
        let fixture = DevProviderFixture()
        let code = await fixture.authorizationCode()
        let response = await fixture.postForm("/token", [
            ("grant_type", "authorization_code"), ("code", code), ("client_id", "spa"),
            ("redirect_uri", DevProviderFixture.redirectURI), ("code_verifier", DevProviderFixture.verifier),
        ])
        #expect(response.json["error"] as? String == "invalid_grant")
    }

    @Test("Client authentication failures are 401 invalid_client with WWW-Authenticate (RFC 6749 §5.2)",
          arguments: [
              [DevProviderFixture.basic("gatehouse", "wrong")],
              [DevProviderFixture.basic("nobody", "s3cret")],
              [],
              [("Authorization", "Basic !!!notbase64")],
          ])
    func clientAuthenticationFailures(headers: [(String, String)]) async {
        let fixture = DevProviderFixture()
        let code = await fixture.authorizationCode()
        var form = [("grant_type", "authorization_code"), ("code", code),
                    ("redirect_uri", DevProviderFixture.redirectURI), ("code_verifier", DevProviderFixture.verifier)]
        if headers.isEmpty { form.append(("client_id", "gatehouse")) }  // a confidential client without its secret
        let response = await fixture.postForm("/token", form, headers: headers)
        #expect(response.status == 401)
        #expect(response.json["error"] as? String == "invalid_client")
        #expect(response.headers["WWW-Authenticate"]?.hasPrefix("Basic") == true)
        #expect(response.headers["Cache-Control"] == "no-store")
        // Client authentication comes first: the code is untouched and still works.
        #expect(await fixture.exchange(code).status == 200)
    }

    @Test("client_secret_post authenticates; using two methods at once is invalid_request")
    func clientSecretPost() async {
        let fixture = DevProviderFixture()
        let code = await fixture.authorizationCode()
        let both = await fixture.postForm("/token", [
            ("grant_type", "authorization_code"), ("code", code), ("client_id", "gatehouse"), ("client_secret", "s3cret"),
        ], headers: [DevProviderFixture.basic("gatehouse", "s3cret")])
        #expect(both.json["error"] as? String == "invalid_request")
        let post = await fixture.postForm("/token", [
            ("grant_type", "authorization_code"), ("code", code), ("client_id", "gatehouse"), ("client_secret", "s3cret"),
            ("redirect_uri", DevProviderFixture.redirectURI), ("code_verifier", DevProviderFixture.verifier),
        ])
        #expect(post.status == 200)
    }

    @Test("Unsupported grant types, repeated parameters and non-form bodies are refused")
    func malformedRequests() async {
        let fixture = DevProviderFixture()
        let basic = DevProviderFixture.basic("gatehouse", "s3cret")
        let password = await fixture.postForm("/token", [("grant_type", "password")], headers: [basic])
        #expect(password.json["error"] as? String == "unsupported_grant_type")
        let none = await fixture.postForm("/token", [("code", "x")], headers: [basic])
        #expect(none.json["error"] as? String == "invalid_request")
        let repeated = await fixture.postForm("/token", [("grant_type", "authorization_code"), ("code", "a"), ("code", "b")],
                                              headers: [basic])
        #expect(repeated.json["error"] as? String == "invalid_request")
        let json = await fixture.send("POST", "/token", headers: [("Content-Type", "application/json"), basic],
                                      body: #"{"grant_type":"authorization_code"}"#)
        #expect(json.json["error"] as? String == "invalid_request")
        let brokenEscape = await fixture.send("POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded"), basic],
                                              body: "grant_type=%ZZ")
        #expect(brokenEscape.json["error"] as? String == "invalid_request")
        #expect(await fixture.send("GET", "/token").status == 405)
    }
}
