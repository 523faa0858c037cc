import Crypto
import CryptoExtras
import Foundation
import GatehouseEncoding
@testable import GatehouseOIDC
import Testing

@Suite("Request objects encrypted to the provider (JWE), and passed by reference")
struct JWEEncrypterTests {
    static let plaintext = JWEDecrypterTests.plaintext

    /// The receiving side (the provider's private keys) as the client keys the decrypter opens with.
    static func receiver() throws -> (rsa: ClientEncryptionKey, ec: ClientEncryptionKey) { try JWEDecrypterTests.keys() }

    /// The provider's JWKS: its public encryption halves, and a signing key to be skipped.
    static func jwks(_ keys: [[String: JSONValue]]) -> [UInt8] {
        JSONValueWriter.sortedKeys(["keys": .array(keys.map(JSONValue.object))])!
    }

    @Test("Every key management with every content encryption opens with the provider's private key", arguments: [
        ("RSA-OAEP", "A128CBC-HS256"), ("RSA-OAEP", "A256GCM"), ("RSA-OAEP-256", "A128CBC-HS256"), ("RSA-OAEP-256", "A256GCM"),
        ("RSA-OAEP-256", "A256CBC-HS512"), ("ECDH-ES", "A128CBC-HS256"), ("ECDH-ES", "A256GCM"),
        ("ECDH-ES+A128KW", "A128CBC-HS256"), ("ECDH-ES+A128KW", "A256GCM"), ("ECDH-ES+A256KW", "A128CBC-HS256"),
        ("ECDH-ES+A256KW", "A256CBC-HS512"),
    ])
    func roundTrip(alg: String, enc: String) throws {
        let (rsa, ec) = try Self.receiver()
        let published = ProviderEncryptionKey.keys(inJWKS: Self.jwks([rsa.publicJWK, ec.publicJWK]))
        #expect(published.count == 2)
        let choice = try #require(JWEEncryptionChoice.choose(algorithms: [alg], contents: [enc], keys: published))
        #expect(choice.keyEncryption.rawValue == alg && choice.contentEncryption == enc)
        let token = try JWEEncrypter.encrypt(Self.plaintext, with: choice)
        #expect(JWEDecrypter.isJWE(token))
        let header = try JSONValue.parse(Base64URL.decode(token.split(separator: ".")[0])!).objectValue!
        #expect(header["cty"] == .string("JWT") && header["kid"] == .string(alg.hasPrefix("RSA") ? rsa.keyID : ec.keyID))
        #expect(try JWEDecrypter(keys: [rsa, ec]).decrypt(token) == Self.plaintext)
        // Two encryptions of one object share nothing (a fresh content key and IV each).
        #expect(try JWEEncrypter.encrypt(Self.plaintext, with: choice) != token)
    }

    @Test("The choice: Gatehouse's preference among what the provider lists and a key fits; never RSA1_5")
    func choice() throws {
        let (rsa, ec) = try Self.receiver()
        let both = ProviderEncryptionKey.keys(inJWKS: Self.jwks([rsa.publicJWK, ec.publicJWK]))
        let onlyEC = ProviderEncryptionKey.keys(inJWKS: Self.jwks([ec.publicJWK]))
        let all = ["RSA1_5", "RSA-OAEP", "RSA-OAEP-256", "A128KW", "ECDH-ES", "ECDH-ES+A128KW", "ECDH-ES+A256KW"]
        let encs = ["A128CBC-HS256", "A192GCM", "A256GCM"]
        #expect(JWEEncryptionChoice.choose(algorithms: all, contents: encs, keys: both)?.keyEncryption == .rsaOAEP256)
        #expect(JWEEncryptionChoice.choose(algorithms: all, contents: encs, keys: both)?.contentEncryption == "A256GCM")
        #expect(JWEEncryptionChoice.choose(algorithms: all, contents: encs, keys: onlyEC)?.keyEncryption == .ecdhESA256KW)
        // Absent enc list: OIDC Registration's default.
        #expect(JWEEncryptionChoice.choose(algorithms: ["RSA-OAEP"], contents: nil, keys: both)?.contentEncryption == "A128CBC-HS256")
        // Nothing in common: no choice.
        #expect(JWEEncryptionChoice.choose(algorithms: ["RSA1_5", "A128KW"], contents: encs, keys: both) == nil)
        #expect(JWEEncryptionChoice.choose(algorithms: ["RSA-OAEP"], contents: encs, keys: onlyEC) == nil)
        #expect(JWEEncryptionChoice.choose(algorithms: ["RSA-OAEP"], contents: ["A192GCM"], keys: both) == nil)
        #expect(JWEEncryptionChoice.choose(algorithms: nil, contents: encs, keys: both) == nil)
        // A key pinned to another alg is not used for this one.
        var pinned = rsa.publicJWK
        pinned["alg"] = .string("RSA-OAEP")
        let pinnedKeys = ProviderEncryptionKey.keys(inJWKS: Self.jwks([pinned]))
        #expect(JWEEncryptionChoice.choose(algorithms: ["RSA-OAEP-256", "RSA-OAEP"], contents: encs, keys: pinnedKeys)?.keyEncryption == .rsaOAEP)
    }

    @Test("Signing keys, short RSA keys, other curves and malformed entries are skipped")
    func keyParsing() throws {
        let (rsa, ec) = try Self.receiver()
        var signing = rsa.publicJWK
        signing["use"] = .string("sig")
        var noUse = ec.publicJWK
        noUse["use"] = nil
        let short = try _RSA.Encryption.PrivateKey(unsafeKeySize: .init(bitCount: 1024)).publicKey
        let shortParts = try _RSA.Signing.PublicKey(unsafeDERRepresentation: short.derRepresentation).getKeyPrimitives()
        let shortJWK: [String: JSONValue] = ["kty": .string("RSA"), "use": .string("enc"),
                                             "n": .string(Base64URL.encode(Array(shortParts.modulus))),
                                             "e": .string(Base64URL.encode(Array(shortParts.publicExponent)))]
        let p384: [String: JSONValue] = ["kty": .string("EC"), "crv": .string("P-384"), "x": .string("AA"), "y": .string("AA")]
        let offCurve: [String: JSONValue] = ["kty": .string("EC"), "crv": .string("P-256"),
                                             "x": .string(Base64URL.encode([UInt8](repeating: 1, count: 32))),
                                             "y": .string(Base64URL.encode([UInt8](repeating: 2, count: 32)))]
        let keys = ProviderEncryptionKey.keys(inJWKS: Self.jwks([signing, noUse, shortJWK, p384, offCurve, ["kty": .string("oct")]]))
        #expect(keys.map(\.keyID) == [ec.keyID])
        #expect(ProviderEncryptionKey.keys(inJWKS: Array("not json".utf8)).isEmpty)
        #expect(ProviderEncryptionKey.keys(inJWKS: Array(#"{"keys":7}"#.utf8)).isEmpty)
    }

    @Test("Cache-Control decides how long the provider's encryption keys are kept (OIDC Core 10.2.1)")
    func cacheLifetime() {
        #expect(ProviderEncryptionKeySource.cacheLifetime(nil) == 0)
        #expect(ProviderEncryptionKeySource.cacheLifetime("public, max-age=600") == 600)
        #expect(ProviderEncryptionKeySource.cacheLifetime("max-age=\"60\"") == 60)
        #expect(ProviderEncryptionKeySource.cacheLifetime("max-age=600, no-cache") == 0)
        #expect(ProviderEncryptionKeySource.cacheLifetime("no-store") == 0)
        #expect(ProviderEncryptionKeySource.cacheLifetime("max-age=-5") == 0)
        #expect(ProviderEncryptionKeySource.cacheLifetime("max-age=99999999") == 86_400)
        #expect(ProviderEncryptionKeySource.cacheLifetime("private") == 0)
    }

    @Test("Without max-age the keys are read again for every encryption, so a rotated key is used at once")
    func refetchedWithoutMaxAge() async throws {
        let (rsa, _) = try Self.receiver()
        let rotated = try ClientEncryptionKey(pem: _RSA.Encryption.PrivateKey(keySize: .bits2048).pemRepresentation)
        let http = FakeProviderHTTP()
        let uri = "https://op.example/jwks"
        http.respond(to: uri, with: ProviderHTTPResponse(status: 200, body: Self.jwks([rsa.publicJWK])))
        let source = ProviderEncryptionKeySource(jwksURI: uri, http: http)
        #expect(try await source.current().map(\.keyID) == [rsa.keyID])
        http.respond(to: uri, with: ProviderHTTPResponse(status: 200, body: Self.jwks([rotated.publicJWK])))
        #expect(try await source.current().map(\.keyID) == [rotated.keyID])
        #expect(http.requests.count == 2)
        #expect(http.requests.allSatisfy { $0.method == .get })
    }

    @Test("With max-age the keys are kept that long; a failed read is an error, and the next one tries again")
    func keptForMaxAge() async throws {
        let (rsa, _) = try Self.receiver()
        let http = FakeProviderHTTP()
        let uri = "https://op.example/jwks"
        http.respond(to: uri, with: ProviderHTTPResponse(status: 200, headers: [ProviderHTTPHeader("Cache-Control", "max-age=300")],
                                                         body: Self.jwks([rsa.publicJWK])))
        let source = ProviderEncryptionKeySource(jwksURI: uri, http: http)
        let now = Date()
        _ = try await source.current(now: now)
        _ = try await source.current(now: now.addingTimeInterval(100))
        #expect(http.requests.count == 1)
        http.respond(to: uri, with: ProviderHTTPResponse(status: 503))
        await #expect(throws: KeySetError.self) { try await source.current(now: now.addingTimeInterval(400)) }
        http.respond(to: uri, with: ProviderHTTPResponse(status: 200, body: Self.jwks([rsa.publicJWK])))
        #expect(try await source.current(now: now.addingTimeInterval(401)).count == 1)
        #expect(http.requests.count == 3)
    }

    @Test("By reference: request_uri beside the repeated parameters, never the object itself")
    func referenceParameters() {
        let parameters = [("client_id", "c"), ("response_type", "code"), ("scope", "openid"), ("redirect_uri", "https://gw/callback"),
                          ("state", "s"), ("nonce", "n"), ("code_challenge", "x")]
        let outer = RequestObject.referenceParameters(parameters, requestURI: "https://gw/request-object/abc")
        #expect(outer.map(\.0) == ["client_id", "response_type", "scope", "redirect_uri", "request_uri"])
        #expect(outer.last?.1 == "https://gw/request-object/abc")
    }

    @Test("An encrypted request object carries the signed one; no fitting key is a typed refusal")
    func encryptedRequestObject() async throws {
        let (rsa, _) = try Self.receiver()
        let http = FakeProviderHTTP()
        var metadata = ProviderMetadata(issuer: "https://op.example", authorizationEndpoint: "https://op.example/a",
                                        tokenEndpoint: "https://op.example/t", jwksURI: "https://op.example/jwks")
        metadata.requestObjectEncryptionAlgValuesSupported = ["RSA-OAEP"]
        metadata.requestObjectEncryptionEncValuesSupported = ["A128CBC-HS256"]
        http.respond(to: metadata.jwksURI, with: ProviderHTTPResponse(status: 200, body: Self.jwks([rsa.publicJWK])))
        let source = ProviderEncryptionKeySource(jwksURI: metadata.jwksURI, http: http)
        let signed = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJjIn0.c2ln"
        let encrypted = try await RequestObject.encrypted(signed, metadata: metadata, keys: source)
        #expect(try JWEDecrypter(keys: [rsa]).decrypt(encrypted) == Array(signed.utf8))
        metadata.requestObjectEncryptionAlgValuesSupported = ["ECDH-ES"]
        await #expect(throws: RequestObjectEncryptionError.self) {
            _ = try await RequestObject.encrypted(signed, metadata: metadata, keys: source)
        }
    }
}
