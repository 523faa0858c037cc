import Crypto
import FoundationEssentials
import Testing
@testable import GatehouseEncoding
@testable import GatehouseOIDC

@Suite("The identity assertion's key and claims (SPEC \"Identity for your own APIs\")")
struct AssertionSigningKeyTests {
    private let secret = [UInt8](repeating: 7, count: 32)
    private let other = [UInt8](repeating: 9, count: 32)

    private func decode(_ part: Substring) -> [String: JSONValue] {
        guard let bytes = Base64URL.decode(part), case .object(let object)? = try? JSONValue.parse(bytes) else { return [:] }
        return object
    }

    @Test("The same secret key gives the same key on every instance; another gives another")
    func derivation() {
        let a = AssertionSigningKey(secretKey: secret), b = AssertionSigningKey(secretKey: secret)
        #expect(a.keyID == b.keyID)
        #expect(a.publicJWK == b.publicJWK)
        #expect(AssertionSigningKey(secretKey: other).keyID != a.keyID)
    }

    @Test("kid is the RFC 7638 thumbprint of the public JWK")
    func thumbprint() throws {
        let key = AssertionSigningKey(secretKey: secret)
        guard case .string(let x)? = key.publicJWK["x"], case .string(let y)? = key.publicJWK["y"] else {
            Issue.record("no coordinates"); return
        }
        let canonical = "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"\(x)\",\"y\":\"\(y)\"}"
        #expect(key.keyID == Base64URL.encode(SHA256.hash(data: Array(canonical.utf8))))
        #expect(key.publicJWK["kid"] == .string(key.keyID))
        #expect(key.publicJWK["alg"] == .string("ES256"))
        #expect(key.publicJWK["d"] == nil)
    }

    @Test("A signed assertion verifies with the published key, and not after a change")
    func signature() throws {
        let key = AssertionSigningKey(secretKey: secret)
        let token = try #require(key.sign(["sub": .string("alice"), "iat": .number(1_700_000_000)]))
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        #expect(decode(parts[0]) == ["alg": .string("ES256"), "kid": .string(key.keyID), "typ": .string("JWT")])
        #expect(decode(parts[1])["sub"] == .string("alice"))
        guard case .string(let x)? = key.publicJWK["x"], case .string(let y)? = key.publicJWK["y"] else { return }
        let publicKey = try P256.Signing.PublicKey(rawRepresentation: Base64URL.decode(x)! + Base64URL.decode(y)!)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: Base64URL.decode(parts[2])!)
        #expect(publicKey.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)))
        #expect(!publicKey.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])x".utf8)))
    }

    @Test("The key set has the current key first and the previous one while it differs")
    func keySet() {
        let current = AssertionSigningKey(secretKey: secret), previous = AssertionSigningKey(secretKey: other)
        func kids(_ document: [UInt8]) -> [String] {
            guard case .object(let object)? = try? JSONValue.parse(document), case .array(let keys)? = object["keys"] else { return [] }
            return keys.compactMap { key in
                if case .object(let jwk) = key, case .string(let kid)? = jwk["kid"] { return kid }
                return nil
            }
        }
        #expect(kids(AssertionSigningKey.keySet(current: current, previous: nil)) == [current.keyID])
        #expect(kids(AssertionSigningKey.keySet(current: current, previous: previous)) == [current.keyID, previous.keyID])
        #expect(kids(AssertionSigningKey.keySet(current: current, previous: current)) == [current.keyID])
    }

    @Test("The assertion's claims: the contract's names, the user's claims when typed right, nothing else")
    func claims() {
        let json = Array(#"{"iss":"https://idp.example","sub":"alice","email":"a@example.com","email_verified":"true","name":"Alice","preferred_username":"al","groups":["admins","a,b",3],"nonce":"n","at_hash":"x"}"#.utf8)
        let facts = IdentityAssertion(claimsJSON: json, subject: "alice", provider: "google",
                                      providerIssuer: "https://accounts.google.com", sessionHandle: "h1")
        let claims = facts.claims(issuer: "https://app.example", audience: "orders", issuedAt: 100, lifetime: 60)
        #expect(claims["iss"] == .string("https://app.example"))
        #expect(claims["aud"] == .string("orders"))
        #expect(claims["idp"] == .string("google"))
        // The configured issuer, not the ID token's spelling of it (Google's may lack the scheme).
        #expect(claims["idp_iss"] == .string("https://accounts.google.com"))
        #expect(claims["sid"] == .string("h1"))
        #expect(claims["iat"] == .number(100) && claims["exp"] == .number(160))
        #expect(claims["email_verified"] == .bool(true))
        #expect(claims["groups"] == .array([.string("admins"), .string("a,b")]))
        #expect(claims["nonce"] == nil && claims["at_hash"] == nil)
        let headers = facts.headerValues
        #expect(headers.map(\.name) == ["X-Forwarded-User", "X-Forwarded-Provider", "X-Forwarded-Email",
                                        "X-Forwarded-Preferred-Username", "X-Forwarded-Groups"])
        #expect(headers[1].value == "google")
        // A group with a comma would read as two: left out of the header.
        #expect(headers.last?.value == "admins")
    }

    @Test("The email header goes out only for a verified email", arguments: [
        (#""email_verified":false"#, false), (#""email_verified":"false""#, false), ("", false),
        (#""email_verified":"yes""#, false), (#""email_verified":1"#, false),
        (#""email_verified":true"#, true), (#""email_verified":"true""#, true),
    ])
    func unverifiedEmail(verified: String, sent: Bool) {
        let comma = verified.isEmpty ? "" : ","
        let json = Array(#"{"email":"ceo@example.com"\#(comma)\#(verified)}"#.utf8)
        let facts = IdentityAssertion(claimsJSON: json, subject: "00u-ceo", provider: "social",
                                      providerIssuer: "https://idp", sessionHandle: "h")
        #expect(facts.headerValues.contains { $0.name == "X-Forwarded-Email" } == sent)
        #expect(facts.headerValues.contains { $0.name == "X-Forwarded-Provider" && $0.value == "social" })
    }

    @Test("Groups come from the provider's groups claim (a dotted path here), in the headers and the assertion")
    func groupsClaim() {
        let json = Array(#"{"realm_access":{"roles":["ops","user"]},"groups":["ignored"]}"#.utf8)
        let facts = IdentityAssertion(claimsJSON: json, subject: "u", provider: "kc", providerIssuer: "https://kc",
                                      sessionHandle: "h", groupsClaim: "realm_access.roles")
        #expect(facts.headerValues.last?.value == "ops,user")
        #expect(facts.claims(issuer: "i", audience: "a", issuedAt: 1, lifetime: 60)["groups"]
            == .array([.string("ops"), .string("user")]))
    }

    @Test("A session with few claims gives only what it has")
    func sparse() {
        let facts = IdentityAssertion(claimsJSON: Array("{}".utf8), subject: "u1", provider: "default",
                                      providerIssuer: "https://idp", sessionHandle: "h")
        let claims = facts.claims(issuer: "https://app", audience: "a", issuedAt: 1, lifetime: 60)
        #expect(Set(claims.keys) == ["iss", "aud", "sub", "idp", "idp_iss", "sid", "iat", "exp"])
        #expect(claims["idp_iss"] == .string("https://idp"))
        #expect(facts.headerValues.map(\.name) == ["X-Forwarded-User", "X-Forwarded-Provider"])
        #expect(IdentityAssertion(claimsJSON: Array("not json".utf8), subject: "u", provider: "p", providerIssuer: "i",
                                  sessionHandle: "h").userClaims.isEmpty)
    }
}
