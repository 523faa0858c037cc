/// Whether the ID-token algorithms Gatehouse accepts can verify what the provider signs with: a
/// provider that signs only ES256 while Gatehouse accepts only RS256 passes discovery and fails
/// every callback, so `gatehouse check` asks this and fails first.
///
/// Pure: the accepted set, the provider's advertised list and the algorithms its keys fit.
public enum IDTokenAlgorithmFit {
    /// A sentence for the operator when the accepted algorithms fit nothing the provider offers,
    /// else nil. `advertised` is `id_token_signing_alg_values_supported` (nil when absent);
    /// `keyAlgorithms` the accepted-or-not algorithms the provider's JWKS has a key for (nil when
    /// the key set was not read).
    public static func problem(accepted: Set<SigningAlgorithm>, advertised: [String]?,
                               keyAlgorithms: Set<SigningAlgorithm>?) -> String? {
        let offered = (advertised ?? []).compactMap(SigningAlgorithm.init(rawValue:))
        let acceptedNames = accepted.map(\.rawValue).sorted().joined(separator: ", ")
        if let advertised, !advertised.isEmpty, accepted.isDisjoint(with: offered) {
            let suggestion = offered.isEmpty
                ? "the provider lists no asymmetric algorithm (\(advertised.joined(separator: ", "))): configure it to sign ID tokens with RS256, PS256, ES256 or EdDSA"
                : "set GATEHOUSE_ID_TOKEN_ALGS=\(offered.map(\.rawValue).joined(separator: ","))"
            return "accepted ID token algorithms (\(acceptedNames)) are not in the provider's "
                + "id_token_signing_alg_values_supported (\(advertised.joined(separator: ", "))); \(suggestion)"
        }
        if let keyAlgorithms, accepted.isDisjoint(with: keyAlgorithms) {
            let fitting = keyAlgorithms.intersection(offered.isEmpty ? keyAlgorithms : Set(offered))
            let suggestion = fitting.isEmpty ? "check the provider's signing keys"
                : "set GATEHOUSE_ID_TOKEN_ALGS=\(fitting.map(\.rawValue).sorted().joined(separator: ","))"
            return "the provider's jwks_uri has no key for the accepted ID token algorithms (\(acceptedNames)); \(suggestion)"
        }
        return nil
    }
}

extension KeySet {
    /// Every algorithm some key of the set can verify (its type, curve and `alg` fit), read after
    /// `refresh()`; empty before.
    public var keyAlgorithms: Set<SigningAlgorithm> {
        Set(SigningAlgorithm.allCases.filter { !matchingKeys(kid: nil, algorithm: $0).isEmpty })
    }
}
