/// The administration role of a store: what the operator (`gatehouse sessions …`), the `/metrics`
/// gauge, the readiness probe and the periodic purge need. It never needs the token keys, so the CLI's
/// `SessionMaintenance` implements it without them.
public protocol SessionAdministration: Sendable {
    /// Active sessions at `now`, oldest first, without tokens.
    func listSessions(now: Int64) throws(SessionStoreError) -> [SessionSummary]

    /// Number of active sessions at `now` (the `/metrics` gauge).
    func countActiveSessions(now: Int64) throws(SessionStoreError) -> Int

    /// Deletes every session of the user `sub` at `provider` (`sessions revoke --sub`).
    @discardableResult
    func deleteSessions(sub: String, provider: String) throws(SessionStoreError) -> Int

    /// Deletes the one session whose id hash starts with `idPrefix` (`sessions revoke ID`).
    /// - Returns: 0 or 1.
    /// - Throws: `.invalidIDPrefix` unless 8–64 hex characters; `.ambiguousIDPrefix` when several
    ///   sessions match (nothing is deleted).
    @discardableResult
    func deleteSessions(idPrefix: String) throws(SessionStoreError) -> Int

    /// Deletes expired sessions, pending logins and logout `jti` records.
    @discardableResult
    func purgeExpired(now: Int64) throws(SessionStoreError) -> PurgeCounts

    /// Throws when the store cannot answer (readiness probe).
    func ping() throws(SessionStoreError)
}

extension SessionAdministration {
    /// Every session of `sub` at the one provider, `default`.
    @discardableResult
    public func deleteSessions(sub: String) throws(SessionStoreError) -> Int {
        try deleteSessions(sub: sub, provider: "default")
    }
}
