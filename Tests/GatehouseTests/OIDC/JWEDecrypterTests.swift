import Crypto
import CryptoExtras
import Foundation
import GatehouseEncoding
@testable import GatehouseOIDC
import Testing

/// The sender's side (a provider), written from RFC 7516/7518 for the tests.
enum TestJWE {
    static func encrypt(_ plaintext: [UInt8], alg: String, enc: String, to jwk: [String: JSONValue],
                        rsa: _RSA.Encryption.PublicKey? = nil, p256: P256.KeyAgreement.PublicKey? = nil,
                        kid: String? = nil, secret: String? = nil) throws -> String {
        var header: [String: JSONValue] = ["alg": .string(alg), "enc": .string(enc)]
        if let kid { header["kid"] = .string(kid) }
        var cek = Array(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
        if enc == "A256CBC-HS512" { cek += Array(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }) }
        var encryptedKey: [UInt8] = []
        switch alg {
        case "A128KW", "A256KW":
            let kek = Array(Array(SHA256.hash(data: Array(secret!.utf8))).prefix(alg == "A128KW" ? 16 : 32))
            encryptedKey = Array(try AES.KeyWrap.wrap(SymmetricKey(data: cek), using: SymmetricKey(data: kek)))
        case "RSA-OAEP": encryptedKey = Array(try rsa!.encrypt(cek, padding: .PKCS1_OAEP))
        case "RSA-OAEP-256": encryptedKey = Array(try rsa!.encrypt(cek, padding: .PKCS1_OAEP_SHA256))
        default:
            let ephemeral = P256.KeyAgreement.PrivateKey()
            let point = Array(ephemeral.publicKey.x963Representation)
            header["epk"] = .object(["kty": .string("EC"), "crv": .string("P-256"),
                                     "x": .string(Base64URL.encode(point[1..<33])), "y": .string(Base64URL.encode(point[33..<65]))])
            header["apu"] = .string(Base64URL.encode(Array("Alice".utf8)))
            let z = try ephemeral.sharedSecretFromKeyAgreement(with: p256!).withUnsafeBytes { Array($0) }
            if alg == "ECDH-ES" {
                cek = KeyManagement.concatKDF(z: z, algorithmID: enc, apu: Array("Alice".utf8), apv: [], bits: cek.count * 8)
            } else {
                let bits = alg.hasSuffix("A128KW") ? 128 : 256
                let kek = KeyManagement.concatKDF(z: z, algorithmID: alg, apu: Array("Alice".utf8), apv: [], bits: bits)
                encryptedKey = Array(try AES.KeyWrap.wrap(SymmetricKey(data: cek), using: SymmetricKey(data: kek)))
            }
        }
        let protected = Base64URL.encode(JSONValueWriter.sortedKeys(header)!)
        let aad = Array(protected.utf8)
        let iv: [UInt8], ciphertext: [UInt8], tag: [UInt8]
        if enc == "A256GCM" {
            let box = try AES.GCM.seal(plaintext, using: SymmetricKey(data: cek), authenticating: aad)
            (iv, ciphertext, tag) = (Array(box.nonce), Array(box.ciphertext), Array(box.tag))
        } else {
            let half = cek.count / 2
            let ivValue = AES._CBC.IV()
            iv = Array(ivValue)
            ciphertext = Array(try AES._CBC.encrypt(plaintext, using: SymmetricKey(data: cek[half...]), iv: ivValue))
            let bits = UInt64(aad.count) * 8
            let length = (0..<8).map { UInt8(truncatingIfNeeded: bits >> (56 - 8 * UInt64($0))) }
            let input = aad + iv + ciphertext + length
            let mac = enc == "A256CBC-HS512" ? Array(HMAC<SHA512>.authenticationCode(for: input, using: SymmetricKey(data: cek[0..<half])))
                : Array(HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: cek[0..<half])))
            tag = Array(mac[0..<half])
        }
        return [protected, Base64URL.encode(encryptedKey), Base64URL.encode(iv), Base64URL.encode(ciphertext), Base64URL.encode(tag)]
            .joined(separator: ".")
    }
}

@Suite("Encrypted ID tokens and UserInfo (JWE, RFC 7516/7518)")
struct JWEDecrypterTests {
    nonisolated(unsafe) static let rsaPrivate = try! _RSA.Encryption.PrivateKey(keySize: .bits2048)
    static let ecPrivate = P256.KeyAgreement.PrivateKey()
    static let plaintext = Array("header.payload.signature".utf8)

    static func keys() throws -> (rsa: ClientEncryptionKey, ec: ClientEncryptionKey) {
        (try ClientEncryptionKey(pem: rsaPrivate.pemRepresentation), try ClientEncryptionKey(pem: ecPrivate.pemRepresentation))
    }

    @Test("Every key management with every content encryption opens", arguments: [
        ("RSA-OAEP", "A128CBC-HS256"), ("RSA-OAEP", "A256GCM"), ("RSA-OAEP-256", "A128CBC-HS256"), ("RSA-OAEP-256", "A256GCM"),
        ("ECDH-ES", "A128CBC-HS256"), ("ECDH-ES", "A256GCM"), ("ECDH-ES+A128KW", "A128CBC-HS256"), ("ECDH-ES+A128KW", "A256GCM"),
        ("ECDH-ES+A256KW", "A128CBC-HS256"), ("ECDH-ES+A256KW", "A256GCM"),
    ])
    func opens(alg: String, enc: String) throws {
        let (rsa, ec) = try Self.keys()
        let token = try TestJWE.encrypt(Self.plaintext, alg: alg, enc: enc, to: [:], rsa: Self.rsaPrivate.publicKey,
                                        p256: Self.ecPrivate.publicKey)
        #expect(JWEDecrypter.isJWE(token))
        #expect(try JWEDecrypter(keys: [rsa, ec]).decrypt(token) == Self.plaintext)
    }

    @Test("A tampered part, another key, RSA1_5 or zip is refused")
    func refusals() throws {
        let (rsa, ec) = try Self.keys()
        let token = try TestJWE.encrypt(Self.plaintext, alg: "RSA-OAEP-256", enc: "A256GCM", to: [:], rsa: Self.rsaPrivate.publicKey)
        var parts = token.split(separator: ".").map(String.init)
        var ciphertext = Base64URL.decode(parts[3])!
        ciphertext[0] ^= 1
        parts[3] = Base64URL.encode(ciphertext)
        #expect(throws: JWEError.undecryptable) { try JWEDecrypter(keys: [rsa]).decrypt(parts.joined(separator: ".")) }
        #expect(throws: JWEError.self) { try JWEDecrypter(keys: [ec]).decrypt(token) }
        let cbc = try TestJWE.encrypt(Self.plaintext, alg: "ECDH-ES+A128KW", enc: "A128CBC-HS256", to: [:], p256: Self.ecPrivate.publicKey)
        var cbcParts = cbc.split(separator: ".").map(String.init)
        var tag = Base64URL.decode(cbcParts[4])!
        tag[15] ^= 1
        cbcParts[4] = Base64URL.encode(tag)
        #expect(throws: JWEError.undecryptable) { try JWEDecrypter(keys: [ec]).decrypt(cbcParts.joined(separator: ".")) }
        let rsa15 = Base64URL.encode(Array(#"{"alg":"RSA1_5","enc":"A256GCM"}"#.utf8)) + ".AA.AA.AA.AA"
        #expect(throws: JWEError.unsupported("alg RSA1_5")) { try JWEDecrypter(keys: [rsa]).decrypt(rsa15) }
        let zipped = Base64URL.encode(Array(#"{"alg":"RSA-OAEP","enc":"A256GCM","zip":"DEF"}"#.utf8)) + ".AA.AA.AA.AA"
        #expect(throws: JWEError.unsupported("zip")) { try JWEDecrypter(keys: [rsa]).decrypt(zipped) }
        #expect(throws: JWEError.self) { try JWEDecrypter(keys: [rsa]).decrypt("a.b.c") }
    }

    @Test("Rotation: a token for the previous key still opens; its kid picks the key")
    func rotation() throws {
        let (old, _) = try Self.keys()
        let current = try ClientEncryptionKey(pem: _RSA.Encryption.PrivateKey(keySize: .bits2048).pemRepresentation)
        let token = try TestJWE.encrypt(Self.plaintext, alg: "RSA-OAEP", enc: "A256GCM", to: [:], rsa: Self.rsaPrivate.publicKey,
                                        kid: old.keyID)
        #expect(try JWEDecrypter(keys: [current, old]).decrypt(token) == Self.plaintext)
        #expect(throws: JWEError.self) { try JWEDecrypter(keys: [current]).decrypt(token) }
    }

    @Test("The public JWKs: use enc, the RFC 7638 thumbprint as kid, no private member")
    func publicJWK() throws {
        let (rsa, ec) = try Self.keys()
        #expect(rsa.publicJWK["use"] == .string("enc") && rsa.publicJWK["kty"] == .string("RSA") && rsa.publicJWK["d"] == nil)
        #expect(ec.publicJWK["crv"] == .string("P-256") && ec.publicJWK["kid"] == .string(ec.keyID) && ec.publicJWK["d"] == nil)
        #expect(ec.keyID.count == 43)
        #expect(throws: JWEError.self) { try ClientEncryptionKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----") }
    }

    @Test("The token client puts the signed ID token inside an encrypted one in its place; without a key it refuses")
    func tokenClient() async throws {
        let (rsa, _) = try Self.keys()
        let inner = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln"
        let encrypted = try TestJWE.encrypt(Array(inner.utf8), alg: "RSA-OAEP-256", enc: "A256GCM", to: [:], rsa: Self.rsaPrivate.publicKey)
        let http = FakeProviderHTTP()
        http.respond(to: "https://idp.test/token", json: #"{"access_token":"a","token_type":"Bearer","id_token":"\#(encrypted)"}"#)
        var client = try TokenClient(tokenEndpoint: "https://idp.test/token", revocationEndpoint: nil, clientID: "c",
                                     clientSecret: "s", authMethod: .clientSecretPost, http: http)
        await #expect(throws: TokenEndpointError.self) {
            _ = try await client.exchangeCode(code: "c", codeVerifier: CodeVerifier.make(), redirectURI: "https://a/cb")
        }
        client.decrypter = JWEDecrypter(keys: [rsa])
        let tokens = try await client.exchangeCode(code: "c", codeVerifier: CodeVerifier.make(), redirectURI: "https://a/cb")
        #expect(tokens.idToken == inner)
        let unsigned = try TestJWE.encrypt(Array(#"{"sub":"a"}"#.utf8), alg: "RSA-OAEP", enc: "A256GCM", to: [:], rsa: Self.rsaPrivate.publicKey)
        http.respond(to: "https://idp.test/token", json: #"{"access_token":"a","token_type":"Bearer","id_token":"\#(unsigned)"}"#)
        await #expect(throws: TokenEndpointError.self) {
            _ = try await client.exchangeCode(code: "c", codeVerifier: CodeVerifier.make(), redirectURI: "https://a/cb")
        }
    }

    @Test("UserInfo answered as encrypted JSON is opened; without a key it is refused as before")
    func userinfo() async throws {
        let (_, ec) = try Self.keys()
        let encrypted = try TestJWE.encrypt(Array(#"{"sub":"alice","email":"a@example.com"}"#.utf8), alg: "ECDH-ES",
                                            enc: "A128CBC-HS256", to: [:], p256: Self.ecPrivate.publicKey)
        let http = FakeProviderHTTP()
        http.respond(to: "https://idp.test/userinfo", with: ProviderHTTPResponse(
            status: 200, headers: [ProviderHTTPHeader("Content-Type", "application/jwt")], body: Array(encrypted.utf8)))
        var client = UserInfoClient(endpoint: "https://idp.test/userinfo", http: http)
        await #expect(throws: UserInfoError.signedResponseUnsupported) {
            _ = try await client.fetch(accessToken: "t", expectedSubject: "alice")
        }
        client.decrypter = JWEDecrypter(keys: [ec])
        let claims = try await client.fetch(accessToken: "t", expectedSubject: "alice")
        #expect(claims["email"] == .string("a@example.com"))
        await #expect(throws: UserInfoError.subjectMismatch) { _ = try await client.fetch(accessToken: "t", expectedSubject: "bob") }
    }

    @Test("With the client secret: A128KW and A256KW (OIDC Core 10.2), and A256CBC-HS512, open; another secret does not",
          arguments: [("A128KW", "A256CBC-HS512"), ("A256KW", "A128CBC-HS256"), ("A128KW", "A256GCM"), ("ECDH-ES", "A256CBC-HS512")])
    func symmetric(alg: String, enc: String) throws {
        let (_, ec) = try Self.keys()
        let token = try TestJWE.encrypt(Self.plaintext, alg: alg, enc: enc, to: [:], p256: Self.ecPrivate.publicKey, secret: "s3cr3t")
        #expect(try JWEDecrypter(keys: [ec], clientSecret: "s3cr3t").decrypt(token) == Self.plaintext)
        if alg.hasSuffix("KW") {
            #expect(throws: JWEError.undecryptable) { try JWEDecrypter(keys: [ec], clientSecret: "other").decrypt(token) }
            #expect(throws: JWEError.self) { try JWEDecrypter(keys: [ec]).decrypt(token) }
        }
    }
}
