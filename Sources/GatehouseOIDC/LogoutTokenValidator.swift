import FoundationEssentials

/// The claims of a validated back-channel logout token (OIDC Back-Channel Logout 1.0 §2.4).
/// Rejecting a replayed `jti` is the caller's job (it is stored with the sessions).
public struct LogoutTokenClaims: Sendable, Equatable {
    public let iss: String
    public let sub: String?
    public let sid: String?
    public let jti: String
    public let iat: Date

    public init(iss: String, sub: String?, sid: String?, jti: String, iat: Date) {
        self.iss = iss
        self.sub = sub
        self.sid = sid
        self.jti = jti
        self.iat = iat
    }
}

/// Why a logout token was refused (§2.6), naming the claim.
public enum LogoutTokenError: RegisteredClaimError, Sendable, Equatable, CustomStringConvertible {
    case signature(JWSVerificationError)
    case missingClaim(String)
    case invalidClaim(String, reason: String)
    case issuerMismatch(expected: String, actual: String)
    case audienceMismatch(clientID: String, audiences: [String])
    /// `iat` older than the accepted age (default 5 minutes plus clock skew).
    case tooOld(iat: Date, now: Date)
    case issuedInFuture(iat: Date, now: Date)
    case expired(exp: Date, now: Date)
    /// `events` lacks the `http://schemas.openid.net/event/backchannel-logout` member (as an object).
    case missingLogoutEvent
    /// Neither `sub` nor `sid` is present.
    case missingSubjectAndSessionID
    /// A `nonce` is present: it is an ID token, not a logout token (§2.4).
    case nonceForbidden

    public var description: String {
        switch self {
        case .signature(let error): "logout token: \(error)"
        case .missingClaim(let name): "logout token lacks the \(name) claim"
        case .invalidClaim(let name, let reason): "logout token claim \(name) \(reason)"
        case .issuerMismatch(let expected, let actual): "logout token iss \"\(actual)\" is not the issuer \"\(expected)\""
        case .audienceMismatch(let clientID, let audiences):
            "logout token aud [\(audiences.joined(separator: ", "))] does not contain the client id \"\(clientID)\""
        case .tooOld(let iat, let now):
            "logout token iat \(Int(iat.timeIntervalSince1970)) is too old (now \(Int(now.timeIntervalSince1970)))"
        case .issuedInFuture(let iat, let now):
            "logout token iat \(Int(iat.timeIntervalSince1970)) is in the future (now \(Int(now.timeIntervalSince1970)))"
        case .expired(let exp, let now):
            "logout token expired at \(Int(exp.timeIntervalSince1970)) (now \(Int(now.timeIntervalSince1970)))"
        case .missingLogoutEvent: "logout token events lack \(LogoutTokenValidator.backchannelLogoutEvent)"
        case .missingSubjectAndSessionID: "logout token has neither sub nor sid"
        case .nonceForbidden: "logout token carries a nonce (it is not a logout token)"
        }
    }
}

/// Validates logout tokens posted to `/backchannel-logout` (OIDC Back-Channel Logout 1.0 §2.6).
///
/// For example: `let logout = try await validator.validate(form["logout_token"], now: Date())`.
public struct LogoutTokenValidator: Sendable {
    public static let backchannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"

    public let issuer: String
    public let clientID: String
    public let keySet: KeySet
    public let clockSkew: TimeInterval
    /// How old `iat` may be (default 5 minutes), plus ``clockSkew``; bounds the replay window
    /// the caller's `jti` store must cover.
    public let maximumAge: TimeInterval

    public init(issuer: String, clientID: String, keySet: KeySet, clockSkew: TimeInterval = 60,
                maximumAge: TimeInterval = 300) {
        self.issuer = issuer
        self.clientID = clientID
        self.keySet = keySet
        self.clockSkew = ClockSkew.bounded(clockSkew)
        self.maximumAge = maximumAge.isFinite ? max(0, maximumAge) : 300
    }

    /// Verifies the signature (as for ID tokens) and the claims: `iss`, `aud`, `iat`, `exp` when
    /// present, `jti`, the back-channel-logout event, `sub` and/or `sid`, and no `nonce`.
    /// - Throws: ``LogoutTokenError``.
    public func validate(_ jwt: String, now: Date) async throws(LogoutTokenError) -> LogoutTokenClaims {
        let verified = try await LogoutTokenError.verified(jwt, by: keySet, from: .unsolicited)
        return try LogoutTokenError.checking { try check(verified.claims, now: now) }
    }

    func check(_ claims: [String: JSONValue], now: Date) throws -> LogoutTokenClaims {
        let reader = ClaimReader(claims: claims)
        let (iss, _) = try reader.issuerAndAudiences(issuer: issuer, clientID: clientID, as: LogoutTokenError.self)
        let iat = try reader.requiredDate("iat")
        guard iat <= now.addingTimeInterval(clockSkew) else { throw LogoutTokenError.issuedInFuture(iat: iat, now: now) }
        guard iat >= now.addingTimeInterval(-(maximumAge + clockSkew)) else { throw LogoutTokenError.tooOld(iat: iat, now: now) }
        if let exp = try reader.optionalDate("exp"), exp <= now.addingTimeInterval(-clockSkew) {
            throw LogoutTokenError.expired(exp: exp, now: now)
        }
        let jti = try reader.requiredString("jti")
        guard let events = claims["events"] else { throw LogoutTokenError.missingClaim("events") }
        guard let members = events.objectValue else { throw LogoutTokenError.invalidClaim("events", reason: "is not an object") }
        guard members[Self.backchannelLogoutEvent]?.objectValue != nil else { throw LogoutTokenError.missingLogoutEvent }
        let sub = try reader.optionalString("sub")
        let sid = try reader.optionalString("sid")
        guard sub != nil || sid != nil else { throw LogoutTokenError.missingSubjectAndSessionID }
        guard claims["nonce"] == nil else { throw LogoutTokenError.nonceForbidden }
        return LogoutTokenClaims(iss: iss, sub: sub, sid: sid, jti: jti, iat: iat)
    }
}
