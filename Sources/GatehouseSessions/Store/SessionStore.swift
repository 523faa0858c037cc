/// Where sessions, pending logins and seen logout-token ids live. Every method is synchronous and
/// safe to call from any thread. Time is always passed in (`now`, unix seconds), never read inside,
/// so expiry is testable without sleeping.
///
/// Stores: `SQLiteSessionStore` (production; several processes may share one file) and
/// `InMemorySessionStore` (tests). Both pass the same conformance suite.
public protocol SessionStore: Sendable {
    /// Stores a new session with `lastSeenAt = createdAt`, `version = 1`. When `oldIdHash` is given
    /// (the browser's previous session), that session is deleted in the same transaction, so a
    /// login always rotates the session id.
    func createSession(_ new: NewSession, replacing oldIdHash: String?) throws(SessionStoreError) -> Session

    /// The session, or nil when it is missing, idle-expired or past its absolute expiry (an
    /// expired row is deleted), or cannot be opened with the configured keys.
    func loadSession(idHash: String, now: Int64) throws(SessionStoreError) -> Session?

    /// Slides the idle timeout: sets `lastSeenAt` and `idleExpiresAt` (capped at `expiresAt`).
    /// - Returns: false when the session does not exist.
    @discardableResult
    func touch(idHash: String, lastSeen: Int64, idleExpiresAt: Int64) throws(SessionStoreError) -> Bool

    /// Replaces the tokens (and the claims, when given) if the session is still at
    /// `expectedVersion`, and bumps the version.
    /// - Returns: false when the session is gone or someone else updated it first.
    func updateTokens(idHash: String, expectedVersion: Int64, tokens: TokenSet,
                      claims: [UInt8]?) throws(SessionStoreError) -> Bool

    /// Takes the session's refresh lease for `duration` seconds: at most one owner (process or
    /// task) refreshes a session's tokens at a time. Re-acquiring one's own lease extends it.
    /// - Returns: false when another owner holds an unexpired lease, or the session is gone.
    func acquireRefreshLease(idHash: String, owner: String, now: Int64, duration: Int64) throws(SessionStoreError) -> Bool

    /// Gives the lease back if `owner` holds it (someone else's lease is left alone).
    func releaseRefreshLease(idHash: String, owner: String) throws(SessionStoreError)

    /// - Returns: whether a session was deleted.
    @discardableResult
    func deleteSession(idHash: String) throws(SessionStoreError) -> Bool

    /// Deletes every session of the user `sub` (`sessions revoke --sub`, back-channel logout by sub).
    @discardableResult
    func deleteSessions(sub: String) throws(SessionStoreError) -> Int

    /// Deletes every session with the provider session id `sid` (back-channel logout by sid).
    @discardableResult
    func deleteSessions(sid: String) throws(SessionStoreError) -> Int

    /// Deletes the one session whose id hash starts with `idPrefix` (`sessions revoke ID`).
    /// - Returns: 0 or 1.
    /// - Throws: `.invalidIDPrefix` unless 8–64 hex characters; `.ambiguousIDPrefix` when several
    ///   sessions match (nothing is deleted).
    @discardableResult
    func deleteSessions(idPrefix: String) throws(SessionStoreError) -> Int

    /// Active sessions at `now`, oldest first, without tokens.
    func listSessions(now: Int64) throws(SessionStoreError) -> [SessionSummary]

    /// Number of active sessions at `now` (the `/metrics` gauge).
    func countActiveSessions(now: Int64) throws(SessionStoreError) -> Int

    /// Stores a pending login under its state hash.
    func savePendingLogin(_ login: PendingLogin) throws(SessionStoreError)

    /// Removes and returns the pending login for `stateHash`: usable once. Returns nil when it is
    /// missing or expired at `now` (an expired one is still removed).
    func takePendingLogin(stateHash: String, now: Int64) throws(SessionStoreError) -> PendingLogin?

    /// Remembers a back-channel logout token's `jti` until `expiresAt`.
    /// - Returns: false when the `jti` was already recorded (a replay).
    func recordLogoutJTI(_ jti: String, expiresAt: Int64) throws(SessionStoreError) -> Bool

    /// Deletes expired sessions, pending logins and logout `jti` records.
    @discardableResult
    func purgeExpired(now: Int64) throws(SessionStoreError) -> PurgeCounts

    /// Throws when the store cannot answer (readiness probe).
    func ping() throws(SessionStoreError)
}

extension SessionStore {
    /// Replaces the tokens and keeps the stored claims. See `updateTokens(idHash:expectedVersion:tokens:claims:)`.
    public func updateTokens(idHash: String, expectedVersion: Int64, tokens: TokenSet) throws(SessionStoreError) -> Bool {
        try updateTokens(idHash: idHash, expectedVersion: expectedVersion, tokens: tokens, claims: nil)
    }

    /// `createSession(_:replacing:)` without a previous session.
    public func createSession(_ new: NewSession) throws(SessionStoreError) -> Session {
        try createSession(new, replacing: nil)
    }
}

/// `now + duration` without trapping on hostile or absurd values.
func saturatingAdd(_ a: Int64, _ b: Int64) -> Int64 {
    let (sum, overflow) = a.addingReportingOverflow(b)
    if overflow { return b > 0 ? Int64.max : Int64.min }
    return sum
}
