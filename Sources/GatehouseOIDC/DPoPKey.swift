import Crypto
import FoundationEssentials
import GatehouseEncoding
import Synchronization

/// A session's DPoP key (RFC 9449): an ES256 key made at sign-in and kept sealed with the session, so
/// that its tokens are bound to it and work for no one without it. The provider binds each token
/// it issues to the key of the token request's proof; every use of a token (upstream calls,
/// UserInfo) carries a fresh proof signed with it.
public struct DPoPKey: Sendable {
    private let privateKey: P256.Signing.PrivateKey
    /// The public key as a JWK (`kty`, `crv`, `x`, `y`), as each proof's header carries it.
    public let publicJWK: [String: JSONValue]
    /// RFC 7638 thumbprint of `publicJWK` (`cnf.jkt` of bound tokens; `dpop_jkt`).
    public let thumbprint: String
    /// The proof's first part and its `.`, the same for every proof of this key (written once).
    private let encodedHeaderAndDot: [UInt8]
    /// `jti`s: a random prefix of this key and a count, unique without a random draw per proof
    /// (a proof is made per proxied call).
    private let proofs: ProofSequence

    /// A new random key.
    public init() {
        self.init(P256.Signing.PrivateKey())
    }

    /// The key stored with a session (`rawRepresentation`, base64url); nil when it is not one.
    public init?(stored: String) {
        guard let bytes = Base64URL.decode(stored), bytes.count == 32,
              let key = try? P256.Signing.PrivateKey(rawRepresentation: bytes) else { return nil }
        self.init(key)
    }

    private init(_ key: P256.Signing.PrivateKey) {
        privateKey = key
        let jwk = P256PublicJWK(key.publicKey)
        publicJWK = jwk.members
        thumbprint = jwk.thumbprint
        let header: [String: JSONValue] = ["typ": .string("dpop+jwt"), "alg": .string("ES256"), "jwk": .object(publicJWK)]
        encodedHeaderAndDot = Array(Base64URL.encode(JSONValueWriter.sortedKeys(header) ?? []).utf8) + [UInt8(ascii: ".")]
        proofs = ProofSequence()
    }

    /// What is stored, sealed, with the session.
    public var stored: String { Base64URL.encode(privateKey.rawRepresentation) }

    /// A DPoP proof (RFC 9449 §4.2): header `{"typ":"dpop+jwt","alg":"ES256","jwk":…}`, claims `jti`
    /// (random), `htm`, `htu` (without query and fragment), `iat`, and `nonce` when the server gave
    /// one, `ath` (base64url SHA-256 of the access token) when presenting a token.
    public func proof(method: String, url: String, nonce: String?, accessToken: String?, now: Int64) -> String {
        proof(method: method, url: url, nonce: nonce, ath: accessToken.map(Self.ath), now: now)
    }

    /// As above, with the token's `ath` computed before (``ath(_:)``): a session's token is
    /// presented on every proxied call, its hash made once.
    public func proof(method: String, url: String, nonce: String?, ath: String?, now: Int64) -> String {
        // Written as bytes (one proof per proxied call): the values are a method, a URL, a server's
        // nonce, a hash and numbers, escaped as JSON strings.
        var claims: [UInt8] = []
        claims.reserveCapacity(160 + url.utf8.count + (nonce?.utf8.count ?? 0))
        if let ath {
            claims.append(contentsOf: "{\"ath\":\"".utf8)
            claims.append(contentsOf: ath.utf8)
            claims.append(contentsOf: "\",\"htm\":".utf8)
        } else {
            claims.append(contentsOf: "{\"htm\":".utf8)
        }
        claims.append(contentsOf: JSONValueWriter.quoted(method).utf8)
        claims.append(contentsOf: ",\"htu\":".utf8)
        claims.append(contentsOf: JSONValueWriter.quoted(Self.htu(url)).utf8)
        claims.append(contentsOf: ",\"iat\":".utf8)
        claims.append(contentsOf: String(now).utf8)
        claims.append(contentsOf: ",\"jti\":\"".utf8)
        claims.append(contentsOf: proofs.next().utf8)
        claims.append(UInt8(ascii: "\""))
        if let nonce {
            claims.append(contentsOf: ",\"nonce\":".utf8)
            claims.append(contentsOf: JSONValueWriter.quoted(nonce).utf8)
        }
        claims.append(UInt8(ascii: "}"))
        var jws = encodedHeaderAndDot
        jws.reserveCapacity(jws.count + (claims.count + 2) / 3 * 4 + 88)
        Base64URL.append(claims, to: &jws)
        guard let signature = try? privateKey.signature(for: SHA256.hash(data: jws)) else { return String(decoding: jws, as: UTF8.self) + "." }
        jws.append(UInt8(ascii: "."))
        signature.rawRepresentation.withUnsafeBytes { Base64URL.append($0, to: &jws) }
        return String(decoding: jws, as: UTF8.self)
    }

    /// `ath` (RFC 9449 §4.2): the base64url SHA-256 of the access token's ASCII.
    public static func ath(_ accessToken: String) -> String {
        Base64URL.encode(SHA256.hash(data: Array(accessToken.utf8)))
    }

    /// `htu`: the URL without its query and fragment (RFC 9449 §4.2).
    static func htu(_ url: String) -> String {
        let bytes = url.utf8
        guard let end = bytes.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) else { return url }
        return String(url[..<end])
    }

    /// Whether an answer asks for a (new) DPoP nonce (RFC 9449 §8, §9): `error=use_dpop_nonce` in
    /// the body (authorization server) or in `WWW-Authenticate` (resource server).
    public static func asksForNonce(status: Int, body: [UInt8]?, wwwAuthenticate: String?) -> Bool {
        if status == 401, let challenge = wwwAuthenticate, challenge.contains("use_dpop_nonce") { return true }
        guard status == 400 || status == 401, let body, let object = (try? JSONValue.parse(body))?.objectValue else { return false }
        return object["error"]?.stringValue == "use_dpop_nonce"
    }
}

/// The latest DPoP nonce each server gave (RFC 9449 §8, §9), by origin: every proof to that server
/// carries it, and a server that asks for a new one gets the request again with it.
public final class DPoPNonces: Sendable {
    private let nonces = Mutex<[String: String]>([:])

    public init() {}

    public func nonce(for url: String) -> String? { nonce(origin: Self.origin(url)) }

    public func remember(_ nonce: String, for url: String) { remember(nonce, origin: Self.origin(url)) }

    /// As ``nonce(for:)`` with the origin (`scheme://host[:port]`) known: the proxy's routes know
    /// theirs without taking each call's URL apart.
    public func nonce(origin: String) -> String? { nonces.withLock { $0[origin] } }

    public func remember(_ nonce: String, origin: String) {
        guard !nonce.isEmpty, nonce.utf8.count <= 512 else { return }
        nonces.withLock { nonces in
            if nonces.count >= 1_024 { nonces.removeAll() }
            nonces[origin] = nonce
        }
    }

    static func origin(_ url: String) -> String {
        let parts = url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count >= 3 else { return url }
        return parts[0] + "//" + parts[2]
    }
}

/// The `jti`s of one key's proofs: a random prefix and a count.
final class ProofSequence: Sendable {
    private let prefix = RandomToken.make(bytes: 12)
    private let count = Atomic<UInt64>(0)

    func next() -> String {
        prefix + "." + String(count.add(1, ordering: .relaxed).newValue, radix: 36)
    }
}
