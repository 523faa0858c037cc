import Crypto
import Foundation
import GatehouseOIDC
import JWTKit
import Testing
import GatehouseEncoding

@Suite("client_secret_jwt (OIDC Core §9, RFC 7523 §2.2)")
struct ClientSecretJWTTests {
    static let tokenURL = "https://idp.example.com/token"
    static let okBody = #"{"access_token":"at-1","token_type":"Bearer","expires_in":3600,"id_token":"h.p.s"}"#

    private func formFields(_ request: ProviderHTTPRequest) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: request.body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            fields[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return fields
    }

    @Test("The token request carries an HS256 assertion under the secret, never the secret itself")
    func assertion() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: Self.tokenURL, json: Self.okBody)
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let client = try TokenClient(metadata: TestProvider.metadata, clientID: "my-client", clientSecret: "s3cret-value-of-at-least-32-bytes!!",
                                     authMethod: .clientSecretJWT, http: http, now: { now })
        _ = try await client.refresh(refreshToken: "rt-1")
        _ = try await client.refresh(refreshToken: "rt-1")
        let first = formFields(http.requests[0]), second = formFields(http.requests[1])
        #expect(http.requests[0].header("Authorization") == nil)
        #expect(first["client_secret"] == nil && !String(decoding: http.requests[0].body, as: UTF8.self).contains("s3cret-value-of-at-least-32-bytes!!"))
        #expect(first["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        #expect(first["client_id"] == "my-client")
        let jwt = try #require(first["client_assertion"])

        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: "s3cret-value-of-at-least-32-bytes!!"), digestAlgorithm: .sha256)
        let claims = try await keys.verify(jwt, as: TestClaims.self).claims
        #expect(claims["iss"] == .string("my-client") && claims["sub"] == .string("my-client"))
        #expect(claims["aud"] == .string(Self.tokenURL))
        #expect(claims["iat"] == .number(1_700_000_000) && claims["exp"] == .number(1_700_000_060))
        // A fresh jti for each request: the provider may refuse a replayed assertion.
        #expect(claims["jti"] != nil && first["client_assertion"] != second["client_assertion"])
    }

    @Test("client_secret_jwt needs a secret")
    func needsSecret() {
        #expect(throws: TokenEndpointError.self) {
            try TokenClient(metadata: TestProvider.metadata, clientID: "c", clientSecret: nil, authMethod: .clientSecretJWT,
                            http: FakeProviderHTTP())
        }
    }
}
