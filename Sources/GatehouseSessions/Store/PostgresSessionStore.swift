import Logging

/// The `SessionStore` for several instances: sessions, pending logins and logout `jti`s in one
/// PostgreSQL database shared by every instance, with the semantics of `SQLiteSessionStore` (the
/// conformance suite runs against both): values sealed the same way, the refresh lease and the token
/// version as conditional UPDATEs, a pending login consumed by `DELETE … RETURNING`.
///
/// Calls block their thread (at most the pool's acquire timeout plus the statement deadline); run
/// them off the event loops. When PostgreSQL is unreachable they throw `SessionStoreError.unavailable`.
///
/// For example:
/// ```swift
/// let store = PostgresSessionStore(pool: PostgresConnectionPool(uri: uri), sealer: sealer, logger: logger)
/// try store.migrate()
/// ```
public final class PostgresSessionStore: MaintenanceBackedStore {
    /// The key-less operations (list, revoke, purge, migrate, ping) on the same pool.
    public let maintenance: PostgresSessionMaintenance
    /// Caps on pending logins, enforced by every `savePendingLogin`.
    public let pendingLoginLimits: PendingLoginLimits
    private let sealer: TokenSealer
    private let logger: Logger

    public init(pool: PostgresConnectionPool, sealer: TokenSealer, logger: Logger,
                pendingLoginLimits: PendingLoginLimits = .standard) {
        self.maintenance = PostgresSessionMaintenance(pool: pool, logger: logger)
        self.pendingLoginLimits = pendingLoginLimits
        self.sealer = sealer
        self.logger = logger
    }

    // MARK: - Sessions

    public func createSession(_ new: NewSession, replacing oldIdHash: String?) throws(SessionStoreError) -> Session {
        let sealed = try SessionSecrets.sealed(tokens: new.tokens, claims: new.claims, idHash: new.idHash, sealer: sealer)
        try write { (tx: PostgresTransaction) throws(PostgresError) in
            if let oldIdHash {
                try tx.run(PostgresSQL.deleteSession, [.text(oldIdHash)])
            }
            try tx.run(PostgresSQL.insertSession, [
                .text(new.idHash), .text(new.sub), .text(new.sid), .int8(new.createdAt), .int8(new.idleExpiresAt),
                .int8(new.expiresAt), .bytea(sealed), .int8(new.tokens.accessTokenExpiresAt),
            ])
        }
        return Session(idHash: new.idHash, sub: new.sub, sid: new.sid, claims: new.claims, tokens: new.tokens,
                       createdAt: new.createdAt, lastSeenAt: new.createdAt, idleExpiresAt: new.idleExpiresAt,
                       expiresAt: new.expiresAt, version: 1)
    }

    public func loadSession(idHash: String, now: Int64) throws(SessionStoreError) -> Session? {
        let found = try write { (tx: PostgresTransaction) throws(PostgresError) -> StoredSessionRow? in
            try tx.queryFirst(PostgresSQL.selectSession, [.text(idHash)], row: StoredSessionRow.init)
        }
        guard let row = found else { return nil }
        guard row.isActive(at: now) else {
            // Only delete it if it is still expired: another instance may have just slid it.
            try write { (tx: PostgresTransaction) throws(PostgresError) in
                try tx.run(PostgresSQL.deleteExpiredSession, [.text(idHash), .int8(now)])
            }
            return nil
        }
        return row.session(idHash: idHash, sealer: sealer, logger: logger)
    }

    @discardableResult
    public func touch(idHash: String, lastSeen: Int64, idleExpiresAt: Int64) throws(SessionStoreError) -> Bool {
        try write { (tx: PostgresTransaction) throws(PostgresError) -> Bool in
            try tx.run(PostgresSQL.touchSession, [.int8(lastSeen), .int8(idleExpiresAt), .text(idHash)]) == 1
        }
    }

    public func updateTokens(idHash: String, expectedVersion: Int64, tokens: TokenSet,
                             claims: [UInt8]?) throws(SessionStoreError) -> Bool {
        let resealed = try SessionSecrets.resealed(tokens: tokens, claims: claims, idHash: idHash,
                                                   expectedVersion: expectedVersion, sealer: sealer) { () throws(SessionStoreError) in
            try write { (tx: PostgresTransaction) throws(PostgresError) -> SealedVersion? in
                try tx.queryFirst(PostgresSQL.selectSealed, [.text(idHash)]) { (row: PostgresRow) throws(PostgresError) in
                    SealedVersion(sealed: try row.requiredBytes(0), version: row.int64(1))
                }
            }
        }
        guard let sealed = resealed else { return false }
        // The version check in the UPDATE is the compare-and-swap (see `PostgresSQL.updateTokens`).
        return try write { (tx: PostgresTransaction) throws(PostgresError) -> Bool in
            try tx.run(PostgresSQL.updateTokens, [
                .bytea(sealed), .int8(tokens.accessTokenExpiresAt), .text(idHash), .int8(expectedVersion),
            ]) == 1
        }
    }

    public func acquireRefreshLease(idHash: String, owner: String, now: Int64,
                                    duration: Int64) throws(SessionStoreError) -> Bool {
        let until = saturatingAdd(now, max(0, duration))
        // One conditional UPDATE: a second instance racing for the row waits for the first one's
        // commit, then re-checks the condition on the row it wrote, so only one wins.
        return try write { (tx: PostgresTransaction) throws(PostgresError) -> Bool in
            try tx.run(PostgresSQL.acquireLease, [.text(owner), .int8(until), .text(idHash), .int8(now)]) == 1
        }
    }

    public func releaseRefreshLease(idHash: String, owner: String) throws(SessionStoreError) {
        try write { (tx: PostgresTransaction) throws(PostgresError) in
            try tx.run(PostgresSQL.releaseLease, [.text(idHash), .text(owner)])
        }
    }

    // MARK: - Pending logins

    public func savePendingLogin(_ login: PendingLogin) throws(SessionStoreError) {
        let sealed = try PendingLoginSecrets.sealed(login, sealer: sealer)
        let limits = pendingLoginLimits
        try write { (tx: PostgresTransaction) throws(PostgresError) in
            // The INSERT's trigger updates `pending_login_count`: that row lock serializes every
            // writer of pending logins (on every instance) until COMMIT, so the evictions below see
            // the table as it is and no flood ever leaves it above its caps.
            try tx.run(PostgresSQL.insertPending, [
                .text(login.stateHash), .text(login.bindingHash), .bytea(sealed),
                .int8(login.createdAt), .int8(login.expiresAt),
            ])
            try tx.run(PostgresSQL.evictPendingOfBinding, [.text(login.bindingHash), .int8(Int64(limits.perBinding))])
            try tx.run(PostgresSQL.evictPendingOverall, [.int8(Int64(limits.total))])
        }
    }

    /// Pending-login rows stored, expired or not (tests and operators checking the caps).
    public func pendingLoginCount() throws(SessionStoreError) -> Int {
        try maintenance.pendingLoginCount()
    }

    public func takePendingLogin(stateHash: String, now: Int64) throws(SessionStoreError) -> PendingLogin? {
        // DELETE … RETURNING: reading and consuming are one statement, so a state is usable once
        // even when two callbacks race on two instances.
        let taken = try write { (tx: PostgresTransaction) throws(PostgresError) -> StoredPendingRow? in
            try tx.queryFirst(PostgresSQL.takePending, [.text(stateHash)]) { (row: PostgresRow) throws(PostgresError) in
                StoredPendingRow(bindingHash: try row.requiredString(0), sealed: try row.requiredBytes(1),
                                 createdAt: row.int64(2), expiresAt: row.int64(3))
            }
        }
        return taken?.pendingLogin(stateHash: stateHash, now: now, sealer: sealer, logger: logger)
    }

    // MARK: - Back-channel logout

    public func endSessions(forLogoutToken jti: String, expiresAt: Int64,
                            matching match: LogoutTokenMatch) throws(SessionStoreError) -> Int? {
        let jtiHash = SecretHash.hex(of: jti)
        return try write { (tx: PostgresTransaction) throws(PostgresError) -> Int? in
            guard try tx.run(PostgresSQL.insertJTI, [.text(jtiHash), .int8(expiresAt)]) == 1 else { return nil }
            switch match {
            case .sid(let sid): return try tx.run(PostgresSQL.deleteBySid, [.text(sid)])
            case .sub(let sub): return try tx.run(PostgresSQL.deleteBySub, [.text(sub)])
            }
        }
    }

    @discardableResult
    private func write<R>(_ body: (PostgresTransaction) throws(PostgresError) -> R) throws(SessionStoreError) -> R {
        try maintenance.write(body)
    }
}

extension StoredSessionRow {
    init(_ row: PostgresRow) throws(PostgresError) {
        self.init(sub: try row.requiredString(0), sid: row.string(1), createdAt: row.int64(2), lastSeenAt: row.int64(3),
                  idleExpiresAt: row.int64(4), expiresAt: row.int64(5), sealed: try row.requiredBytes(6),
                  version: row.int64(7))
    }
}
