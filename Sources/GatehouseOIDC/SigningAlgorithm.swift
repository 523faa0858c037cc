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

    /// The algorithms accepted for ID and logout tokens (algorithm pinning, RFC 8725 §3.1).
    ///
    /// `configured` (`GATEHOUSE_ID_TOKEN_ALGS`) wins when given. Otherwise RS256 — which every
    /// provider must support (OIDC Core §15.1, Discovery §3) — plus, when the provider's
    /// `id_token_signing_alg_values_supported` lists exactly one asymmetric algorithm, that one (so
    /// a provider that signs only ES256 works unconfigured). A provider that lists several is not
    /// trusted to pick among them per token: a token signed with an algorithm the client did not
    /// choose is refused (the OIDF `rp-backchannel-rpinitlogout-lt-wrong-alg` case).
    public static func allowList(configured: [String]?, advertised: [String]?) -> Set<SigningAlgorithm> {
        if let configured, !configured.isEmpty {
            return Set(configured.compactMap(SigningAlgorithm.init(rawValue:)))
        }
        var allowed: Set<SigningAlgorithm> = [.rs256]
        if let advertised, advertised.count == 1, let only = SigningAlgorithm(rawValue: advertised[0]) {
            allowed.insert(only)
        }
        return allowed
    }
}
