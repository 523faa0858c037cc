/// Why the provider's JWKS could not be loaded.
public enum KeySetError: Error, Sendable, Equatable, CustomStringConvertible {
    case transport(ProviderTransportError)
    case unexpectedStatus(Int)
    case malformed(String)
    /// The set holds no key Gatehouse can verify with (asymmetric, `use` absent or `sig`).
    case noUsableKeys

    public var description: String {
        switch self {
        case .transport(let error): "cannot fetch jwks_uri: \(error)"
        case .unexpectedStatus(let status): "jwks_uri answered HTTP \(status)"
        case .malformed(let reason): "jwks_uri returned an invalid JWK set: \(reason)"
        case .noUsableKeys: "jwks_uri holds no usable signature key (RSA, EC or OKP with use \"sig\")"
        }
    }
}

/// Why a JWS signature was not accepted (shared by ID-token and logout-token validation).
public enum JWSVerificationError: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed(String)
    /// `alg: none` or an HMAC algorithm: never acceptable for a provider-signed token.
    case forbiddenAlgorithm(String)
    /// An algorithm outside the allow-list (provider's `id_token_signing_alg_values_supported` ∩ asymmetric).
    case algorithmNotAllowed(String, allowed: [String])
    /// A `crit` header names extensions Gatehouse does not understand (RFC 7515 §4.1.11).
    case unsupportedCriticalHeader([String])
    /// No key in the JWKS (after at most one rate-limited refetch) matches `kid` and `alg`.
    case unknownKey(kid: String?)
    case keySetUnavailable(KeySetError)
    case invalidSignature(kid: String?)

    public var description: String {
        switch self {
        case .malformed(let reason): "malformed JWT: \(reason)"
        case .forbiddenAlgorithm(let alg): "JWT alg \"\(alg)\" is forbidden (unsigned or symmetric)"
        case .algorithmNotAllowed(let alg, let allowed):
            "JWT alg \"\(alg)\" is not allowed (allowed: \(allowed.sorted().joined(separator: ", ")))"
        case .unsupportedCriticalHeader(let names): "JWT crit header names unsupported extensions: \(names.joined(separator: ", "))"
        case .unknownKey(let kid): "no key in the provider's JWKS matches kid \(kid.map { "\"\($0)\"" } ?? "(none)")"
        case .keySetUnavailable(let error): "\(error)"
        case .invalidSignature(let kid): "JWT signature does not verify (kid \(kid ?? "(none)"))"
        }
    }
}
