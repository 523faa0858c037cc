/// The checks ID tokens (OIDC Core §3.1.3.7 steps 2–3) and logout tokens (Back-Channel Logout 1.0
/// §2.6 step 3) share: `iss` is the issuer exactly, `aud` contains the client id. Each token kind
/// keeps its own typed error; the enum cases of the same names witness this protocol.
protocol RegisteredClaimError: Error {
    static func signature(_ error: JWSVerificationError) -> Self
    static func missingClaim(_ name: String) -> Self
    static func invalidClaim(_ name: String, reason: String) -> Self
    static func issuerMismatch(expected: String, actual: String) -> Self
    static func audienceMismatch(clientID: String, audiences: [String]) -> Self
}

extension RegisteredClaimError {
    init(_ problem: ClaimProblem) {
        switch problem {
        case .missing(let name): self = .missingClaim(name)
        case .invalid(let name, let reason): self = .invalidClaim(name, reason: reason)
        }
    }

    /// Verifies `jwt`'s signature with the provider's keys; a failure becomes the token's own error.
    static func verified(_ jwt: String, by keySet: KeySet, from channel: TokenChannel) async throws(Self) -> VerifiedJWS {
        do {
            return try await keySet.verify(jwt, from: channel)
        } catch {
            throw .signature(error)
        }
    }

    /// Runs a token's claim checks, turning a `ClaimProblem` (missing or mistyped claim) into the
    /// token's own error.
    static func checking<Claims>(_ check: () throws -> Claims) throws(Self) -> Claims {
        do {
            return try check()
        } catch let error as Self {
            throw error
        } catch let problem as ClaimProblem {
            throw Self(problem)
        } catch {
            throw .invalidClaim("?", reason: "\(error)")
        }
    }
}

extension ClaimReader {
    /// `iss` equal to `issuer` (or as the provider profile's ``IssuerPolicy`` allows) and `aud`
    /// containing `clientID`, in that order.
    func issuerAndAudiences<Failure: RegisteredClaimError>(issuer: String, clientID: String, as failure: Failure.Type,
                                                           policy: IssuerPolicy = .exact) throws -> (iss: String, audiences: [String]) {
        let iss = try requiredString("iss")
        guard policy.acceptsTokenIssuer(iss, issuer: issuer, claims: claims) else { throw Failure.issuerMismatch(expected: issuer, actual: iss) }
        let audiences = try audiences()
        guard audiences.contains(clientID) else { throw Failure.audienceMismatch(clientID: clientID, audiences: audiences) }
        return (iss, audiences)
    }
}
