/// `GATEHOUSE_CLIENT_KEY_ALG` (per provider `GATEHOUSE_IDP_<NAME>_CLIENT_KEY_ALG`): what the
/// `private_key_jwt` client key signs with. `auto` takes ES256 for a P-256 key; for an RSA key PS256
/// under `GATEHOUSE_SECURITY_PROFILE=fapi2` or when the provider lists PS256 but not RS256 in
/// `token_endpoint_auth_signing_alg_values_supported`, else RS256.
public enum ClientKeyAlgorithm: String, Sendable, Equatable, CaseIterable {
    case auto
    case rs256 = "RS256"
    case ps256 = "PS256"
    case es256 = "ES256"

    /// Case-insensitive, as operators write `ps256` as often as `PS256`.
    public init?(configured text: String) {
        guard let match = Self.allCases.first(where: { $0.rawValue.lowercased() == text.lowercased() }) else { return nil }
        self = match
    }
}
