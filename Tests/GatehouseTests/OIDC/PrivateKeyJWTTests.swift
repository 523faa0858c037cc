import CryptoExtras
import Foundation
import GatehouseOIDC
import JWTKit
import Testing
import GatehouseEncoding

@Suite("private_key_jwt (OIDC Core §9, RFC 7523 §2.2)")
struct PrivateKeyJWTTests {
    static let tokenURL = "https://idp.example.com/token"
    static let okBody = #"{"access_token":"at-1","token_type":"Bearer","expires_in":3600,"id_token":"h.p.s"}"#

    private func assertion(in request: ProviderHTTPRequest) -> String? {
        for pair in String(decoding: request.body, as: UTF8.self).split(separator: "&") where pair.hasPrefix("client_assertion=") {
            return String(pair.dropFirst("client_assertion=".count)).removingPercentEncoding
        }
        return nil
    }

    @Test("An RS256 assertion signed with the client's key, with its kid; a P-256 key signs ES256")
    func assertions() async throws {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let ec = ES256PrivateKey()
        for (pem, kid) in [(rsa.pemRepresentation, "client-rsa"), (ec.pemRepresentation, "client-ec")] {
            #expect(ClientSigningKey.problem(pem: pem) == nil)
            let http = FakeProviderHTTP()
            http.respond(to: Self.tokenURL, json: Self.okBody)
            let key = try await ClientSigningKey(pem: pem, keyID: kid)
            let client = try TokenClient(metadata: TestProvider.metadata, clientID: "my-client", clientSecret: nil,
                                         authMethod: .privateKeyJWT, http: http, signingKey: key)
            _ = try await client.refresh(refreshToken: "rt-1")
            let request = try #require(http.requests.first)
            #expect(request.header("Authorization") == nil)
            let jwt = try #require(assertion(in: request))
            let verifiers = JWTKeyCollection()
            if kid == "client-rsa" {
                await verifiers.add(rsa: try Insecure.RSA.PublicKey(pem: rsa.publicKey.pemRepresentation), digestAlgorithm: .sha256,
                                    kid: JWKIdentifier(string: kid))
            } else {
                await verifiers.add(ecdsa: ec.publicKey, kid: JWKIdentifier(string: kid))
            }
            let claims = try await verifiers.verify(jwt, as: TestClaims.self).claims
            #expect(claims["iss"] == .string("my-client") && claims["sub"] == .string("my-client"))
            #expect(claims["aud"] == .string(Self.tokenURL) && claims["jti"] != nil)
        }
    }

    @Test("A PEM that is no RSA or P-256 private key is a configuration problem")
    func badKey() async {
        #expect(ClientSigningKey.problem(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----") != nil)
        await #expect(throws: TokenEndpointError.self) { try await ClientSigningKey(pem: "garbage", keyID: nil) }
        #expect(throws: TokenEndpointError.self) {
            try TokenClient(metadata: TestProvider.metadata, clientID: "c", clientSecret: nil, authMethod: .privateKeyJWT,
                            http: FakeProviderHTTP())
        }
    }
}
