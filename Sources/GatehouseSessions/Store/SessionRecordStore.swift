/// The sessions role of a store: what the gateway does with one session on the request path (create at
/// login, load, slide, replace tokens under a refresh lease, delete), plus the back-channel logout's
/// deletion by provider session id. Synchronous and safe from any thread; time is always passed in
/// (`now`, unix seconds), never read inside, so expiry is testable without sleeping.
public protocol SessionRecordStore: Sendable {
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

    /// Deletes every session of `provider` with the provider session id `sid`.
    @discardableResult
    func deleteSessions(sid: String, provider: String) throws(SessionStoreError) -> Int

    /// The user's active sessions ("my sessions"), oldest first.
    func listSessions(sub: String, provider: String, now: Int64) throws(SessionStoreError) -> [UserSession]

    /// Deletes the session with `handle` if it is the user's (`sub` at `provider`); its id hash, or
    /// nil when no session of that user has the handle.
    func deleteSession(handle: String, sub: String, provider: String) throws(SessionStoreError) -> String?

}

extension SessionRecordStore {
    /// Every session of the one provider, `default`, with the provider session id `sid`.
    @discardableResult
    public func deleteSessions(sid: String) throws(SessionStoreError) -> Int {
        try deleteSessions(sid: sid, provider: "default")
    }

    /// Replaces the tokens and keeps the stored claims. See `updateTokens(idHash:expectedVersion:tokens:claims:)`.
    public func updateTokens(idHash: String, expectedVersion: Int64, tokens: TokenSet) throws(SessionStoreError) -> Bool {
        try updateTokens(idHash: idHash, expectedVersion: expectedVersion, tokens: tokens, claims: nil)
    }

    /// `createSession(_:replacing:)` without a previous session.
    public func createSession(_ new: NewSession) throws(SessionStoreError) -> Session {
        try createSession(new, replacing: nil)
    }
}

