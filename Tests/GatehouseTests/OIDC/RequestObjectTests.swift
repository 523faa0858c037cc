import Crypto
import Foundation
import GatehouseEncoding
@testable import GatehouseOIDC
import Testing

@Suite("Request objects (RFC 9101) and the claims request (OIDC Core 5.5)")
struct RequestObjectTests {
    static let parameters: [(String, String)] = [
        ("response_type", "code"), ("client_id", "spa"), ("redirect_uri", "https://app.example/callback"),
        ("scope", "openid email"), ("state", "s-123"), ("nonce", "n-456"), ("code_challenge", "abc"),
        ("code_challenge_method", "S256"), ("max_age", "300"), ("claims", #"{"id_token":{"acr":{"essential":true}}}"#),
    ]

    @Test("Every parameter a claim, signed with the client key, typ oauth-authz-req+jwt, iss the client, aud the provider")
    func signed() async throws {
        let key = P256.Signing.PrivateKey()
        let signing = try await ClientSigningKey(pem: key.pemRepresentation, keyID: "k1", algorithm: .es256)
        let object = try await RequestObject.signed(Self.parameters, clientID: "spa", audience: "https://idp.example",
                                                    key: signing, now: Date(timeIntervalSince1970: 1_800_000_000))
        let parts = object.split(separator: ".")
        #expect(parts.count == 3)
        let headerBytes = try #require(Base64URL.decode(parts[0]))
        let claimBytes = try #require(Base64URL.decode(parts[1]))
        let signatureBytes = try #require(Base64URL.decode(parts[2]))
        let header = try #require(try JSONValue.parse(headerBytes).objectValue)
        let claims = try #require(try JSONValue.parse(claimBytes).objectValue)
        #expect(header["typ"] == .string("oauth-authz-req+jwt") && header["alg"] == .string("ES256") && header["kid"] == .string("k1"))
        #expect(claims["iss"] == .string("spa") && claims["aud"] == .string("https://idp.example"))
        #expect(claims["state"] == .string("s-123") && claims["nonce"] == .string("n-456") && claims["max_age"] == .number(300))
        #expect(claims["claims"]?.objectValue?["id_token"] != nil)
        #expect(claims["exp"] == .number(1_800_000_300) && claims["nbf"] == .number(1_800_000_000) && claims["jti"] != nil)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: signatureBytes)
        #expect(key.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)))
    }

    @Test("Beside the object only client_id, response_type, scope, redirect_uri and request travel")
    func outer() {
        let outer = RequestObject.outerParameters(Self.parameters, requestObject: "h.p.s")
        #expect(outer.map(\.0) == ["response_type", "client_id", "redirect_uri", "scope", "request"])
        #expect(!outer.contains { $0.1 == "s-123" || $0.1 == "n-456" })
    }

    @Test("The claims request: userinfo and id_token members only, each claim null or an object; written compact")
    func claimsRequest() throws {
        let ok = try ClaimsRequest.validated(#" { "userinfo": {"email": null, "nickname": {"essential": true}}, "id_token": {"acr": {"values": ["a","b"]}} } "#).get()
        #expect(!ok.contains(" ") && ok.contains("\"userinfo\""))
        for bad in ["[]", "{}", "not json", #"{"access_token":{}}"#, #"{"userinfo":[]}"#, #"{"userinfo":{"email":1}}"#,
                    #"{"userinfo":{"email":{"essential":"yes"}}}"#, #"{"id_token":{"acr":{"values":"a"}}}"#] {
            #expect(throws: ClaimsRequestError.self) { try ClaimsRequest.validated(bad).get() }
        }
    }
}
