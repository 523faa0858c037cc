import Crypto
import CryptoExtras
import FoundationEssentials
import GatehouseEncoding

/// One of the provider's public encryption keys (its JWKS, `use` `enc` or no `use`): RSA of 2048
/// bits or more, or P-256. Request objects are encrypted to it (OIDC Core §10.2).
public struct ProviderEncryptionKey: Sendable, CustomStringConvertible {
    enum Material: Sendable {
        case rsa(SharedRSAKey<_RSA.Encryption.PublicKey>)
        case p256(P256.KeyAgreement.PublicKey)
    }

    let material: Material
    public let keyID: String?
    /// The JWK's `alg`, when it pins the key to one key management.
    public let algorithm: String?

    public var description: String { "ProviderEncryptionKey(kid: \(keyID ?? "none"))" }

    /// Whether `alg` may use this key: the key's kind, and its `alg` member when it has one.
    func fits(_ alg: KeyEncryption) -> Bool {
        if let algorithm, algorithm != alg.rawValue { return false }
        switch (alg, material) {
        case (.rsaOAEP, .rsa), (.rsaOAEP256, .rsa): return true
        case (.ecdhES, .p256), (.ecdhESA128KW, .p256), (.ecdhESA256KW, .p256): return true
        default: return false
        }
    }

    /// The encryption keys of a JWKS, skipping signing keys and kinds Gatehouse does not encrypt
    /// to (a short RSA key, another curve), so one exotic key does not hide the rest.
    public static func keys(inJWKS body: [UInt8]) -> [ProviderEncryptionKey] {
        guard let entries = (try? JSONValue.parse(body))?.objectValue?["keys"]?.arrayValue else { return [] }
        return entries.compactMap { entry -> ProviderEncryptionKey? in
            guard let object = entry.objectValue else { return nil }
            if let use = object["use"], use.stringValue != "enc" { return nil }
            let kid = object["kid"]?.stringValue, alg = object["alg"]?.stringValue
            switch object["kty"]?.stringValue {
            case "RSA":
                guard let n = object["n"]?.stringValue.flatMap(Base64URL.decode),
                      let e = object["e"]?.stringValue.flatMap(Base64URL.decode),
                      let key = try? _RSA.Encryption.PublicKey(n: n, e: e), key.keySizeInBits >= 2048 else { return nil }
                return ProviderEncryptionKey(material: .rsa(SharedRSAKey(key)), keyID: kid, algorithm: alg)
            case "EC":
                guard object["crv"]?.stringValue == "P-256",
                      let x = object["x"]?.stringValue.flatMap(Base64URL.decode),
                      let y = object["y"]?.stringValue.flatMap(Base64URL.decode), x.count == 32, y.count == 32,
                      let key = try? P256.KeyAgreement.PublicKey(x963Representation: [0x04] + x + y) else { return nil }
                return ProviderEncryptionKey(material: .p256(key), keyID: kid, algorithm: alg)
            default:
                return nil
            }
        }
    }
}

/// The key managements Gatehouse encrypts with (RFC 7518 §4.3, §4.6), in the order it prefers
/// them. Never `RSA1_5` (RFC 8725 §3.2: its padding invites oracle attacks on the receiver's key)
/// nor a key wrap with the client secret (a secret the provider also holds proves nothing here).
public enum KeyEncryption: String, Sendable, CaseIterable {
    case rsaOAEP256 = "RSA-OAEP-256"
    case rsaOAEP = "RSA-OAEP"
    case ecdhESA256KW = "ECDH-ES+A256KW"
    case ecdhESA128KW = "ECDH-ES+A128KW"
    case ecdhES = "ECDH-ES"
}

/// How a request object is encrypted to one provider: the key management and content encryption
/// both sides take, and the key.
public struct JWEEncryptionChoice: Sendable {
    public let keyEncryption: KeyEncryption
    let content: ContentEncryption
    public let key: ProviderEncryptionKey
    public var contentEncryption: String { content.rawValue }

    /// The content encryptions Gatehouse encrypts with, preferred first.
    static let contentPreference: [ContentEncryption] = [.a256GCM, .a128cbcHS256, .a256cbcHS512]

    /// The first key management Gatehouse prefers that the provider lists and one of `keys`
    /// fits, with the first content encryption it lists (OIDC Registration §2: `A128CBC-HS256`
    /// when it lists none); nil when there is no such pair.
    public static func choose(algorithms: [String]?, contents: [String]?,
                              keys: [ProviderEncryptionKey]) -> JWEEncryptionChoice? {
        guard let algorithms else { return nil }
        let content = contents.map { listed in contentPreference.first { listed.contains($0.rawValue) } }
            ?? .a128cbcHS256
        guard let content else { return nil }
        for alg in KeyEncryption.allCases where algorithms.contains(alg.rawValue) {
            if let key = keys.first(where: { $0.fits(alg) }) {
                return JWEEncryptionChoice(keyEncryption: alg, content: content, key: key)
            }
        }
        return nil
    }
}

/// Writes compact JWEs (RFC 7516 §7.1) to a provider's public key: the request objects of
/// `GATEHOUSE_REQUEST_OBJECT_ENCRYPTION` (a signed JWT inside, `cty` `JWT`, OIDC Core §6.1).
public enum JWEEncrypter {
    public static func encrypt(_ plaintext: [UInt8], with choice: JWEEncryptionChoice, contentType: String? = "JWT",
                               random: RandomBytes = .system) throws(JWEError) -> String {
        let content = choice.content
        var header: [String: JSONValue] = ["alg": .string(choice.keyEncryption.rawValue), "enc": .string(content.rawValue)]
        if let kid = choice.key.keyID { header["kid"] = .string(kid) }
        if let contentType { header["cty"] = .string(contentType) }
        let cek: [UInt8], encryptedKey: [UInt8]
        do {
            (cek, encryptedKey) = try managedKey(choice, content: content, header: &header, random: random)
        } catch {
            throw .encryptionFailed("its key \(choice.key.keyID ?? "without a kid") refused \(choice.keyEncryption.rawValue)")
        }
        guard let headerBytes = JSONValueWriter.sortedKeys(header) else { throw .encryptionFailed("the header cannot be written") }
        let protected = Base64URL.encode(headerBytes)
        let iv = random(content == .a256GCM ? 12 : 16)
        let sealed: (ciphertext: [UInt8], tag: [UInt8])
        do {
            sealed = try content.seal(plaintext, iv: iv, aad: Array(protected.utf8), key: cek)
        } catch {
            throw .encryptionFailed("\(content.rawValue) failed")
        }
        return [protected, Base64URL.encode(encryptedKey), Base64URL.encode(iv),
                Base64URL.encode(sealed.ciphertext), Base64URL.encode(sealed.tag)].joined(separator: ".")
    }

    /// The content key and its encrypted form (empty for ECDH-ES, where the agreement is the key);
    /// ECDH-ES adds the ephemeral public key to the header.
    private static func managedKey(_ choice: JWEEncryptionChoice, content: ContentEncryption, header: inout [String: JSONValue],
                                   random: RandomBytes) throws -> ([UInt8], [UInt8]) {
        switch (choice.keyEncryption, choice.key.material) {
        case (.rsaOAEP, .rsa(let rsa)), (.rsaOAEP256, .rsa(let rsa)):
            let cek = random(content.keyBytes)
            let padding: _RSA.Encryption.Padding = choice.keyEncryption == .rsaOAEP ? .PKCS1_OAEP : .PKCS1_OAEP_SHA256
            return (cek, Array(try rsa.key.encrypt(cek, padding: padding)))
        case (.ecdhES, .p256(let recipient)), (.ecdhESA128KW, .p256(let recipient)), (.ecdhESA256KW, .p256(let recipient)):
            let ephemeral = P256.KeyAgreement.PrivateKey()
            let point = Array(ephemeral.publicKey.x963Representation)
            header["epk"] = .object(["kty": .string("EC"), "crv": .string("P-256"),
                                     "x": .string(Base64URL.encode(point[1..<33])), "y": .string(Base64URL.encode(point[33..<65]))])
            let z = try ephemeral.sharedSecretFromKeyAgreement(with: recipient).withUnsafeBytes { Array($0) }
            if choice.keyEncryption == .ecdhES {
                return (KeyManagement.concatKDF(z: z, algorithmID: content.rawValue, apu: [], apv: [], bits: content.keyBytes * 8), [])
            }
            let bits = choice.keyEncryption == .ecdhESA128KW ? 128 : 256
            let kek = KeyManagement.concatKDF(z: z, algorithmID: choice.keyEncryption.rawValue, apu: [], apv: [], bits: bits)
            let cek = random(content.keyBytes)
            return (cek, Array(try AES.KeyWrap.wrap(SymmetricKey(data: cek), using: SymmetricKey(data: kek))))
        default:
            throw JWEError.unsupported("alg \(choice.keyEncryption.rawValue) for this key")
        }
    }
}

extension ContentEncryption {
    /// RFC 7518 §5.2.2.1 and §5.3: the inverse of `open`.
    func seal(_ plaintext: [UInt8], iv: [UInt8], aad: [UInt8], key: [UInt8]) throws -> (ciphertext: [UInt8], tag: [UInt8]) {
        switch self {
        case .a256GCM:
            let box = try AES.GCM.seal(plaintext, using: SymmetricKey(data: key), nonce: AES.GCM.Nonce(data: iv), authenticating: aad)
            return (Array(box.ciphertext), Array(box.tag))
        case .a128cbcHS256, .a256cbcHS512:
            let half = keyBytes / 2
            let macKey = SymmetricKey(data: key[0..<half]), encKey = SymmetricKey(data: key[half..<keyBytes])
            let ciphertext = Array(try AES._CBC.encrypt(plaintext, using: encKey, iv: AES._CBC.IV(ivBytes: iv)))
            let mac = macTag(aad: aad, iv: iv, ciphertext: ciphertext, macKey: macKey)
            return (ciphertext, Array(mac[0..<half]))
        }
    }

    /// The HMAC over AAD || IV || ciphertext || AL (the AAD's length in bits, 64-bit big-endian).
    func macTag(aad: [UInt8], iv: [UInt8], ciphertext: [UInt8], macKey: SymmetricKey) -> [UInt8] {
        let bits = UInt64(aad.count) * 8
        let length = (0..<8).map { UInt8(truncatingIfNeeded: bits >> (56 - 8 * UInt64($0))) }
        let input = aad + iv + ciphertext + length
        return self == .a128cbcHS256 ? Array(HMAC<SHA256>.authenticationCode(for: input, using: macKey))
            : Array(HMAC<SHA512>.authenticationCode(for: input, using: macKey))
    }
}
