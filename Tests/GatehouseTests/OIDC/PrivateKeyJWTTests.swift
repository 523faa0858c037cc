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

    @Test("An RSA key signs PS256 when asked; the assertion verifies as PS256 and not as RS256")
    func pss() async throws {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let http = FakeProviderHTTP()
        http.respond(to: Self.tokenURL, json: Self.okBody)
        let key = try await ClientSigningKey(pem: rsa.pemRepresentation, keyID: "k", algorithm: .ps256)
        #expect(key.algorithm == .ps256)
        var client = try TokenClient(metadata: TestProvider.metadata, clientID: "my-client", clientSecret: nil,
                                     authMethod: .privateKeyJWT, http: http, signingKey: key)
        client.assertionAudience = "https://idp.example.com"
        _ = try await client.refresh(refreshToken: "rt-1")
        let sent = try #require(http.requests.first)
        let jwt = try #require(assertion(in: sent))
        let headerBytes = try #require(Base64URL.decode(jwt.split(separator: ".")[0]))
        let header = try JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any]
        #expect(header?["alg"] as? String == "PS256" && header?["kid"] as? String == "k")
        let publicKey = try Insecure.RSA.PublicKey(pem: rsa.publicKey.pemRepresentation)
        let pssVerifiers = JWTKeyCollection()
        await pssVerifiers.add(pss: publicKey, digestAlgorithm: .sha256, kid: JWKIdentifier(string: "k"))
        let claims = try await pssVerifiers.verify(jwt, as: TestClaims.self).claims
        // FAPI 2.0 / draft-ietf-oauth-rfc7523bis: the issuer, as a single string.
        #expect(claims["aud"] == .string("https://idp.example.com"))
        let rsVerifiers = JWTKeyCollection()
        await rsVerifiers.add(rsa: publicKey, digestAlgorithm: .sha256, kid: JWKIdentifier(string: "k"))
        await #expect(throws: (any Error).self) { try await rsVerifiers.verify(jwt, as: TestClaims.self) }
    }

    @Test("The algorithm: as configured, else ES256 for P-256 and for RSA PS256 under fapi2 or when only PS256 is listed")
    func choice() {
        #expect(ClientSigningKey.algorithm(for: .p256, requested: nil, fapi2: false, advertised: nil) == .es256)
        #expect(ClientSigningKey.algorithm(for: .rsa, requested: nil, fapi2: false, advertised: nil) == .rs256)
        #expect(ClientSigningKey.algorithm(for: .rsa, requested: nil, fapi2: false, advertised: ["RS256", "PS256"]) == .rs256)
        #expect(ClientSigningKey.algorithm(for: .rsa, requested: nil, fapi2: false, advertised: ["PS256", "ES256"]) == .ps256)
        #expect(ClientSigningKey.algorithm(for: .rsa, requested: nil, fapi2: true, advertised: ["RS256", "PS256"]) == .ps256)
        #expect(ClientSigningKey.algorithm(for: .rsa, requested: .rs256, fapi2: false, advertised: ["PS256"]) == .rs256)
    }

    @Test("A key that cannot sign the configured algorithm, or RS256 under fapi2, is a configuration problem")
    func mismatches() async throws {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation
        let ec = ES256PrivateKey().pemRepresentation
        #expect(ClientSigningKey.problem(pem: rsa, requested: .ps256, fapi2: true) == nil)
        #expect(ClientSigningKey.problem(pem: rsa, requested: nil, fapi2: true) == nil)
        #expect(ClientSigningKey.problem(pem: rsa, requested: .rs256, fapi2: true)?.contains("fapi2") == true)
        #expect(ClientSigningKey.problem(pem: rsa, requested: .es256)?.contains("RSA key") == true)
        #expect(ClientSigningKey.problem(pem: ec, requested: .ps256)?.contains("P-256 key") == true)
        await #expect(throws: TokenEndpointError.self) { try await ClientSigningKey(pem: ec, keyID: nil, algorithm: .rs256) }
        await #expect(throws: TokenEndpointError.self) { try await ClientSigningKey(pem: rsa, keyID: nil, algorithm: .es256) }
        // Below 2048 bits an RSA key is refused outright.
        let small = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024)).pemRepresentation
        #expect(ClientSigningKey.keyType(pem: small) == nil)
    }

    @Test("A DPoP nonce retry signs a new assertion: the first one's jti is spent")
    func retrySignsAgain() async throws {
        let http = ScriptedHTTP([
            ProviderHTTPResponse(status: 400, headers: [ProviderHTTPHeader("DPoP-Nonce", "n-1")],
                                 body: Array(#"{"error":"use_dpop_nonce"}"#.utf8)),
            ProviderHTTPResponse(status: 200, headers: [], body: Array(#"{"access_token":"at","token_type":"DPoP","expires_in":60}"#.utf8)),
        ])
        let key = try await ClientSigningKey(pem: ES256PrivateKey().pemRepresentation, keyID: nil)
        let client = try TokenClient(metadata: TestProvider.metadata, clientID: "my-client", clientSecret: nil,
                                     authMethod: .privateKeyJWT, http: http, signingKey: key)
        _ = try await client.refresh(refreshToken: "rt-1", dpop: DPoPKey())
        #expect(http.sent.count == 2)
        let first = try #require(assertion(in: http.sent[0])), second = try #require(assertion(in: http.sent[1]))
        #expect(first != second)
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
