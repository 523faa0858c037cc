import Logging

/// The `SessionStore` over any `SessionDatabase`: the one place where values are sealed and opened
/// and where the store's rules live. Tokens and claims are sealed with `TokenSealer` (associated
/// data = the session's id hash); a pending login's verifier, nonce and return path with associated
/// data = its state hash. Crypto runs outside the database's transactions. The engines differ only in
/// their SQL (`SessionStatement`) and in how they reach the database.
///
/// Use it as `SQLiteSessionStore` (production on one host; several processes may share the file) or
/// `PostgresSessionStore` (several instances); the conformance suite runs against both.
///
/// Calls block their thread (at most SQLite's busy timeout, or the pool's acquire timeout plus the
/// statement deadline); run them off the event loops.
///
/// For example:
/// ```swift
/// let store = try SQLiteSessionStore(path: config.databasePath, sealer: sealer, logger: logger)
/// try store.migrate()
/// ```
///
/// The administration role comes from `SessionMaintenance`; this class adds the roles that need keys.
public final class SealedSessionStore<Database: SessionDatabase>: SessionMaintenance<Database>, SessionRecordStore,
    PendingLoginStore, LogoutReplayCache, @unchecked Sendable {
    /// Caps on pending logins, enforced by every `savePendingLogin`.
    public let pendingLoginLimits: PendingLoginLimits
    let sealer: TokenSealer

    public init(_ database: Database, sealer: TokenSealer, logger: Logger,
                pendingLoginLimits: PendingLoginLimits = .standard) {
        self.pendingLoginLimits = pendingLoginLimits
        self.sealer = sealer
        super.init(database, logger: logger)
    }

    /// The key-less operations (list, revoke, purge, migrate, ping) on the same database: this
    /// store, seen without its keys.
    public var maintenance: SessionMaintenance<Database> { self }

    // MARK: - Sessions

    public func createSession(_ new: NewSession, replacing oldIdHash: String?) throws(SessionStoreError) -> Session {
        let sealed = try SessionSecrets.sealed(tokens: new.tokens, claims: new.claims, idHash: new.idHash, sealer: sealer)
        try observedWrite { (tx: Connection) throws(Failure) in
            if let oldIdHash {
                try tx.run(.deleteSession, [.text(oldIdHash)])
            }
            try tx.run(.insertSession, [
                .text(new.idHash), .text(new.sub), .text(new.sid), .integer(new.createdAt), .integer(new.idleExpiresAt),
                .integer(new.expiresAt), .bytes(sealed), .integer(new.tokens.accessTokenExpiresAt), .text(new.provider),
                .text(new.handle), .text(new.userAgent),
            ])
        }
        return Session(idHash: new.idHash, sub: new.sub, sid: new.sid, claims: new.claims, tokens: new.tokens,
                       createdAt: new.createdAt, lastSeenAt: new.createdAt, idleExpiresAt: new.idleExpiresAt,
                       expiresAt: new.expiresAt, version: 1, provider: new.provider)
    }

    public func listSessions(sub: String, provider: String, now: Int64) throws(SessionStoreError) -> [UserSession] {
        try observedRead { (tx: Connection) throws(Failure) -> [UserSession] in
            try tx.query(.listUserSessions, [.text(sub), .text(provider), .integer(now)]) { (row: Connection.Row) throws(Failure) in
                UserSession(handle: try row.requiredString(0), createdAt: row.int64(1), lastSeenAt: row.int64(2),
                            userAgent: row.string(3), idHash: try row.requiredString(4))
            }
        }
    }

    public func deleteSession(handle: String, sub: String, provider: String) throws(SessionStoreError) -> String? {
        try observedWrite { (tx: Connection) throws(Failure) -> String? in
            try tx.queryFirst(.deleteByHandle, [.text(handle), .text(sub), .text(provider)]) { (row: Connection.Row) throws(Failure) in
                try row.requiredString(0)
            }
        }
    }

    public func loadSession(idHash: String, now: Int64) throws(SessionStoreError) -> Session? {
        let found = try observedRead { (tx: Connection) throws(Failure) -> StoredSessionRow? in
            try tx.queryFirst(.selectSession, [.text(idHash)]) { (row: Connection.Row) throws(Failure) in
                try StoredSessionRow(row)
            }
        }
        guard let row = found else { return nil }
        guard row.isActive(at: now) else {
            // Only delete it if it is still expired: another process or instance may have just slid it.
            try observedWrite { (tx: Connection) throws(Failure) in
                try tx.run(.deleteExpiredSession, [.text(idHash), .integer(now)])
            }
            return nil
        }
        return row.session(idHash: idHash, sealer: sealer, logger: logger)
    }

    @discardableResult
    public func touch(idHash: String, lastSeen: Int64, idleExpiresAt: Int64) throws(SessionStoreError) -> Bool {
        try observedWrite { (tx: Connection) throws(Failure) -> Bool in
            try tx.run(.touchSession, [.integer(lastSeen), .integer(idleExpiresAt), .text(idHash)]) == 1
        }
    }

    public func updateTokens(idHash: String, expectedVersion: Int64, tokens: TokenSet,
                             claims: [UInt8]?) throws(SessionStoreError) -> Bool {
        let resealed = try SessionSecrets.resealed(tokens: tokens, claims: claims, idHash: idHash,
                                                   expectedVersion: expectedVersion, sealer: sealer) { () throws(SessionStoreError) in
            try observedRead { (tx: Connection) throws(Failure) -> SealedVersion? in
                try tx.queryFirst(.selectSealed, [.text(idHash)]) { (row: Connection.Row) throws(Failure) in
                    try SealedVersion(row)
                }
            }
        }
        guard let sealed = resealed else { return false }
        // The version check in the UPDATE is the compare-and-swap: whatever happened since the read
        // above, only one writer of `expectedVersion` wins (see `SessionStatement.updateTokens`).
        return try observedWrite { (tx: Connection) throws(Failure) -> Bool in
            try tx.run(.updateTokens, [
                .bytes(sealed), .integer(tokens.accessTokenExpiresAt), .text(idHash), .integer(expectedVersion),
            ]) == 1
        }
    }

    public func acquireRefreshLease(idHash: String, owner: String, now: Int64,
                                    duration: Int64) throws(SessionStoreError) -> Bool {
        let until = saturatingAdd(now, max(0, duration))
        return try observedWrite { (tx: Connection) throws(Failure) -> Bool in
            try tx.run(.acquireLease, [.text(owner), .integer(until), .text(idHash), .integer(now)]) == 1
        }
    }

    public func releaseRefreshLease(idHash: String, owner: String) throws(SessionStoreError) {
        try observedWrite { (tx: Connection) throws(Failure) in
            try tx.run(.releaseLease, [.text(idHash), .text(owner)])
        }
    }

    // MARK: - Pending logins

    public func savePendingLogin(_ login: PendingLogin) throws(SessionStoreError) {
        let sealed = try PendingLoginSecrets.sealed(login, sealer: sealer)
        let limits = pendingLoginLimits
        try observedWrite { (tx: Connection) throws(Failure) in
            try tx.run(.insertPending, [
                .text(login.stateHash), .text(login.bindingHash), .bytes(sealed),
                .integer(login.createdAt), .integer(login.expiresAt),
            ])
            // Same transaction as the insert: no flood of /login, however fast and from however many
            // processes or instances, ever leaves the table above its caps.
            try tx.run(.evictPendingOfBinding, [.text(login.bindingHash), .integer(Int64(limits.perBinding))])
            try tx.run(.evictPendingOverall, [.integer(Int64(limits.total))])
        }
    }

    public func takePendingLogin(stateHash: String, now: Int64) throws(SessionStoreError) -> PendingLogin? {
        let taken = try observedWrite { (tx: Connection) throws(Failure) -> StoredPendingRow? in
            try tx.queryFirst(.takePending, [.text(stateHash)]) { (row: Connection.Row) throws(Failure) in
                try StoredPendingRow(taken: row)
            }
        }
        return taken?.pendingLogin(stateHash: stateHash, now: now, sealer: sealer, logger: logger)
    }

    public func pendingLogin(stateHash: String, now: Int64) throws(SessionStoreError) -> PendingLogin? {
        let found = try observedRead { (tx: Connection) throws(Failure) -> StoredPendingRow? in
            try tx.queryFirst(.selectPending, [.text(stateHash)]) { (row: Connection.Row) throws(Failure) in
                try StoredPendingRow(taken: row)
            }
        }
        return found?.pendingLogin(stateHash: stateHash, now: now, sealer: sealer, logger: logger)
    }

    // MARK: - Back-channel logout

    public func endSessions(forLogoutToken jti: String, expiresAt: Int64,
                            matching match: LogoutTokenMatch) throws(SessionStoreError) -> Int? {
        let jtiHash = LogoutJTI.hash(jti, provider: match.provider)
        // One transaction: the `jti` is recorded only if the sessions it names are deleted too, so a
        // failed deletion leaves the provider's retry of the same token free to succeed.
        return try observedWrite { (tx: Connection) throws(Failure) -> Int? in
            guard try tx.run(.insertJTI, [.text(jtiHash), .integer(expiresAt)]) == 1 else { return nil }
            return try tx.deleteSessions(match)
        }
    }
}
