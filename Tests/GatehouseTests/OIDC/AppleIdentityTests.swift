import Crypto
import Foundation
import GatehouseEncoding
@testable import GatehouseOIDC
import Testing

@Suite("Sign in with Apple: the signed client secret, the user field, string booleans")
struct AppleIdentityTests {
    private func parts(_ jwt: String) throws -> (header: [String: JSONValue], claims: [String: JSONValue], signed: Data, signature: Data) {
        let pieces = jwt.split(separator: ".", omittingEmptySubsequences: false)
        #expect(pieces.count == 3)
        let headerBytes = try #require(Base64URL.decode(pieces[0]))
        let claimBytes = try #require(Base64URL.decode(pieces[1]))
        let signature = try #require(Base64URL.decode(pieces[2]))
        let header = try #require(try JSONValue.parse(headerBytes).objectValue)
        let claims = try #require(try JSONValue.parse(claimBytes).objectValue)
        return (header, claims, Data("\(pieces[0]).\(pieces[1])".utf8), Data(signature))
    }

    @Test("The client secret: ES256 under the .p8 key, kid the key id, iss the team, sub the client, aud Apple, a day's lifetime")
    func clientSecret() async throws {
        let key = P256.Signing.PrivateKey()
        let signing = try await ClientSigningKey(pem: key.pemRepresentation, keyID: "KEY1234567", algorithm: .es256)
        let secrets = AppleClientSecret(teamID: "TEAM123456", clientID: "com.example.web", key: signing)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let jwt = try await secrets.secret(now: now)
        let (header, claims, signed, signature) = try parts(jwt)
        #expect(header["alg"]?.stringValue == "ES256" && header["kid"]?.stringValue == "KEY1234567")
        #expect(claims["iss"]?.stringValue == "TEAM123456" && claims["sub"]?.stringValue == "com.example.web")
        #expect(claims["aud"]?.stringValue == "https://appleid.apple.com")
        #expect(claims["iat"]?.numberValue == 1_800_000_000 && claims["exp"]?.numberValue == 1_800_086_400)
        let ecdsa = try P256.Signing.ECDSASignature(rawRepresentation: signature)
        #expect(key.publicKey.isValidSignature(ecdsa, for: signed))
    }

    @Test("The same secret until a quarter of its lifetime is left, then a new one")
    func renewal() async throws {
        let signing = try await ClientSigningKey(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "KEY1234567", algorithm: .es256)
        let secrets = AppleClientSecret(teamID: "TEAM123456", clientID: "c", key: signing, lifetime: 4000)
        let first = try await secrets.secret(now: Date(timeIntervalSince1970: 1_000_000))
        #expect(try await secrets.secret(now: Date(timeIntervalSince1970: 1_002_999)) == first)
        let next = try await secrets.secret(now: Date(timeIntervalSince1970: 1_003_001))
        #expect(next != first)
        #expect(try parts(next).claims["iat"]?.numberValue == 1_003_001)
        #expect(AppleClientSecret(teamID: "T", clientID: "c", key: signing, lifetime: 1 << 40).lifetime == AppleClientSecret.maximumLifetime)
    }

    @Test("The token request carries the signed secret as client_secret (client_secret_post), no configured secret needed")
    func tokenRequest() async throws {
        let signing = try await ClientSigningKey(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "KEY1234567", algorithm: .es256)
        let http = FakeProviderHTTP()
        http.respond(to: "https://appleid.example/auth/token",
                     json: #"{"access_token":"a","token_type":"Bearer","expires_in":3600,"id_token":"h.p.s"}"#)
        let client = try TokenClient(tokenEndpoint: "https://appleid.example/auth/token", revocationEndpoint: nil,
                                     clientID: "com.example.web", clientSecret: nil, authMethod: .clientSecretPost, http: http,
                                     generatedSecret: AppleClientSecret(teamID: "TEAM123456", clientID: "com.example.web", key: signing))
        _ = try await client.exchangeCode(code: "c", codeVerifier: CodeVerifier.make(), redirectURI: "https://app.example/callback")
        let form = String(decoding: try #require(http.requests.first).body, as: UTF8.self)
        let secret = try #require(form.split(separator: "&").first { $0.hasPrefix("client_secret=") }?.dropFirst("client_secret=".count))
        #expect(try parts(String(secret)).claims["iss"]?.stringValue == "TEAM123456")
        #expect(form.contains("client_id=com.example.web"))
    }

    @Test("String booleans read as booleans; a relay address is marked private; other strings dropped")
    func booleans() {
        let claims = AppleIdentity.sessionClaims([
            "sub": .string("001.abc"), "email": .string("x7@PrivateRelay.AppleID.com"),
            "email_verified": .string("true"), "is_private_email": .string("false"),
        ], userField: nil)
        #expect(claims["email_verified"] == .bool(true))
        #expect(claims["is_private_email"] == .bool(true))  // the address says so, whatever the flag
        let odd = AppleIdentity.sessionClaims(["email_verified": .string("yes"), "email": .string("a@example.com")], userField: nil)
        #expect(odd["email_verified"] == nil && odd["is_private_email"] == nil)
    }

    @Test("The first authorization's user field gives name, given_name, family_name")
    func userField() {
        let claims = AppleIdentity.sessionClaims(["sub": .string("s")],
                                                 userField: #"{"name":{"firstName":"Ada","lastName":"Lovelace"},"email":"a@example.com"}"#)
        #expect(claims["name"] == .string("Ada Lovelace") && claims["given_name"] == .string("Ada"))
        #expect(claims["family_name"] == .string("Lovelace"))
        #expect(claims["email"] == nil)  // only the ID token says which email is the user's
        let onlyFirst = AppleIdentity.sessionClaims([:], userField: #"{"name":{"firstName":"Ada"}}"#)
        #expect(onlyFirst["name"] == .string("Ada") && onlyFirst["family_name"] == nil)
    }

    @Test("A user field that is not JSON, has non-string names, control characters or is too large is ignored",
          arguments: [
              "not json", #"{"name":"Ada"}"#, #"{"name":{"firstName":1}}"#, #"{"name":{"firstName":"A\u0007"}}"#,
              #"{"name":{"firstName":""#  + String(repeating: "a", count: 5000) + #""}}"#, #"[1,2]"#, #"{"name":{}}"#,
          ])
    func ignoredUserField(field: String) {
        let claims = AppleIdentity.sessionClaims(["sub": .string("s")], userField: field)
        #expect(claims["name"] == nil && claims["given_name"] == nil)
    }

    @Test("At refresh: the kept name stays, booleans read again")
    func refreshed() {
        let refreshed = AppleIdentity.refreshedClaims(["sub": .string("s"), "email_verified": .string("true")],
                                                      stored: ["sub": .string("s"), "name": .string("Ada Lovelace"),
                                                               "given_name": .string("Ada"), "family_name": .string("Lovelace")])
        #expect(refreshed["name"] == .string("Ada Lovelace") && refreshed["email_verified"] == .bool(true))
    }
}
