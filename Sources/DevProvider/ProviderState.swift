import GatehouseEncoding
/// Everything the provider remembers, as a value: the provider keeps one behind a `Mutex` and each
/// method here is one atomic step. Tokens are keyed by their digest, never stored themselves.
/// Times are seconds since the epoch, passed in so tests can move the clock.
struct ProviderState: Sendable {
    var codes: [TokenDigest: AuthorizationCodeRecord] = [:]
    var refreshTokens: [TokenDigest: RefreshTokenRecord] = [:]
    var accessTokens: [TokenDigest: AccessTokenRecord] = [:]
    var sessions: [String: ProviderSession] = [:]
    var statistics = DevProviderStatistics()
    var refreshBehaviour = RefreshBehaviour.normal
    private var nextFamily = 0

    // MARK: Authorization endpoint

    /// Starts a provider session for `user` and issues a code for `request` (RFC 6749 §4.1.2).
    mutating func issueCode(for request: AuthorizationRequest, user: DevUser, now: Int,
                            policy: TokenPolicy) -> String {
        removeExpired(now: now)
        let sessionID = SecureRandom.token()
        sessions[sessionID] = ProviderSession(user: user, ended: false)
        let authentication = Authentication(clientID: request.clientID, user: user, scopes: request.scopes,
                                            sessionID: sessionID, authTime: now)
        let code = SecureRandom.token()
        codes[TokenDigest(code)] = AuthorizationCodeRecord(
            request: request, authentication: authentication,
            expiresAt: now + policy.authorizationCodeLifetime)
        statistics.authorizationCodesIssued += 1
        return code
    }

    // MARK: Token endpoint

    /// The `authorization_code` grant (RFC 6749 §4.1.3, RFC 7636 §4.6). The code is consumed on
    /// its first presentation, whatever the outcome, so a wrong verifier cannot be retried.
    mutating func redeemCode(_ code: String, clientID: String, redirectURI: String?, codeVerifier: String?,
                             now: Int, policy: TokenPolicy) throws(OAuthError) -> IssuedTokens {
        removeExpired(now: now)
        let digest = TokenDigest(code)
        guard var record = codes[digest], now < record.expiresAt else {
            throw OAuthError(.invalidGrant, "unknown or expired authorization code")
        }
        guard !record.redeemed else {
            if let family = record.family { revokeFamily(family) }
            codes[digest] = nil
            throw OAuthError(.invalidGrant, "authorization code was already used; the tokens issued for it are revoked")
        }
        record.redeemed = true
        codes[digest] = record
        guard record.request.clientID == clientID else {
            throw OAuthError(.invalidGrant, "authorization code was issued to another client")
        }
        guard redirectURI == record.request.redirectURI else {
            throw OAuthError(.invalidGrant, "redirect_uri does not match the authorization request")
        }
        guard let codeVerifier else {
            throw OAuthError(.invalidRequest, "code_verifier is required (PKCE, RFC 7636)")
        }
        guard PKCE.verifierMatches(codeVerifier, challenge: record.request.codeChallenge) else {
            throw OAuthError(.invalidGrant, "code_verifier does not match the code_challenge")
        }
        try requireLiveSession(record.authentication.sessionID)
        let family = newFamily()
        record.family = family
        codes[digest] = record
        let refreshToken = SecureRandom.token()
        refreshTokens[TokenDigest(refreshToken)] = RefreshTokenRecord(
            family: family, authentication: record.authentication, isCurrent: true)
        return issueAccessToken(family: family, authentication: record.authentication,
                                refreshToken: refreshToken, nonce: record.request.nonce, now: now, policy: policy)
    }

    /// The `refresh_token` grant (RFC 6749 §6). With rotation, the presented token is retired and a
    /// new one returned; presenting a retired token revokes the family (RFC 9700 §4.14.2).
    mutating func refresh(_ refreshToken: String, clientID: String, requestedScopes: [String]?,
                          now: Int, policy: TokenPolicy) throws(OAuthError) -> IssuedTokens {
        removeExpired(now: now)
        let digest = TokenDigest(refreshToken)
        guard var record = refreshTokens[digest] else {
            throw OAuthError(.invalidGrant, "unknown or revoked refresh token")
        }
        guard record.authentication.clientID == clientID else {
            throw OAuthError(.invalidGrant, "refresh token was issued to another client")
        }
        guard record.isCurrent else {
            revokeFamily(record.family)
            throw OAuthError(.invalidGrant, "refresh token was already used and rotated; its token family is revoked")
        }
        try requireLiveSession(record.authentication.sessionID)
        var authentication = record.authentication
        if let requestedScopes {
            // RFC 6749 §6: the scope "MUST NOT include any scope not originally granted".
            guard Set(requestedScopes).isSubset(of: Set(authentication.scopes)) else {
                throw OAuthError(.invalidScope, "requested scope exceeds the scope originally granted")
            }
            authentication.scopes = requestedScopes
        }
        var returnedRefreshToken = refreshToken
        if policy.rotateRefreshTokens {
            record.isCurrent = false
            refreshTokens[digest] = record
            returnedRefreshToken = SecureRandom.token()
            refreshTokens[TokenDigest(returnedRefreshToken)] = RefreshTokenRecord(
                family: record.family, authentication: record.authentication, isCurrent: true)
        }
        return issueAccessToken(family: record.family, authentication: authentication,
                                refreshToken: returnedRefreshToken, nonce: nil, now: now, policy: policy)
    }

    private mutating func issueAccessToken(family: Int, authentication: Authentication, refreshToken: String,
                                           nonce: String?, now: Int, policy: TokenPolicy) -> IssuedTokens {
        let accessToken = SecureRandom.token()
        accessTokens[TokenDigest(accessToken)] = AccessTokenRecord(
            family: family, authentication: authentication, expiresAt: now + policy.accessTokenLifetime)
        return IssuedTokens(
            accessToken: accessToken, refreshToken: refreshToken, expiresIn: policy.accessTokenLifetime,
            scopes: authentication.scopes,
            idTokenClaims: IDTokenClaims(authentication: authentication, nonce: nonce, now: now, policy: policy))
    }

    private func requireLiveSession(_ sessionID: String) throws(OAuthError) {
        guard let session = sessions[sessionID], !session.ended else {
            throw OAuthError(.invalidGrant, "the provider session of this grant has ended (logout)")
        }
    }

    // MARK: Revocation and user info

    /// RFC 7009 §2.1: revoking a refresh token also invalidates the access tokens of the same grant.
    /// `hint` only decides which table is searched first.
    mutating func revoke(_ token: String, hint: String?, clientID: String, now: Int) -> RevocationOutcome {
        removeExpired(now: now)
        let digest = TokenDigest(token)
        let lookups: [Bool] = hint == "access_token" ? [false, true] : [true, false]
        for isRefresh in lookups {
            if isRefresh, let record = refreshTokens[digest] {
                guard record.authentication.clientID == clientID else { return .issuedToAnotherClient }
                revokeFamily(record.family)
                return .refreshTokenFamilyRevoked
            }
            if !isRefresh, let record = accessTokens[digest] {
                guard record.authentication.clientID == clientID else { return .issuedToAnotherClient }
                accessTokens[digest] = nil
                return .accessTokenRevoked
            }
        }
        return .unknownToken
    }

    /// The sign-in behind a valid, unexpired access token.
    mutating func authentication(forAccessToken token: String, now: Int) -> Authentication? {
        removeExpired(now: now)
        guard let record = accessTokens[TokenDigest(token)],
              let session = sessions[record.authentication.sessionID], !session.ended else { return nil }
        return record.authentication
    }

    // MARK: Sessions

    /// Ends provider sessions with `sessionID`, or every session of `subject` when no id is given,
    /// and revokes the tokens issued in them. Returns the sessions that were still live.
    mutating func endSessions(subject: String?, sessionID: String?) -> [String] {
        var ended: [String] = []
        for (id, session) in sessions where !session.ended {
            let matches: Bool
            if let sessionID {
                matches = id == sessionID && (subject == nil || subject == session.user.subject)
            } else if let subject {
                matches = session.user.subject == subject
            } else {
                matches = false
            }
            if matches {
                sessions[id]?.ended = true
                ended.append(id)
            }
        }
        let endedSet = Set(ended)
        refreshTokens = refreshTokens.filter { !endedSet.contains($0.value.authentication.sessionID) }
        accessTokens = accessTokens.filter { !endedSet.contains($0.value.authentication.sessionID) }
        statistics.sessionsEnded += ended.count
        return ended
    }

    // MARK: Housekeeping

    private mutating func newFamily() -> Int {
        nextFamily += 1
        return nextFamily
    }

    private mutating func revokeFamily(_ family: Int) {
        refreshTokens = refreshTokens.filter { $0.value.family != family }
        accessTokens = accessTokens.filter { $0.value.family != family }
    }

    /// Drops expired codes and access tokens so a long demo does not grow without bound.
    private mutating func removeExpired(now: Int) {
        codes = codes.filter { now < $0.value.expiresAt }
        accessTokens = accessTokens.filter { now < $0.value.expiresAt }
    }
}
