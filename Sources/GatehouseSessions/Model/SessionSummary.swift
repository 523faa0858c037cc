/// What `gatehouse sessions list` shows of a session: no tokens, no claims, and only a prefix of
/// the id hash (enough for `sessions revoke ID`).
public struct SessionSummary: Sendable, Equatable {
    /// The first 8 hex characters of the session's id hash.
    public var idPrefix: String
    public var sub: String
    public var createdAt: Int64
    public var lastSeenAt: Int64
    public var idleExpiresAt: Int64
    public var expiresAt: Int64
    /// The provider the session signed in with.
    public var provider: String

    public init(idPrefix: String, sub: String, createdAt: Int64, lastSeenAt: Int64,
                idleExpiresAt: Int64, expiresAt: Int64, provider: String = "default") {
        self.provider = provider
        (self.idPrefix, self.sub) = (idPrefix, sub)
        (self.createdAt, self.lastSeenAt, self.idleExpiresAt, self.expiresAt) = (createdAt, lastSeenAt, idleExpiresAt, expiresAt)
    }
}

/// How many expired rows `purgeExpired` removed, per table.
public struct PurgeCounts: Sendable, Equatable {
    public var sessions: Int
    public var pendingLogins: Int
    public var logoutJTIs: Int

    public init(sessions: Int = 0, pendingLogins: Int = 0, logoutJTIs: Int = 0) {
        self.sessions = sessions
        self.pendingLogins = pendingLogins
        self.logoutJTIs = logoutJTIs
    }
}
