import FoundationEssentials

/// The claims of a validated ID token (OIDC Core §2).
public struct IDTokenClaims: Sendable, Equatable {
    public let issuer: String
    public let sub: String
    public let audiences: [String]
    /// The provider's session id, used by back-channel logout (OIDC Back-Channel Logout §2.1).
    public let sid: String?
    public let exp: Date
    public let iat: Date
    public let nonce: String?
    /// Every claim, as received, for `/user`.
    public let all: [String: JSONValue]
}

/// Why an ID token was refused; one case per check of OIDC Core §3.1.3.7, naming the claim,
/// so the log tells the operator why. Secret values (nonce, token) never appear.
public enum IDTokenError: RegisteredClaimError, Sendable, Equatable, CustomStringConvertible {
    /// Signature, `alg`, `kid` or JWKS problem (steps 6–8).
    case signature(JWSVerificationError)
    case missingClaim(String)
    case invalidClaim(String, reason: String)
    /// Step 2: `iss` must equal the issuer exactly.
    case issuerMismatch(expected: String, actual: String)
    /// Step 3: `aud` must contain the client id.
    case audienceMismatch(clientID: String, audiences: [String])
    /// Step 4: several audiences and no `azp`.
    case authorizedPartyMissing(audiences: [String])
    /// Step 5: `azp` is present and is not the client id.
    case authorizedPartyMismatch(clientID: String, azp: String)
    /// Step 9: `exp` is past (beyond the clock skew).
    case expired(exp: Date, now: Date)
    /// Step 10: `iat` is in the future (beyond the clock skew).
    case issuedInFuture(iat: Date, now: Date)
    /// RFC 7519 §4.1.5: `nbf` is in the future (beyond the clock skew).
    case notYetValid(nbf: Date, now: Date)
    /// Step 11: `nonce` differs from the one stored with the pending login.
    case nonceMismatch
    /// OIDC Core §12.2: a refreshed ID token names another subject.
    case subjectMismatch
    /// The token declares itself another kind of JWT (e.g. `typ: logout+jwt`).
    case unexpectedTokenType(String)
    /// OIDC Core §12.2: a refreshed ID token's `auth_time` differs from the original authentication's.
    case authTimeChanged

    /// The claim the failed check concerns, for a log field.
    public var claim: String? {
        switch self {
        case .signature: nil
        case .missingClaim(let name), .invalidClaim(let name, _): name
        case .issuerMismatch: "iss"
        case .audienceMismatch: "aud"
        case .authorizedPartyMissing, .authorizedPartyMismatch: "azp"
        case .expired: "exp"
        case .issuedInFuture: "iat"
        case .notYetValid: "nbf"
        case .nonceMismatch: "nonce"
        case .subjectMismatch: "sub"
        case .unexpectedTokenType: "typ"
        case .authTimeChanged: "auth_time"
        }
    }

    public var description: String {
        switch self {
        case .signature(let error): "ID token: \(error)"
        case .missingClaim(let name): "ID token lacks the \(name) claim"
        case .invalidClaim(let name, let reason): "ID token claim \(name) \(reason)"
        case .issuerMismatch(let expected, let actual): "ID token iss \"\(actual)\" is not the issuer \"\(expected)\""
        case .audienceMismatch(let clientID, let audiences):
            "ID token aud [\(audiences.joined(separator: ", "))] does not contain the client id \"\(clientID)\""
        case .authorizedPartyMissing(let audiences):
            "ID token has several audiences [\(audiences.joined(separator: ", "))] and no azp"
        case .authorizedPartyMismatch(let clientID, let azp): "ID token azp \"\(azp)\" is not the client id \"\(clientID)\""
        case .expired(let exp, let now):
            "ID token expired at \(Int(exp.timeIntervalSince1970)) (now \(Int(now.timeIntervalSince1970))); check the clocks"
        case .issuedInFuture(let iat, let now):
            "ID token iat \(Int(iat.timeIntervalSince1970)) is in the future (now \(Int(now.timeIntervalSince1970))); check the clocks"
        case .notYetValid(let nbf, let now):
            "ID token nbf \(Int(nbf.timeIntervalSince1970)) is in the future (now \(Int(now.timeIntervalSince1970)))"
        case .nonceMismatch: "ID token nonce does not match the pending login's nonce"
        case .subjectMismatch: "refreshed ID token names another sub than the session"
        case .unexpectedTokenType(let typ): "JWT typ \"\(typ)\" is not an ID token"
        case .authTimeChanged: "refreshed ID token auth_time differs from the original authentication's"
        }
    }
}
