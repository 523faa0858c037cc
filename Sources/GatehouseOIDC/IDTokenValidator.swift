import FoundationEssentials
import GatehouseEncoding

/// Validates ID tokens as OpenID Connect Core §3.1.3.7 requires.
///
/// For example:
/// `let claims = try await validator.validate(tokens.idToken, expectedNonce: pending.nonce, now: Date())`
public struct IDTokenValidator: Sendable {
    public let issuer: String
    public let clientID: String
    public let keySet: KeySet
    /// Tolerance for `exp`, `iat` and `nbf`, bounded to 0…300 s.
    public let clockSkew: TimeInterval
    /// The provider profile's issuer rule (Google's two forms, Entra's tenant template).
    public let issuerPolicy: IssuerPolicy

    public init(issuer: String, clientID: String, keySet: KeySet, clockSkew: TimeInterval = 60,
                issuerPolicy: IssuerPolicy = .exact) {
        self.issuerPolicy = issuerPolicy
        self.issuer = issuer
        self.clientID = clientID
        self.keySet = keySet
        self.clockSkew = ClockSkew.bounded(clockSkew)
    }

    /// Validates the ID token of a code exchange: signature (JWKS, `kid`, allow-listed `alg`),
    /// `iss`, `aud`, `azp`, `exp`, `iat`, `nbf`, `sub`, and `nonce` equal (constant-time) to the
    /// nonce stored with the pending login.
    /// - Throws: ``IDTokenError`` naming the failed check.
    public func validate(_ jwt: String, expectedNonce: String, now: Date) async throws(IDTokenError) -> IDTokenClaims {
        let claims = try await validatedClaims(jwt, now: now)
        guard let nonce = claims.nonce else { throw .missingClaim("nonce") }
        guard !expectedNonce.isEmpty, ConstantTime.equals(nonce, expectedNonce) else { throw .nonceMismatch }
        return claims
    }

    /// Validates an ID token returned by a refresh (OIDC Core §12.2) against the claims of the
    /// session's original ID token: signature, `iss`, `aud`, `azp`, `exp`, `iat` as at login; `sub`
    /// equal to the original's; `auth_time`, when both carry it, unchanged (it names the original
    /// authentication); no nonce is required, but one that is present must be the original's.
    /// - Throws: ``IDTokenError``; the caller must then keep the session's claims as they are.
    public func validateRefreshed(_ jwt: String, original: [String: JSONValue], now: Date) async throws(IDTokenError) -> IDTokenClaims {
        let claims = try await validatedClaims(jwt, now: now)
        guard case .string(let originalSubject)? = original["sub"], claims.sub == originalSubject else {
            throw .subjectMismatch
        }
        if case .string(let originalIssuer)? = original["iss"], !issuerPolicy.sameIssuer(originalIssuer, claims.issuer) {
            throw .issuerMismatch(expected: originalIssuer, actual: claims.issuer)
        }
        if let authTime = claims.all["auth_time"], let originalAuthTime = original["auth_time"], authTime != originalAuthTime {
            throw .authTimeChanged
        }
        if let nonce = claims.nonce {
            guard case .string(let originalNonce)? = original["nonce"], ConstantTime.equals(nonce, originalNonce) else {
                throw .nonceMismatch
            }
        }
        return claims
    }

    private func validatedClaims(_ jwt: String, now: Date) async throws(IDTokenError) -> IDTokenClaims {
        let verified = try await IDTokenError.verified(jwt, by: keySet, from: .providerResponse)
        if let typ = verified.type, typ.lowercased() == "logout+jwt" { throw .unexpectedTokenType(typ) }
        return try IDTokenError.checking { try check(verified.claims, now: now) }
    }

    /// The claim checks, in the order of §3.1.3.7 (the signature is already verified).
    func check(_ claims: [String: JSONValue], now: Date) throws -> IDTokenClaims {
        let reader = ClaimReader(claims: claims)
        let (iss, audiences) = try reader.issuerAndAudiences(issuer: issuer, clientID: clientID, as: IDTokenError.self,
                                                                 policy: issuerPolicy)
        let azp = try reader.optionalString("azp")
        if audiences.count > 1 && azp == nil { throw IDTokenError.authorizedPartyMissing(audiences: audiences) }
        if let azp, azp != clientID { throw IDTokenError.authorizedPartyMismatch(clientID: clientID, azp: azp) }
        let exp = try reader.requiredDate("exp")
        guard exp > now.addingTimeInterval(-clockSkew) else { throw IDTokenError.expired(exp: exp, now: now) }
        let iat = try reader.requiredDate("iat")
        guard iat <= now.addingTimeInterval(clockSkew) else { throw IDTokenError.issuedInFuture(iat: iat, now: now) }
        if let nbf = try reader.optionalDate("nbf"), nbf > now.addingTimeInterval(clockSkew) {
            throw IDTokenError.notYetValid(nbf: nbf, now: now)
        }
        let sub = try reader.requiredString("sub")
        return IDTokenClaims(issuer: iss, sub: sub, audiences: audiences, sid: try reader.optionalString("sid"),
                             exp: exp, iat: iat, nonce: try reader.optionalString("nonce"), all: claims)
    }
}
