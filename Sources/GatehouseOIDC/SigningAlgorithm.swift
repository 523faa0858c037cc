/// The asymmetric JWS algorithms Gatehouse accepts for provider-signed tokens (RFC 7518 §3, RFC 8037).
///
/// `none` and the HMAC family are absent on purpose: an unsigned token proves nothing, and an
/// HMAC "verified" with the provider's public key is forgeable by anyone (RFC 8725 §2.1, §3.1).
public enum SigningAlgorithm: String, Sendable, CaseIterable, Hashable {
    case rs256 = "RS256", rs384 = "RS384", rs512 = "RS512"
    case ps256 = "PS256", ps384 = "PS384", ps512 = "PS512"
    case es256 = "ES256", es384 = "ES384", es512 = "ES512"
    case eddsa = "EdDSA"

    /// The JWK `kty` a key must have for this algorithm.
    var keyType: String {
        switch self {
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512: "RSA"
        case .es256, .es384, .es512: "EC"
        case .eddsa: "OKP"
        }
    }

    /// The JWK `crv` an EC key must have (RFC 7518 §3.4), `nil` when any applies.
    var curve: String? {
        switch self {
        case .es256: "P-256"
        case .es384: "P-384"
        case .es512: "P-521"
        default: nil
        }
    }

    /// `none` in any spelling, or any `HS*`: refused before any key is looked at.
    static func isForbidden(_ alg: String) -> Bool {
        alg.lowercased() == "none" || alg.uppercased().hasPrefix("HS")
    }

    /// The provider's `id_token_signing_alg_values_supported` ∩ the asymmetric algorithms; RS256 when
    /// the provider lists none (OIDC Discovery §3: RS256 "MUST be included").
    public static func allowList(advertised: [String]?) -> Set<SigningAlgorithm> {
        guard let advertised, !advertised.isEmpty else { return [.rs256] }
        return Set(advertised.compactMap(SigningAlgorithm.init(rawValue:)))
    }
}
