import Crypto
import CryptoExtras
import FoundationEssentials
import GatehouseEncoding

/// Why a JWE (RFC 7516) was not decrypted. Never carries key material or plaintext.
public enum JWEError: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed(String)
    /// An `alg` or `enc` outside the supported list (`RSA1_5` on purpose: its padding is an oracle).
    case unsupported(String)
    /// No configured key opens it (wrong key, a key rotated away, a tampered token).
    case undecryptable
    case unusableKey(String)
    /// A request object could not be encrypted to the provider's key (`JWEEncrypter`).
    case encryptionFailed(String)

    public var description: String {
        switch self {
        case .malformed(let why): "malformed JWE: \(why)"
        case .unsupported(let what): "unsupported JWE \(what)"
        case .undecryptable: "no GATEHOUSE_CLIENT_ENCRYPTION_KEY decrypts it"
        case .unusableKey(let why): "GATEHOUSE_CLIENT_ENCRYPTION_KEY: \(why)"
        case .encryptionFailed(let why): "cannot encrypt to the provider: \(why)"
        }
    }
}

/// Opens the compact JWEs a provider sends when the client registered for encrypted ID tokens or
/// UserInfo (OIDC Core §10.2): key management RSA-OAEP, RSA-OAEP-256, ECDH-ES, ECDH-ES+A128KW,
/// ECDH-ES+A256KW (RFC 7518 §4.3, §4.6), content A128CBC-HS256 and A256GCM (§5.2.3, §5.3). The
/// keys are tried current first, then the previous one, so a rotation loses no login.
public struct JWEDecrypter: Sendable {
    public let keys: [ClientEncryptionKey]
    /// The client secret, for the symmetric key managements (A128KW, A256KW) a provider may use
    /// with a confidential client (OIDC Core §10.2: the key is the left-most bits of SHA-256 of the
    /// secret); nil without a secret.
    public let clientSecret: String?
    /// An encrypted token larger than this is refused before any work.
    static let maximumSize = 64 * 1024

    public init(keys: [ClientEncryptionKey], clientSecret: String? = nil) {
        self.keys = keys
        self.clientSecret = clientSecret
    }

    /// Whether `token` is a compact JWE (five parts) rather than a JWS (three).
    public static func isJWE(_ token: String) -> Bool {
        token.utf8.reduce(0) { $1 == UInt8(ascii: ".") ? $0 + 1 : $0 } == 4
    }

    /// The plaintext (for an ID token: the signed JWT inside).
    public func decrypt(_ compact: String) throws(JWEError) -> [UInt8] {
        guard compact.utf8.count <= Self.maximumSize else { throw .malformed("larger than 64 KiB") }
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 5 else { throw .malformed("not five parts") }
        guard let headerBytes = Base64URL.decode(parts[0]), let header = try? JSONValue.parse(headerBytes).objectValue,
              let encryptedKey = Base64URL.decode(parts[1]), let iv = Base64URL.decode(parts[2]),
              let ciphertext = Base64URL.decode(parts[3]), let tag = Base64URL.decode(parts[4]) else {
            throw .malformed("a part is not base64url, or the header not a JSON object")
        }
        guard let alg = header["alg"]?.stringValue, let enc = header["enc"]?.stringValue else { throw .malformed("no alg or enc") }
        guard header["zip"] == nil else { throw .unsupported("zip") }
        guard let content = ContentEncryption(rawValue: enc) else { throw .unsupported("enc \(enc)") }
        let aad = Array(parts[0].utf8)
        let kid = header["kid"]?.stringValue
        if alg == "A128KW" || alg == "A256KW" {
            guard let clientSecret else { throw .unsupported("alg \(alg) without a client secret") }
            let kek = Array(SHA256.hash(data: Array(clientSecret.utf8))).prefix(alg == "A128KW" ? 16 : 32)
            guard let cek = try? AES.KeyWrap.unwrap(encryptedKey, using: SymmetricKey(data: Array(kek))).withUnsafeBytes({ Array($0) }),
                  let plaintext = try? content.open(ciphertext: ciphertext, iv: iv, tag: tag, aad: aad, key: cek) else {
                throw .undecryptable
            }
            return plaintext
        }
        for key in keys where kid == nil || kid == key.keyID {
            guard let cek = try? KeyManagement.contentKey(alg: alg, header: header, encryptedKey: encryptedKey,
                                                          content: content, key: key) else { continue }
            if let plaintext = try? content.open(ciphertext: ciphertext, iv: iv, tag: tag, aad: aad, key: cek) {
                return plaintext
            }
        }
        if !KeyManagement.supported.contains(alg) { throw .unsupported("alg \(alg)") }
        throw .undecryptable
    }
}

/// The content encryptions (RFC 7518 §5).
enum ContentEncryption: String {
    case a128cbcHS256 = "A128CBC-HS256"
    case a256cbcHS512 = "A256CBC-HS512"
    case a256GCM = "A256GCM"

    var keyBytes: Int { self == .a256cbcHS512 ? 64 : 32 }

    func open(ciphertext: [UInt8], iv: [UInt8], tag: [UInt8], aad: [UInt8], key: [UInt8]) throws -> [UInt8] {
        guard key.count == keyBytes else { throw JWEError.undecryptable }
        switch self {
        case .a256GCM:
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: iv), ciphertext: ciphertext, tag: tag)
            return Array(try AES.GCM.open(box, using: SymmetricKey(data: key), authenticating: aad))
        case .a128cbcHS256, .a256cbcHS512:
            // §5.2.2.1: MAC key the first half, encryption key the second; the tag the first half of
            // the HMAC (SHA-256 or SHA-512) over AAD || IV || ciphertext || AL (the AAD's length in
            // bits, 64-bit big-endian), compared before anything is decrypted.
            let half = keyBytes / 2
            let macKey = SymmetricKey(data: key[0..<half]), encKey = SymmetricKey(data: key[half..<keyBytes])
            let mac = macTag(aad: aad, iv: iv, ciphertext: ciphertext, macKey: macKey)
            guard tag.count == half, ConstantTime.equals(Array(mac[0..<half]), tag) else { throw JWEError.undecryptable }
            return Array(try AES._CBC.decrypt(ciphertext, using: encKey, iv: AES._CBC.IV(ivBytes: iv)))
        }
    }
}

/// The key managements (RFC 7518 §4): the content key from the JWE's encrypted key and header.
enum KeyManagement {
    static let supported: Set<String> = ["RSA-OAEP", "RSA-OAEP-256", "ECDH-ES", "ECDH-ES+A128KW", "ECDH-ES+A256KW",
                                         "A128KW", "A256KW"]

    static func contentKey(alg: String, header: [String: JSONValue], encryptedKey: [UInt8],
                           content: ContentEncryption, key: ClientEncryptionKey) throws -> [UInt8] {
        switch (alg, key.material) {
        case ("RSA-OAEP", .rsa(let rsa)): return Array(try rsa.key.decrypt(encryptedKey, padding: .PKCS1_OAEP))
        case ("RSA-OAEP-256", .rsa(let rsa)): return Array(try rsa.key.decrypt(encryptedKey, padding: .PKCS1_OAEP_SHA256))
        case ("ECDH-ES", .p256(let ec)):
            guard encryptedKey.isEmpty else { throw JWEError.malformed("ECDH-ES with an encrypted key") }
            return try agreedKey(header: header, key: ec, algorithmID: content.rawValue, bits: content.keyBytes * 8)
        case ("ECDH-ES+A128KW", .p256(let ec)), ("ECDH-ES+A256KW", .p256(let ec)):
            let bits = alg.hasSuffix("A128KW") ? 128 : 256
            let kek = try agreedKey(header: header, key: ec, algorithmID: alg, bits: bits)
            return try AES.KeyWrap.unwrap(encryptedKey, using: SymmetricKey(data: kek)).withUnsafeBytes { Array($0) }
        default:
            throw JWEError.unsupported("alg \(alg) for this key")
        }
    }

    /// §4.6.2: Concat KDF (NIST SP 800-56A §5.8.1) with SHA-256 over the ECDH shared secret with the
    /// sender's ephemeral key (`epk`), `apu` and `apv`, for `bits` of key.
    static func agreedKey(header: [String: JSONValue], key: P256.KeyAgreement.PrivateKey, algorithmID: String, bits: Int) throws -> [UInt8] {
        guard let epk = header["epk"]?.objectValue, epk["kty"]?.stringValue == "EC", epk["crv"]?.stringValue == "P-256",
              let x = epk["x"]?.stringValue.flatMap(Base64URL.decode), let y = epk["y"]?.stringValue.flatMap(Base64URL.decode),
              x.count == 32, y.count == 32 else { throw JWEError.malformed("epk is not a P-256 public key") }
        // The curve check of the sender's point happens here (a point off the curve is refused).
        let ephemeral = try P256.KeyAgreement.PublicKey(x963Representation: [0x04] + x + y)
        let shared = try key.sharedSecretFromKeyAgreement(with: ephemeral)
        let z = shared.withUnsafeBytes { Array($0) }
        let apu = header["apu"]?.stringValue.flatMap(Base64URL.decode) ?? []
        let apv = header["apv"]?.stringValue.flatMap(Base64URL.decode) ?? []
        return concatKDF(z: z, algorithmID: algorithmID, apu: apu, apv: apv, bits: bits)
    }

    /// NIST SP 800-56A §5.8.1 as RFC 7518 §4.6.2 fills it in.
    static func concatKDF(z: [UInt8], algorithmID: String, apu: [UInt8], apv: [UInt8], bits: Int) -> [UInt8] {
        func field(_ bytes: [UInt8]) -> [UInt8] { lengthPrefix(bytes.count) + bytes }
        let otherInfo = field(Array(algorithmID.utf8)) + field(apu) + field(apv) + lengthPrefix(bits)
        var derived: [UInt8] = []
        var counter: UInt32 = 1
        while derived.count * 8 < bits {
            derived += Array(SHA256.hash(data: lengthPrefix(Int(counter)) + z + otherInfo))
            counter += 1
        }
        return Array(derived.prefix(bits / 8))
    }

    private static func lengthPrefix(_ value: Int) -> [UInt8] {
        let v = UInt32(truncatingIfNeeded: value)
        return [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)]
    }
}
