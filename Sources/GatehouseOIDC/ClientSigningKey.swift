import FoundationEssentials
import JWTKit
import GatehouseEncoding

/// The client's private key for `private_key_jwt` (OIDC Core §9): an RSA key (RS256 or PS256) or a
/// P-256 key (ES256) in PEM (PKCS#8 or the traditional encodings). The provider knows the public half
/// from the client's registration. Its description never shows the key.
public struct ClientSigningKey: Sendable, CustomStringConvertible {
    public enum Algorithm: String, Sendable, CaseIterable { case rs256 = "RS256", ps256 = "PS256", es256 = "ES256" }

    /// What a PEM holds; RSA keys below 2048 bits are refused when read.
    public enum KeyType: Sendable, Equatable {
        case rsa, p256

        var algorithms: [Algorithm] { self == .rsa ? [.rs256, .ps256] : [.es256] }
        var name: String { self == .rsa ? "an RSA key" : "a P-256 key" }
    }

    public let algorithm: Algorithm
    /// The `kid` put in the assertion's header, when the registration has several keys.
    public let keyID: String?
    private let signers: JWTKeyCollection

    /// - Parameter algorithm: what the key signs with; nil for the key's own default (RS256 for
    ///   RSA, ES256 for P-256). Use ``algorithm(for:requested:fapi2:advertised:)`` to choose it.
    /// - Throws: ``TokenEndpointError/invalidConfiguration(_:)`` when the PEM holds no RSA or
    ///   P-256 private key, or a key that cannot sign with `algorithm`.
    public init(pem: String, keyID: String?, algorithm: Algorithm? = nil) async throws(TokenEndpointError) {
        let signers = JWTKeyCollection()
        let identifier = keyID.map { JWKIdentifier(string: $0) }
        if let rsa = try? Insecure.RSA.PrivateKey(pem: pem) {
            switch algorithm ?? .rs256 {
            case .rs256: await signers.add(rsa: rsa, digestAlgorithm: .sha256, kid: identifier)
            case .ps256: await signers.add(pss: rsa, digestAlgorithm: .sha256, kid: identifier)
            case .es256: throw .invalidConfiguration(Self.mismatch(.rsa, .es256))
            }
            self.algorithm = algorithm ?? .rs256
        } else if let ec = try? ES256PrivateKey(pem: pem) {
            guard (algorithm ?? .es256) == .es256 else { throw .invalidConfiguration(Self.mismatch(.p256, algorithm ?? .es256)) }
            await signers.add(ecdsa: ec, kid: identifier)
            self.algorithm = .es256
        } else {
            throw .invalidConfiguration(Self.unusable)
        }
        self.keyID = keyID
        self.signers = signers
    }

    private static let unusable = "GATEHOUSE_CLIENT_PRIVATE_KEY holds no RSA (2048 bits or more) or P-256 private key in PEM"

    private static func mismatch(_ type: KeyType, _ algorithm: Algorithm) -> String {
        "GATEHOUSE_CLIENT_KEY_ALG is \(algorithm.rawValue), but GATEHOUSE_CLIENT_PRIVATE_KEY is \(type.name), "
            + "which signs \(type.algorithms.map(\.rawValue).joined(separator: " or ")) only"
    }

    /// What `pem` holds, or nil when it is no usable key.
    public static func keyType(pem: String) -> KeyType? {
        if (try? ES256PrivateKey(pem: pem)) != nil { return .p256 }
        if (try? Insecure.RSA.PrivateKey(pem: pem)) != nil { return .rsa }
        return nil
    }

    /// Why `pem` cannot serve as the client key with `requested` (nil: chosen later) under the
    /// FAPI 2.0 profile or not, or nil; synchronous, for start-up checks.
    public static func problem(pem: String, requested: Algorithm? = nil, fapi2: Bool = false) -> String? {
        guard let type = keyType(pem: pem) else { return unusable }
        if let requested, !type.algorithms.contains(requested) { return mismatch(type, requested) }
        if fapi2, requested == .rs256 {
            return "GATEHOUSE_CLIENT_KEY_ALG is RS256, which GATEHOUSE_SECURITY_PROFILE=fapi2 does not allow: use PS256 (RSA) or a P-256 key (ES256)"
        }
        return nil
    }

    /// The algorithm a key of `type` signs client assertions with: `requested` when set; else
    /// ES256 for P-256; for RSA, PS256 under the FAPI 2.0 profile (which forbids RS256) or when the
    /// provider's `token_endpoint_auth_signing_alg_values_supported` lists PS256 but not RS256,
    /// otherwise RS256 (what every provider that takes RSA keys accepts).
    public static func algorithm(for type: KeyType, requested: Algorithm?, fapi2: Bool, advertised: [String]?) -> Algorithm {
        if let requested { return requested }
        guard type == .rsa else { return .es256 }
        if fapi2 { return .ps256 }
        if let advertised, advertised.contains("PS256"), !advertised.contains("RS256") { return .ps256 }
        return .rs256
    }

    public var description: String { "ClientSigningKey(\(algorithm.rawValue), kid: \(keyID ?? "none"))" }

    /// A `private_key_jwt` assertion: `iss` = `sub` = the client id, `aud` = `audience` (the token
    /// endpoint, or the issuer under FAPI 2.0), a random `jti`, `iat`, `exp` one minute later
    /// (RFC 7523 §3).
    func assertion(clientID: String, audience: String, now: Date) async throws(TokenEndpointError) -> String {
        let issuedAt = Double(Int(now.timeIntervalSince1970))
        let claims = RawClaims(claims: [
            "iss": .string(clientID), "sub": .string(clientID), "aud": .string(audience),
            "jti": .string(RandomToken.make()), "iat": .number(issuedAt), "exp": .number(issuedAt + ClientAssertion.lifetime),
        ])
        return try await sign(claims)
    }

    /// `claims` signed with this key, its `kid` (and `type` as `typ`) in the header.
    func sign(_ claims: RawClaims, type: String? = nil) async throws(TokenEndpointError) -> String {
        var header = JWTHeader()
        header.typ = type
        do {
            return try await signers.sign(claims, kid: keyID.map { JWKIdentifier(string: $0) }, header: header)
        } catch {
            throw .invalidConfiguration("cannot sign the client assertion: \(error)")
        }
    }
}
