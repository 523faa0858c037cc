import CryptoExtras

typealias TestRSAKey = JWTKit.Insecure.RSA.PrivateKey
import Foundation
import GatehouseOIDC
import JWTKit
import Synchronization
import GatehouseEncoding

/// A scripted ``ProviderHTTPClient``: answers by URL and records every request.
final class FakeProviderHTTP: ProviderHTTPClient {
    private let state = Mutex<(routes: [String: Result<ProviderHTTPResponse, ProviderTransportError>],
                               requests: [ProviderHTTPRequest])>(([:], []))

    init(_ routes: [String: ProviderHTTPResponse] = [:]) {
        state.withLock { $0.routes = routes.mapValues { .success($0) } }
    }

    func respond(to url: String, with response: ProviderHTTPResponse) {
        state.withLock { $0.routes[url] = .success(response) }
    }

    func respond(to url: String, json: String, status: Int = 200) {
        respond(to: url, with: ProviderHTTPResponse(status: status, headers: [ProviderHTTPHeader("Content-Type", "application/json")],
                                                    body: Array(json.utf8)))
    }

    func fail(_ url: String, with error: ProviderTransportError) {
        state.withLock { $0.routes[url] = .failure(error) }
    }

    var requests: [ProviderHTTPRequest] { state.withLock { $0.requests } }

    func send(_ request: ProviderHTTPRequest) async throws(ProviderTransportError) -> ProviderHTTPResponse {
        let route = state.withLock { state -> Result<ProviderHTTPResponse, ProviderTransportError>? in
            state.requests.append(request)
            return state.routes[request.url]
        }
        guard let route else { return ProviderHTTPResponse(status: 404) }
        return try route.get()
    }
}

/// Claims as a jwt-kit payload, so tests can sign anything, including invalid claim sets.
struct TestClaims: JWTPayload {
    var claims: [String: JSONValue]

    init(_ claims: [String: JSONValue]) { self.claims = claims }

    init(from decoder: any Decoder) throws {
        claims = try decoder.singleValueContainer().decode([String: JSONValue].self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(claims)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// A test OpenID provider: an RSA and an EC signing key, their JWKS, and token signing.
struct TestProvider {
    static let issuer = "https://idp.example.com"
    static let clientID = "gatehouse-client"
    static let jwksURI = "https://idp.example.com/jwks"

    /// Generated once per test process (2048-bit RSA generation is slow).
    static let rsaKey: TestRSAKey = {
        do { return try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048)) }
        catch { fatalError("RSA key generation failed: \(error)") }
    }()
    static let otherRSAKey: TestRSAKey = {
        do { return try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048)) }
        catch { fatalError("RSA key generation failed: \(error)") }
    }()
    let ecKey = ES256PrivateKey()

    static var metadata: ProviderMetadata {
        ProviderMetadata(issuer: issuer, authorizationEndpoint: "https://idp.example.com/authorize",
                         tokenEndpoint: "https://idp.example.com/token", jwksURI: jwksURI,
                         revocationEndpoint: "https://idp.example.com/revoke",
                         idTokenSigningAlgValuesSupported: ["RS256", "ES256"])
    }

    static func rsaJWK(_ key: TestRSAKey, kid: String, alg: String? = "RS256") -> [String: JSONValue] {
        let primitives: (modulus: Data, publicExponent: Data)
        do { primitives = try key.publicKey.getKeyPrimitives() } catch { fatalError("\(error)") }
        var jwk: [String: JSONValue] = ["kty": .string("RSA"), "kid": .string(kid), "use": .string("sig"),
                                        "n": .string(Base64URL.encode(primitives.modulus)),
                                        "e": .string(Base64URL.encode(primitives.publicExponent))]
        if let alg { jwk["alg"] = .string(alg) }
        return jwk
    }

    static func ecJWK(_ key: ES256PrivateKey, kid: String) -> [String: JSONValue] {
        let parameters = key.publicKey.parameters!
        return ["kty": .string("EC"), "crv": .string("P-256"), "kid": .string(kid), "use": .string("sig"),
                "alg": .string("ES256"), "x": .string(parameters.x), "y": .string(parameters.y)]
    }

    static func jwksJSON(_ keys: [[String: JSONValue]]) -> String {
        let data = try! JSONEncoder().encode(JSONValue.object(["keys": .array(keys.map(JSONValue.object))]))
        return String(decoding: data, as: UTF8.self)
    }

    /// The JWKS with `rsa-1` and `ec-1`.
    func jwks() -> String {
        Self.jwksJSON([Self.rsaJWK(Self.rsaKey, kid: "rsa-1"), Self.ecJWK(ecKey, kid: "ec-1")])
    }

    /// An HTTP fake serving ``jwks()`` at ``jwksURI``.
    func http() -> FakeProviderHTTP {
        let http = FakeProviderHTTP()
        http.respond(to: Self.jwksURI, json: jwks())
        return http
    }

    func signRS256(_ claims: [String: JSONValue], kid: String? = "rsa-1", key: TestRSAKey = TestProvider.rsaKey,
                   header: JWTHeader = JWTHeader()) async throws -> String {
        let signers = JWTKeyCollection()
        await signers.add(rsa: key, digestAlgorithm: .sha256)
        var header = header
        if let kid { header.kid = kid }
        return try await signers.sign(TestClaims(claims), header: header)
    }

    func signES256(_ claims: [String: JSONValue], kid: String? = "ec-1", header: JWTHeader = JWTHeader()) async throws -> String {
        let signers = JWTKeyCollection()
        await signers.add(ecdsa: ecKey)
        var header = header
        if let kid { header.kid = kid }
        return try await signers.sign(TestClaims(claims), header: header)
    }

    /// A token with an arbitrary header and signature bytes, for forged-algorithm tests.
    static func rawToken(header: [String: JSONValue], claims: [String: JSONValue], sign: ([UInt8]) -> [UInt8]) -> String {
        let encoder = JSONEncoder()
        let head = Base64URL.encode(Array(try! encoder.encode(JSONValue.object(header))))
        let body = Base64URL.encode(Array(try! encoder.encode(JSONValue.object(claims))))
        let signingInput = head + "." + body
        return signingInput + "." + Base64URL.encode(sign(Array(signingInput.utf8)))
    }

    /// ID-token claims that pass every check at `now` with `nonce`.
    static func idTokenClaims(now: Date, nonce: String = "nonce-123") -> [String: JSONValue] {
        ["iss": .string(issuer), "sub": .string("user-42"), "aud": .string(clientID),
         "exp": .number(now.timeIntervalSince1970 + 300), "iat": .number(now.timeIntervalSince1970 - 5),
         "nonce": .string(nonce), "sid": .string("session-7"), "email": .string("ada@example.com")]
    }

    /// Logout-token claims that pass every check at `now`.
    static func logoutTokenClaims(now: Date) -> [String: JSONValue] {
        ["iss": .string(issuer), "aud": .array([.string(clientID)]), "iat": .number(now.timeIntervalSince1970 - 2),
         "exp": .number(now.timeIntervalSince1970 + 120), "jti": .string("jti-1"), "sid": .string("session-7"),
         "events": .object([LogoutTokenValidator.backchannelLogoutEvent: .object([:])])]
    }
}
