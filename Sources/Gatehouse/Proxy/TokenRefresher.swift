import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import GatehouseCore
import GatehouseOIDC
import GatehouseSessions
import Logging

/// Keeps a session's access token fresh, one refresh per session at a time.
///
/// With refresh-token rotation (RFC 9700 §4.14.2) two concurrent refreshes would spend the same
/// refresh token twice and the provider would revoke the whole family, logging the user out. So:
/// in this process, concurrent requests of a session await the same refresh task; across processes
/// sharing the database, a lease row (taken inside `BEGIN IMMEDIATE`) admits one refresher, and the
/// others wait until the session's version changes. The new tokens are stored before anyone uses them.
public final class TokenRefresher: Sendable {
    public enum Outcome: Sendable {
        /// A session whose access token is valid now.
        case fresh(Session)
        /// The provider refused the refresh (`RefreshFailure.grantRefused`) or the session is gone: answer 401.
        case ended
        /// The provider could not be asked: answer 502, keep the session.
        case unavailable(String)
    }

    private let providers: ProviderRegistry
    fileprivate var registry: ProviderRegistry { providers }
    fileprivate let sessions: SessionCache
    private let metrics: GatewayMetrics
    /// Seconds before expiry at which an access token is refreshed (`GATEHOUSE_REFRESH_MARGIN`).
    let margin: Int64
    fileprivate let logger: Logger
    /// Unix seconds: the gateway's clock (`GatewayContext.now`), never read here directly.
    fileprivate let now: @Sendable () -> Int64
    private let owner = "gatehouse-\(getpid())-\(UUID().uuidString.prefix(8))"
    fileprivate var leaseOwner: String { owner }
    private let refreshes = SingleFlight<String, Outcome>()

    public init(providers: ProviderRegistry, sessions: SessionCache,
                metrics: GatewayMetrics, configuration: GatehouseConfiguration, logger: Logger,
                now: @escaping @Sendable () -> Int64) {
        self.now = now
        self.providers = providers
        self.sessions = sessions
        self.metrics = metrics
        margin = Int64(configuration.refreshMargin)
        self.logger = logger
    }

    /// Refresh a little before expiry: the configured margin, or a tenth of the token's lifetime when
    /// that is smaller (a 60 s margin would refresh a 30 s token on every request).
    func needsRefresh(_ tokens: TokenSet, now: Int64) -> Bool {
        AccessTokenRenewal.isDue(expiresAt: tokens.accessTokenExpiresAt, lifetime: tokens.accessTokenLifetime,
                                 margin: margin, now: now)
    }

    /// A session with a usable access token, refreshing it first when needed.
    public func ensureFresh(_ session: Session, now: Int64) async -> Outcome {
        guard needsRefresh(session.tokens, now: now) else { return .fresh(session) }
        guard session.tokens.refreshToken != nil else {
            if let expiresAt = session.tokens.accessTokenExpiresAt, now >= expiresAt { return .ended }
            return .fresh(session)
        }
        let idHash = session.idHash
        let outcome = await refreshes.run(idHash) { await self.refresh(idHash: idHash) }
        // If the provider is down but the current token has not expired yet, it can still be used.
        if case .unavailable = outcome, let expiresAt = session.tokens.accessTokenExpiresAt, now < expiresAt {
            return .fresh(session)
        }
        return outcome
    }

    private func refresh(idHash: String) async -> Outcome {
        await holdingLease(idHash: idHash, owner: owner, unavailable: { Outcome.unavailable($0) },
                           whileAnotherHolds: { now in
            // Another process is refreshing: its result may be what this one needs.
            switch await self.storedUnlessDue(idHash: idHash, now: now) {
            case .decided(let outcome): return outcome
            case .due: return nil
            }
        }, body: { now in await self.refreshHoldingLease(idHash: idHash, now: now) })
    }

    /// Runs `body` holding the session's refresh lease as `owner` (taken inside the store's write
    /// transaction: one holder across every instance), for up to 30 s: while another holds it,
    /// every 100 ms `whileAnotherHolds` may decide the answer instead (nil: try again).
    fileprivate func holdingLease<Result>(idHash: String, owner: String, unavailable: (String) -> Result,
                                          whileAnotherHolds: (Int64) async -> Result?,
                                          body: (Int64) async -> Result) async -> Result {
        let deadline = self.now() + 30
        while self.now() < deadline {
            let now = self.now()
            let acquired: Bool
            do {
                acquired = try await sessions.acquireRefreshLease(idHash: idHash, owner: owner, now: now, duration: 30)
            } catch {
                return unavailable("session store: \(error)")
            }
            guard acquired else {
                try? await Task.sleep(for: .milliseconds(100))
                if let decided = await whileAnotherHolds(now) { return decided }
                continue
            }
            let result = await body(now)
            try? await sessions.releaseRefreshLease(idHash: idHash, owner: owner)
            return result
        }
        return unavailable("timed out waiting for another refresh")
    }

    private enum StoredState {
        /// The answer without a refresh: fresh tokens someone else stored, an ended session, or a
        /// store that does not answer (never read as an ended session: that would clear the cookie).
        case decided(Outcome)
        /// Still due for a refresh.
        case due(Session)
    }

    /// The stored session, read past the cache, unless it needs no refresh (then the cache takes it).
    private func storedUnlessDue(idHash: String, now: Int64) async -> StoredState {
        let stored: Session?
        do { stored = try await sessions.loadStored(idHash: idHash, now: now) } catch {
            return .decided(.unavailable("session store: \(error)"))
        }
        guard let session = stored else { return .decided(.ended) }
        guard needsRefresh(session.tokens, now: now) else {
            sessions.update(session)
            return .decided(.fresh(session))
        }
        return .due(session)
    }

    private func refreshHoldingLease(idHash: String, now: Int64) async -> Outcome {
        // Tokens an earlier refresh could not store go first: refreshing from the stored ones would
        // present a refresh token the provider already rotated.
        guard await sessions.writeHeld(idHash: idHash) else {
            return .unavailable("session store: refreshed tokens not stored yet")
        }
        // Re-read under the lease: someone may have refreshed just before we got it.
        let session: Session
        switch await storedUnlessDue(idHash: idHash, now: now) {
        case .decided(let outcome): return outcome
        case .due(let stored): session = stored
        }
        guard let refreshToken = session.tokens.refreshToken else { return .ended }
        // The session's own provider: its refresh token means nothing to another.
        let label = providers.metricsLabel(session.provider)
        guard let provider = providers.provider(named: session.provider) else {
            // A provider taken out of GATEHOUSE_PROVIDERS: its sessions cannot be refreshed.
            metrics.refreshFailed(reason: "provider_not_configured", provider: label)
            logger.warning("session of a provider no longer configured; session ended",
                           metadata: ["session.id": "\(idHash.prefix(8))", "oauth.provider": "\(session.provider)"])
            await sessions.dropEnded(idHash: idHash, reason: "provider no longer configured")
            return .ended
        }
        let clients: ProviderClients
        do { clients = try await provider.connection.clients() } catch {
            metrics.refreshFailed(reason: "provider_unavailable", provider: label)
            return .unavailable("\(error)")
        }
        let response: TokenResponse
        do {
            response = try await clients.tokens.refresh(refreshToken: refreshToken, dpop: DPoPBinding.key(of: session.tokens))
        } catch {
            return await refreshFailed(error, idHash: idHash, label: label)
        }
        let claims: [UInt8]?
        switch await RefreshedClaims.resolve(response: response, session: session, clients: clients, now: now) {
        case .success(let updated):
            claims = updated
        case .failure(.invalidIDToken(let error)):
            // OIDC Core §12.2: the new tokens are not used and the session keeps what it had.
            metrics.refreshFailed(reason: "invalid_id_token", provider: label)
            logger.warning("refresh returned an invalid ID token; session not updated",
                           metadata: ["session.id": "\(idHash.prefix(8))", "error": "\(error)"])
            return .unavailable("refreshed ID token: \(error)")
        case .failure(.userinfo(let error)):
            logger.warning("UserInfo after refresh failed; claims kept",
                           metadata: ["session.id": "\(idHash.prefix(8))", "error": "\(error)"])
            claims = nil
        }
        let tokens = Self.tokens(of: session, refreshedBy: response, now: now)
        return await storeRefreshed(tokens, claims: claims, session: session, idHash: idHash, label: label, now: now)
    }

    /// The session's tokens with what the refresh returned: a refresh token, ID token or scope
    /// the answer leaves out stays as it was (RFC 6749 §6).
    static func tokens(of session: Session, refreshedBy response: TokenResponse, now: Int64) -> TokenSet {
        var tokens = session.tokens
        tokens.accessToken = response.accessToken
        tokens.tokenType = response.tokenType
        if let rotated = response.refreshToken { tokens.refreshToken = rotated }
        if let idToken = response.idToken { tokens.idToken = idToken }
        if let scope = response.scope { tokens.scope = scope }
        tokens.accessTokenExpiresAt = response.expiresIn.map { now + Int64($0) }
        tokens.accessTokenLifetime = response.expiresIn.map { Int64($0) }
        return tokens
    }

    /// The refreshed tokens stored against the version they replace, or held in memory when the
    /// store does not answer (the provider has rotated the refresh token already).
    private func storeRefreshed(_ tokens: TokenSet, claims: [UInt8]?, session: Session, idHash: String, label: String?,
                                now: Int64) async -> Outcome {
        let stored: Bool
        do {
            stored = try await sessions.updateTokens(idHash: idHash, expectedVersion: session.version, tokens: tokens,
                                                     claims: claims)
        } catch {
            // The provider has rotated the refresh token: these tokens are now the only good copy.
            // They are held in memory and written as soon as the store answers (`SessionCache.hold`),
            // never dropped for the old ones the store still has.
            logger.error("refreshed tokens not stored; held in memory until the store answers",
                         metadata: ["session.id": "\(idHash.prefix(8))", "error": "\(error)"])
            metrics.refreshSucceeded(provider: label)
            return .fresh(sessions.hold(tokens, claims: claims, for: session))
        }
        do {
            guard stored, let updated = try await sessions.loadStored(idHash: idHash, now: now) else {
                // Lost a race we should not have (the lease expired): use whatever is stored now.
                guard let current = try await sessions.loadStored(idHash: idHash, now: now) else { return .ended }
                sessions.update(current)
                return .fresh(current)
            }
            metrics.refreshSucceeded(provider: label)
            sessions.update(updated)
            return .fresh(updated)
        } catch {
            return .unavailable("session store: \(error)")
        }
    }

    /// A refused or failed refresh, read once by `RefreshFailure`: a refused grant ends the session,
    /// anything else keeps it for the next call to try again.
    private func refreshFailed(_ error: TokenEndpointError, idHash: String, label: String?) async -> Outcome {
        let failure = RefreshFailure(error)
        switch failure {
        case .grantRefused(let code):
            metrics.refreshFailed(reason: code.rawValue, provider: label)
            logger.info("refresh refused by the provider; session ended",
                        metadata: ["session.id": "\(idHash.prefix(8))", "oauth.error": "\(code)"])
            await sessions.dropEnded(idHash: idHash, reason: "refresh refused (\(code))")
            return .ended
        case .clientRefused:
            // The gateway's client credentials: the operator's to fix, not the user's grant.
            metrics.refreshFailed(reason: "invalid_client", provider: label)
            logger.error("refresh refused: the provider does not accept the gateway's client authentication (invalid_client); session kept",
                         metadata: ["session.id": "\(idHash.prefix(8))", "error": "\(error)"])
        case .otherRefusal, .unavailable:
            metrics.refreshFailed(reason: "provider_error", provider: label)
            logger.warning("refresh failed", metadata: ["session.id": "\(idHash.prefix(8))", "error": "\(error)"])
        }
        return .unavailable("\(error)")
    }
}

extension TokenRefresher {
    /// What a refresh-token grant for another API's token gave (`exchange=refresh`).
    public enum APITokenOutcome: Sendable {
        case issued(TokenResponse)
        /// The provider refused the grant for this API (an OAuth error that leaves the session's
        /// refresh token good): `403`, the session stays.
        case refused(String)
        /// The session is gone, or its refresh token was refused (`RefreshFailure.grantRefused`).
        case ended
        /// The provider or the store could not be asked: `502`.
        case unavailable(String)
    }

    /// A token for another API from the session's refresh token (RFC 8707 `resource` and/or a
    /// per-API `scope`), under the session's refresh lease exactly as a normal refresh: no other
    /// refresh of the session (here or in another instance) runs meanwhile, the refresh token sent
    /// is the one stored, and a rotated one is stored before anyone uses it, so the next normal
    /// refresh never presents the spent one. The session's own access token is left as it is.
    public func refreshForAPI(idHash: String, resource: String?, scope: String?) async -> APITokenOutcome {
        // An owner of its own: the lease is re-entrant for one owner, and this must exclude the
        // session's normal refresh in this process as well as in others.
        let owner = "\(self.leaseOwner)-api-\(UUID().uuidString.prefix(8))"
        return await holdingLease(idHash: idHash, owner: owner, unavailable: { APITokenOutcome.unavailable($0) },
                                  whileAnotherHolds: { _ in nil }, body: { now in
            await self.refreshForAPIHoldingLease(idHash: idHash, resource: resource, scope: scope, now: now)
        })
    }

    private func refreshForAPIHoldingLease(idHash: String, resource: String?, scope: String?, now: Int64) async -> APITokenOutcome {
        guard await sessions.writeHeld(idHash: idHash) else {
            return .unavailable("session store: refreshed tokens not stored yet")
        }
        let stored: Session?
        do { stored = try await sessions.loadStored(idHash: idHash, now: now) } catch {
            return .unavailable("session store: \(error)")
        }
        guard let session = stored else { return .ended }
        guard let refreshToken = session.tokens.refreshToken else {
            return .refused("the session has no refresh token")
        }
        guard let provider = registry.provider(named: session.provider) else { return .ended }
        let clients: ProviderClients
        do { clients = try await provider.connection.clients() } catch {
            return .unavailable("\(error)")
        }
        let response: TokenResponse
        do {
            response = try await clients.tokens.refresh(refreshToken: refreshToken, resource: resource, scope: scope,
                                                        dpop: DPoPBinding.key(of: session.tokens))
        } catch {
            switch RefreshFailure(error, carriesOwnTarget: resource != nil || scope != nil) {
            case .grantRefused(let code):
                // The session's refresh token itself is refused: the session ends here as it would
                // at its own next refresh, instead of answering 403 until then.
                logger.info("API token refresh refused by the provider; session ended",
                            metadata: ["session.id": "\(idHash.prefix(8))", "oauth.error": "\(code)"])
                await sessions.dropEnded(idHash: idHash, reason: "refresh refused (\(code))")
                return .ended
            case .otherRefusal(let code):
                logger.info("API token refresh refused by the provider",
                            metadata: ["session.id": "\(idHash.prefix(8))", "oauth.error": "\(code)"])
                return .refused("\(code)")
            case .clientRefused:
                logger.error("API token refresh refused: the provider does not accept the gateway's client authentication (invalid_client)",
                             metadata: ["session.id": "\(idHash.prefix(8))", "error": "\(error)"])
                return .unavailable("\(error)")
            case .unavailable:
                logger.warning("API token refresh failed", metadata: ["session.id": "\(idHash.prefix(8))", "error": "\(error)"])
                return .unavailable("\(error)")
            }
        }
        guard let rotated = response.refreshToken, rotated != refreshToken else { return .issued(response) }
        var tokens = session.tokens
        tokens.refreshToken = rotated
        do {
            if try await sessions.updateTokens(idHash: idHash, expectedVersion: session.version, tokens: tokens, claims: nil),
               let updated = try await sessions.loadStored(idHash: idHash, now: now) {
                sessions.update(updated)
            }
        } catch {
            // The rotated refresh token is now the only good one: held until the store answers.
            logger.error("rotated refresh token not stored; held in memory until the store answers",
                         metadata: ["session.id": "\(idHash.prefix(8))", "error": "\(error)"])
            _ = sessions.hold(tokens, claims: nil, for: session)
        }
        return .issued(response)
    }
}
