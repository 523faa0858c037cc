import Synchronization

/// A `SessionStore` in process memory, for tests and experiments: the same semantics as
/// `SQLiteSessionStore` (the shared conformance suite checks both), nothing persisted, no sealing.
public final class InMemorySessionStore: SessionStore {
    private struct StoredSession: Sendable {
        var session: Session
        var leaseOwner: String?
        var leaseUntil: Int64?
        var handle: String = UserSession.newHandle()
        var userAgent: String?
    }

    private struct State: Sendable {
        var sessions: [String: StoredSession] = [:]
        var pendingLogins: [String: PendingLogin] = [:]
        /// Insertion order of pending logins: the tie-break of eviction, as `rowid` is in SQL.
        var pendingOrder: [String: UInt64] = [:]
        var nextPendingOrder: UInt64 = 0
        var logoutJTIs: [String: Int64] = [:]
    }

    private let state = Mutex(State())
    /// Caps on pending logins, enforced by every `savePendingLogin`.
    public let pendingLoginLimits: PendingLoginLimits

    public init(pendingLoginLimits: PendingLoginLimits = .standard) {
        self.pendingLoginLimits = pendingLoginLimits
    }

    public func createSession(_ new: NewSession, replacing oldIdHash: String?) throws(SessionStoreError) -> Session {
        let session = Session(idHash: new.idHash, sub: new.sub, sid: new.sid, claims: new.claims, tokens: new.tokens,
                              createdAt: new.createdAt, lastSeenAt: new.createdAt, idleExpiresAt: new.idleExpiresAt,
                              expiresAt: new.expiresAt, version: 1, provider: new.provider)
        return try state.withLock { (state: inout State) throws(SessionStoreError) -> Session in
            if state.sessions[new.idHash] != nil, oldIdHash != new.idHash {
                // Same outcome as the primary-key constraint of the SQL table (whose transaction
                // also keeps the old session), checked before anything changes.
                throw .database(SQLiteError(code: 1555, message: "UNIQUE constraint failed: sessions.id_hash"))
            }
            if let oldIdHash { state.sessions[oldIdHash] = nil }
            state.sessions[new.idHash] = StoredSession(session: session, handle: new.handle, userAgent: new.userAgent)
            return session
        }
    }

    public func loadSession(idHash: String, now: Int64) throws(SessionStoreError) -> Session? {
        state.withLock { state in
            guard let stored = state.sessions[idHash] else { return nil }
            guard stored.session.isActive(at: now) else {
                state.sessions[idHash] = nil
                return nil
            }
            return stored.session
        }
    }

    @discardableResult
    public func touch(idHash: String, lastSeen: Int64, idleExpiresAt: Int64) throws(SessionStoreError) -> Bool {
        state.withLock { state in
            guard var stored = state.sessions[idHash] else { return false }
            stored.session.lastSeenAt = lastSeen
            stored.session.idleExpiresAt = min(idleExpiresAt, stored.session.expiresAt)
            state.sessions[idHash] = stored
            return true
        }
    }

    public func updateTokens(idHash: String, expectedVersion: Int64, tokens: TokenSet,
                             claims: [UInt8]?) throws(SessionStoreError) -> Bool {
        state.withLock { state in
            guard var stored = state.sessions[idHash], stored.session.version == expectedVersion else { return false }
            stored.session.tokens = tokens
            if let claims { stored.session.claims = claims }
            stored.session.version += 1
            state.sessions[idHash] = stored
            return true
        }
    }

    public func acquireRefreshLease(idHash: String, owner: String, now: Int64,
                                    duration: Int64) throws(SessionStoreError) -> Bool {
        state.withLock { state in
            guard var stored = state.sessions[idHash] else { return false }
            if let holder = stored.leaseOwner, holder != owner, let until = stored.leaseUntil, until > now {
                return false
            }
            stored.leaseOwner = owner
            stored.leaseUntil = saturatingAdd(now, max(0, duration))
            state.sessions[idHash] = stored
            return true
        }
    }

    public func releaseRefreshLease(idHash: String, owner: String) throws(SessionStoreError) {
        state.withLock { state in
            guard var stored = state.sessions[idHash], stored.leaseOwner == owner else { return }
            stored.leaseOwner = nil
            stored.leaseUntil = nil
            state.sessions[idHash] = stored
        }
    }

    @discardableResult
    public func deleteSession(idHash: String) throws(SessionStoreError) -> Bool {
        state.withLock { state in state.sessions.removeValue(forKey: idHash) != nil }
    }

    @discardableResult
    public func deleteSessions(sub: String, provider: String) throws(SessionStoreError) -> Int {
        state.withLock { state in Self.remove(from: &state) { $0.sub == sub && $0.provider == provider } }
    }

    @discardableResult
    public func deleteSessions(sid: String, provider: String) throws(SessionStoreError) -> Int {
        state.withLock { state in Self.remove(from: &state) { $0.sid == sid && $0.provider == provider } }
    }

    public func listSessions(sub: String, provider: String, now: Int64) throws(SessionStoreError) -> [UserSession] {
        state.withLock { state in
            state.sessions.values
                .filter { $0.session.sub == sub && $0.session.provider == provider && $0.session.isActive(at: now) }
                .sorted { ($0.session.createdAt, $0.session.idHash) < ($1.session.createdAt, $1.session.idHash) }
                .map { UserSession(handle: $0.handle, createdAt: $0.session.createdAt, lastSeenAt: $0.session.lastSeenAt,
                                   userAgent: $0.userAgent, idHash: $0.session.idHash) }
        }
    }

    public func deleteSession(handle: String, sub: String, provider: String) throws(SessionStoreError) -> String? {
        state.withLock { state in
            guard let found = state.sessions.values.first(where: {
                $0.handle == handle && $0.session.sub == sub && $0.session.provider == provider
            }) else { return nil }
            state.sessions[found.session.idHash] = nil
            return found.session.idHash
        }
    }

    @discardableResult
    public func deleteSessions(idPrefix: String) throws(SessionStoreError) -> Int {
        let prefix = try SessionIDPrefix.normalized(idPrefix)
        return try state.withLock { (state: inout State) throws(SessionStoreError) -> Int in
            let matches = state.sessions.keys.filter { $0.hasPrefix(prefix) }
            guard matches.count <= 1 else { throw .ambiguousIDPrefix(prefix: prefix, matches: matches.count) }
            for key in matches { state.sessions[key] = nil }
            return matches.count
        }
    }

    public func listSessions(now: Int64) throws(SessionStoreError) -> [SessionSummary] {
        state.withLock { state in
            state.sessions.values.map(\.session)
                .filter { $0.isActive(at: now) }
                .sorted { ($0.createdAt, $0.idHash) < ($1.createdAt, $1.idHash) }
                .map { SessionSummary(idPrefix: String($0.idHash.prefix(8)), sub: $0.sub, createdAt: $0.createdAt,
                                      lastSeenAt: $0.lastSeenAt, idleExpiresAt: $0.idleExpiresAt, expiresAt: $0.expiresAt,
                                      provider: $0.provider) }
        }
    }

    public func countActiveSessions(now: Int64) throws(SessionStoreError) -> Int {
        state.withLock { state in state.sessions.values.count { $0.session.isActive(at: now) } }
    }

    public func savePendingLogin(_ login: PendingLogin) throws(SessionStoreError) {
        try state.withLock { (state: inout State) throws(SessionStoreError) in
            guard state.pendingLogins[login.stateHash] == nil else {
                throw .database(SQLiteError(code: 1555, message: "UNIQUE constraint failed: pending_logins.state_hash"))
            }
            state.pendingLogins[login.stateHash] = login
            state.pendingOrder[login.stateHash] = state.nextPendingOrder
            state.nextPendingOrder += 1
            Self.evictPending(from: &state, keeping: pendingLoginLimits.perBinding) { $0.bindingHash == login.bindingHash }
            Self.evictPending(from: &state, keeping: pendingLoginLimits.total) { _ in true }
        }
    }

    /// Pending logins stored, expired or not.
    public func pendingLoginCount() -> Int {
        state.withLock { $0.pendingLogins.count }
    }

    /// Keeps the `limit` newest of the pending logins that match: newest by expiry, then by insertion.
    private static func evictPending(from state: inout State, keeping limit: Int, where matches: (PendingLogin) -> Bool) {
        let candidates = state.pendingLogins.values.filter(matches)
        guard candidates.count > limit else { return }
        let order = state.pendingOrder
        let oldestFirst = candidates.sorted { a, b in
            (a.expiresAt, order[a.stateHash] ?? 0) < (b.expiresAt, order[b.stateHash] ?? 0)
        }
        for login in oldestFirst.prefix(candidates.count - limit) {
            state.pendingLogins[login.stateHash] = nil
            state.pendingOrder[login.stateHash] = nil
        }
    }

    public func takePendingLogin(stateHash: String, now: Int64) throws(SessionStoreError) -> PendingLogin? {
        state.withLock { state in
            state.pendingOrder[stateHash] = nil
            guard let login = state.pendingLogins.removeValue(forKey: stateHash), now < login.expiresAt else { return nil }
            return login
        }
    }

    public func pendingLogin(stateHash: String, now: Int64) throws(SessionStoreError) -> PendingLogin? {
        state.withLock { state in state.pendingLogins[stateHash].flatMap { now < $0.expiresAt ? $0 : nil } }
    }

    public func endSessions(forLogoutToken jti: String, expiresAt: Int64,
                            matching match: LogoutTokenMatch) throws(SessionStoreError) -> Int? {
        let jtiHash = LogoutJTI.hash(jti, provider: match.provider)
        return state.withLock { state in
            guard state.logoutJTIs[jtiHash] == nil else { return nil }
            state.logoutJTIs[jtiHash] = expiresAt
            switch match {
            case .sid(let sid, let provider): return Self.remove(from: &state) { $0.sid == sid && $0.provider == provider }
            case .sub(let sub, let provider): return Self.remove(from: &state) { $0.sub == sub && $0.provider == provider }
            }
        }
    }

    @discardableResult
    public func purgeExpired(now: Int64) throws(SessionStoreError) -> PurgeCounts {
        state.withLock { state in
            let sessions = Self.remove(from: &state) { !$0.isActive(at: now) }
            let pending = state.pendingLogins.filter { $0.value.expiresAt <= now }.map(\.key)
            for key in pending {
                state.pendingLogins[key] = nil
                state.pendingOrder[key] = nil
            }
            let jtis = state.logoutJTIs.filter { $0.value <= now }.map(\.key)
            for key in jtis { state.logoutJTIs[key] = nil }
            return PurgeCounts(sessions: sessions, pendingLogins: pending.count, logoutJTIs: jtis.count)
        }
    }

    public func ping() throws(SessionStoreError) {}

    private static func remove(from state: inout State, where matches: (Session) -> Bool) -> Int {
        let keys = state.sessions.filter { matches($0.value.session) }.map(\.key)
        for key in keys { state.sessions[key] = nil }
        return keys.count
    }
}
