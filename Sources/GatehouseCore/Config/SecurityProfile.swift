import GatehouseEncoding

/// `GATEHOUSE_SECURITY_PROFILE`: `fapi2` refuses at start what the FAPI 2.0 Security Profile forbids
/// a client (SPEC "FAPI 2.0: PAR and DPoP"), each refusal naming the variable to change:
///
/// - client authentication other than `private_key_jwt` (the profile allows `private_key_jwt` or mTLS,
///   which Gatehouse does not offer; no client secrets);
/// - `GATEHOUSE_PAR=off` (the profile requires pushed authorization requests; `auto` is taken as `on`,
///   so a provider without PAR stops `serve`);
/// - tokens that are not sender-constrained: `GATEHOUSE_DPOP` must be `on` (the profile: DPoP or mTLS);
/// - ID-token algorithms other than PS256, ES256 and EdDSA (the profile's cryptography section: RS256
///   is not allowed); left unset, `GATEHOUSE_ID_TOKEN_ALGS` means those three under this profile
///   (`idTokenAlgorithmsDefault`), not the usual RS256;
/// - a plain `http` public URL, except on loopback (development); the provider's issuer must be
///   https outside loopback with or without the profile.
///
/// - `GATEHOUSE_CLIENT_KEY_ALG=RS256` (`auto` signs PS256 with an RSA key under this profile).
///
/// PKCE with S256, the code flow only and RFC 9207 `iss` checks are what Gatehouse always does.
/// Client assertions name the provider's issuer as their sole audience under this profile.
public enum SecurityProfile: String, Sendable, Equatable {
    case none
    case fapi2

    /// The FAPI 2.0 Security Profile's signing algorithms.
    public static let fapi2AlgorithmList = ["PS256", "ES256", "EdDSA"]
    public static let fapi2Algorithms = Set(fapi2AlgorithmList)

    /// What an unset `GATEHOUSE_ID_TOKEN_ALGS` means under this profile: the general default accepts
    /// RS256, which the profile forbids, so an operator who chose nothing gets the profile's list.
    public var idTokenAlgorithmsDefault: [String]? {
        self == .fapi2 ? Self.fapi2AlgorithmList : nil
    }

    /// The problems of one provider's settings under this profile, as (variable, message); the
    /// variable is the unprefixed name (the reader scopes it to the provider).
    public func problems(of provider: ProviderSettings, publicURL: PublicURL?) -> [(variable: String, message: String)] {
        guard self == .fapi2 else { return [] }
        var out: [(String, String)] = []
        let why = "which GATEHOUSE_SECURITY_PROFILE=fapi2 (FAPI 2.0 Security Profile) does not allow"
        if provider.clientAuthMethod != .privateKeyJWT {
            out.append(("GATEHOUSE_CLIENT_AUTH_METHOD",
                        "is \(provider.clientAuthMethod.rawValue), \(why): use private_key_jwt with GATEHOUSE_CLIENT_PRIVATE_KEY (ES256 or PS256)"))
        }
        if provider.clientKeyAlgorithm == .rs256 {
            out.append(("GATEHOUSE_CLIENT_KEY_ALG", "is RS256, \(why): use PS256 (RSA key) or ES256 (P-256 key), or auto"))
        }
        if provider.pushedAuthorization == .off {
            out.append(("GATEHOUSE_PAR", "is off, \(why): pushed authorization requests are required (set on or auto)"))
        }
        if provider.dpop != .on {
            out.append(("GATEHOUSE_DPOP", "is off, \(why): tokens must be sender-constrained (set GATEHOUSE_DPOP=on)"))
        }
        if let algorithms = provider.idTokenAlgorithms, !algorithms.allSatisfy(Self.fapi2Algorithms.contains) {
            out.append(("GATEHOUSE_ID_TOKEN_ALGS",
                        "accepts \(algorithms.joined(separator: ", ")), \(why): set it to PS256, ES256 and/or EdDSA, or leave it unset"))
        }
        if let publicURL, publicURL.scheme != "https", !LoopbackHost.contains(publicURL.host) {
            out.append(("GATEHOUSE_PUBLIC_URL", "is not https, \(why) (only loopback may be plain http, for development)"))
        }
        return out
    }

}
