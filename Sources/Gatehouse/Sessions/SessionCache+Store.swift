import FoundationEssentials
import GatehouseCore
import GatehouseSessions
import GatehouseTime
import EventLoops
import HTTP1
import Logging
import Synchronization

/// What the session cache passes to the store: pending logins, new sessions, readiness, the
/// refresh lease, refreshed tokens the store has not taken yet, and single-flight reads.
extension SessionCache {
    // MARK: Login

    public func savePendingLogin(_ login: PendingLogin) async throws(SessionStoreError) {
        try await onStore { store throws(SessionStoreError) in try store.savePendingLogin(login) }
    }

    public func takePendingLogin(stateHash: String, now: Int64) async throws(SessionStoreError) -> PendingLogin? {
        try await onStore { store throws(SessionStoreError) in try store.takePendingLogin(stateHash: stateHash, now: now) }
    }

    public func pendingLogin(stateHash: String, now: Int64) async throws(SessionStoreError) -> PendingLogin? {
        try await onStore { store throws(SessionStoreError) in try store.pendingLogin(stateHash: stateHash, now: now) }
    }

    /// Stores the new session, deleting the browser's previous one in the same transaction, and
    /// drops the previous one from the cache.
    public func createSession(_ new: NewSession, replacing previousIdHash: String?) async throws(SessionStoreError) -> Session {
        let session = try await onStore { store throws(SessionStoreError) in try store.createSession(new, replacing: previousIdHash) }
        if let previousIdHash {
            forget(previousIdHash)
            announceEnded(previousIdHash)
        }
        return session
    }

    // MARK: Readiness

    /// Throws when the store cannot answer (readiness probe).
    public func ping() async throws(SessionStoreError) {
        try await onStore { store throws(SessionStoreError) in try store.ping() }
    }

    // MARK: Token refresh (TokenRefresher)

    func acquireRefreshLease(idHash: String, owner: String, now: Int64, duration: Int64) async throws(SessionStoreError) -> Bool {
        try await onStore { store throws(SessionStoreError) in
            try store.acquireRefreshLease(idHash: idHash, owner: owner, now: now, duration: duration)
        }
    }

    func releaseRefreshLease(idHash: String, owner: String) async throws(SessionStoreError) {
        try await onStore { store throws(SessionStoreError) in try store.releaseRefreshLease(idHash: idHash, owner: owner) }
    }

    /// The stored session, read past the cache (the refresher then decides whether to `update` it),
    /// with the tokens held for it in memory, if any.
    func loadStored(idHash: String, now: Int64) async throws(SessionStoreError) -> Session? {
        try await onStore { store throws(SessionStoreError) in try store.loadSession(idHash: idHash, now: now) }
            .map(withHeld)
    }

    // MARK: Refreshed tokens the store has not taken yet

    /// What a refresh obtained while the store could not write it: the provider had already rotated
    /// the refresh token, so these are the only good copy of the session's tokens.
    struct HeldTokens: Sendable {
        let tokens: TokenSet
        let claims: [UInt8]?
        /// The stored version they replace.
        let expectedVersion: Int64
    }


    /// Keeps `tokens` (and `claims`) for `session` in memory after the store failed to take them:
    /// every read of the session in this process uses them, a refresh writes them first
    /// (`writeHeld`), and a task retries the write every second until the store takes it, the
    /// session changes or ends elsewhere, or it expires.
    /// - Returns: the session with the held tokens.
    func hold(_ tokens: TokenSet, claims: [UInt8]?, for session: Session) -> Session {
        let key = SessionHashKey(session.idHash)
        held.withLock { $0[key] = HeldTokens(tokens: tokens, claims: claims, expectedVersion: session.version) }
        let updated = withHeld(session)
        update(updated)
        let idHash = session.idHash, expiresAt = session.expiresAt
        Task { [self] in
            while held.withLock({ $0[key] != nil }), clock.unixSeconds() < expiresAt {
                try? await Task.sleep(for: .seconds(1))
                if await writeHeld(idHash: idHash) { return }
            }
            _ = held.withLock { $0.removeValue(forKey: key) }
        }
        return updated
    }

    /// `session` with the tokens held for it, if any.
    func withHeld(_ session: Session) -> Session {
        guard let pending = held.withLock({ $0[SessionHashKey(session.idHash)] }) else { return session }
        var session = session
        session.tokens = pending.tokens
        if let claims = pending.claims { session.claims = claims }
        return session
    }

    /// Writes the tokens held for `idHash`, if any.
    /// - Returns: false while they are still held (the store did not take them); true when nothing
    ///   is held any more: written, or the stored session changed or ended meanwhile.
    func writeHeld(idHash: String) async -> Bool {
        let key = SessionHashKey(idHash)
        guard let pending = held.withLock({ $0[key] }) else { return true }
        do {
            _ = try await onStore { store throws(SessionStoreError) in
                try store.updateTokens(idHash: idHash, expectedVersion: pending.expectedVersion, tokens: pending.tokens,
                                       claims: pending.claims)
            }
        } catch {
            return false
        }
        held.withLock { if $0[key]?.expectedVersion == pending.expectedVersion { $0[key] = nil } }
        logger.info("held refreshed tokens stored", metadata: ["session.id": "\(idHash.prefix(8))"])
        // The next read loads the stored session, at its new version.
        forget(idHash)
        return true
    }

    func updateTokens(idHash: String, expectedVersion: Int64, tokens: TokenSet, claims: [UInt8]?) async throws(SessionStoreError) -> Bool {
        try await onStore { store throws(SessionStoreError) in
            try store.updateTokens(idHash: idHash, expectedVersion: expectedVersion, tokens: tokens, claims: claims)
        }
    }


    /// The stored session, read once for all the callers that ask at the same time. A caller joins
    /// a read under way only when no session changed or ended in this process since that read
    /// began (`generation`): a read begun before a logout must not answer a request sent after it.
    func loadOnce(idHash: String, now: Int64, generation: UInt64) async throws(SessionStoreError) -> Session? {
        let outcome = await loading.run(SessionHashKey(idHash), tag: generation) { [self] () async -> Result<Session?, SessionStoreError> in
            do throws(SessionStoreError) {
                return .success(try await onStore { store throws(SessionStoreError) in try store.loadSession(idHash: idHash, now: now) })
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// Runs one store call on the executor's threads.
    func onStore<Value: Sendable>(
        _ body: @escaping @Sendable (any SessionStore) throws(SessionStoreError) -> Value
    ) async throws(SessionStoreError) -> Value {
        let store = self.store
        return try await executor.run { () throws(SessionStoreError) in try body(store) }
    }
}
