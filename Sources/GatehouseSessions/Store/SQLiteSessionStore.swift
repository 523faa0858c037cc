import Logging

/// The production `SessionStore`: one SQLite file (WAL), shared safely by threads of one process
/// and by several processes. Tokens and claims are sealed with `TokenSealer` (associated data =
/// the session's id hash); a pending login's verifier, nonce and return path are sealed with
/// associated data = its state hash. Crypto runs outside the database lock.
///
/// For example:
/// ```swift
/// let store = try SQLiteSessionStore(path: config.databasePath, sealer: sealer, logger: logger)
/// try store.migrate()
/// ```
public final class SQLiteSessionStore: MaintenanceBackedStore {
    /// The underlying database.
    public let database: SQLiteDatabase
    /// The key-less operations (list, revoke, purge, migrate, ping) on the same database.
    public let maintenance: SQLiteSessionMaintenance
    /// Caps on pending logins, enforced by every `savePendingLogin`.
    public let pendingLoginLimits: PendingLoginLimits
    private let sealer: TokenSealer
    private let logger: Logger

    /// Opens (creating if needed) the database file. Does not migrate: call `migrate()`.
    /// - Throws: `SessionStoreError.database` when the file cannot be opened or configured.
    public convenience init(path: String, sealer: TokenSealer, logger: Logger,
                            pendingLoginLimits: PendingLoginLimits = .standard) throws(SessionStoreError) {
        let database: SQLiteDatabase
        do {
            database = try SQLiteDatabase(path: path)
        } catch {
            throw .database(error)
        }
        self.init(database: database, sealer: sealer, logger: logger, pendingLoginLimits: pendingLoginLimits)
    }

    /// A store over an already open database.
    public init(database: SQLiteDatabase, sealer: TokenSealer, logger: Logger,
                pendingLoginLimits: PendingLoginLimits = .standard) {
        self.database = database
        self.pendingLoginLimits = pendingLoginLimits
        self.maintenance = SQLiteSessionMaintenance(database: database, logger: logger)
        self.sealer = sealer
        self.logger = logger
    }

    // MARK: - Sessions

    public func createSession(_ new: NewSession, replacing oldIdHash: String?) throws(SessionStoreError) -> Session {
        let sealed = try SessionSecrets.sealed(tokens: new.tokens, claims: new.claims, idHash: new.idHash, sealer: sealer)
        try write { (conn: SQLiteConnection) throws(SQLiteError) in
            if let oldIdHash {
                try conn.run(SQL.deleteSession, [.text(oldIdHash)])
            }
            try conn.run(SQL.insertSession, [
                .text(new.idHash), .text(new.sub), .optionalText(new.sid),
                .integer(new.createdAt), .integer(new.createdAt), .integer(new.idleExpiresAt),
                .integer(new.expiresAt), .blob(sealed), .optionalInteger(new.tokens.accessTokenExpiresAt),
            ])
        }
        return Session(idHash: new.idHash, sub: new.sub, sid: new.sid, claims: new.claims, tokens: new.tokens,
                       createdAt: new.createdAt, lastSeenAt: new.createdAt, idleExpiresAt: new.idleExpiresAt,
                       expiresAt: new.expiresAt, version: 1)
    }

    public func loadSession(idHash: String, now: Int64) throws(SessionStoreError) -> Session? {
        let found = try read { (conn: SQLiteConnection) throws(SQLiteError) -> StoredSessionRow? in
            try conn.queryFirst(SQL.selectSession, [.text(idHash)], row: StoredSessionRow.init)
        }
        guard let row = found else { return nil }
        guard row.isActive(at: now) else {
            // Only delete it if it is still expired: another process may have just slid it.
            try write { (conn: SQLiteConnection) throws(SQLiteError) in
                try conn.run(SQL.deleteExpiredSession, [.text(idHash), .integer(now)])
            }
            return nil
        }
        return row.session(idHash: idHash, sealer: sealer, logger: logger)
    }

    @discardableResult
    public func touch(idHash: String, lastSeen: Int64, idleExpiresAt: Int64) throws(SessionStoreError) -> Bool {
        try write { (conn: SQLiteConnection) throws(SQLiteError) -> Bool in
            try conn.run(SQL.touchSession, [.integer(lastSeen), .integer(idleExpiresAt), .text(idHash)]) == 1
        }
    }

    public func updateTokens(idHash: String, expectedVersion: Int64, tokens: TokenSet,
                             claims: [UInt8]?) throws(SessionStoreError) -> Bool {
        let resealed = try SessionSecrets.resealed(tokens: tokens, claims: claims, idHash: idHash,
                                                   expectedVersion: expectedVersion, sealer: sealer) { () throws(SessionStoreError) in
            try read { (conn: SQLiteConnection) throws(SQLiteError) -> SealedVersion? in
                try conn.queryFirst(SQL.selectSealed, [.text(idHash)]) { (row: SQLiteRow) throws(SQLiteError) in
                    SealedVersion(sealed: try row.requiredBlob(0), version: row.int64(1))
                }
            }
        }
        guard let sealed = resealed else { return false }
        // The version check in the UPDATE is the compare-and-swap: whatever happened since the
        // read above, only one writer of `expectedVersion` wins.
        return try write { (conn: SQLiteConnection) throws(SQLiteError) -> Bool in
            try conn.run(SQL.updateTokens, [
                .blob(sealed), .optionalInteger(tokens.accessTokenExpiresAt), .text(idHash), .integer(expectedVersion),
            ]) == 1
        }
    }

    public func acquireRefreshLease(idHash: String, owner: String, now: Int64,
                                    duration: Int64) throws(SessionStoreError) -> Bool {
        let until = saturatingAdd(now, max(0, duration))
        // One conditional UPDATE is atomic: SQLite takes the write lock for it (waiting up to the
        // busy timeout), so two processes can never both see the lease as free.
        return try write { (conn: SQLiteConnection) throws(SQLiteError) -> Bool in
            try conn.run(SQL.acquireLease, [.text(owner), .integer(until), .text(idHash), .integer(now)]) == 1
        }
    }

    public func releaseRefreshLease(idHash: String, owner: String) throws(SessionStoreError) {
        try write { (conn: SQLiteConnection) throws(SQLiteError) in
            try conn.run(SQL.releaseLease, [.text(idHash), .text(owner)])
        }
    }

    // MARK: - Pending logins

    public func savePendingLogin(_ login: PendingLogin) throws(SessionStoreError) {
        let sealed = try PendingLoginSecrets.sealed(login, sealer: sealer)
        let limits = pendingLoginLimits
        try write { (conn: SQLiteConnection) throws(SQLiteError) in
            try conn.run(SQL.insertPending, [
                .text(login.stateHash), .text(login.bindingHash), .blob(sealed),
                .integer(login.createdAt), .integer(login.expiresAt),
            ])
            // Same transaction as the insert: no flood of /login, however fast and from however
            // many processes, ever sees the table above its caps.
            try conn.run(SQL.evictPendingOfBinding, [.text(login.bindingHash), .integer(Int64(limits.perBinding))])
            try conn.run(SQL.evictPendingOverall, [.integer(Int64(limits.total))])
        }
    }

    /// Pending-login rows stored, expired or not (tests and operators checking the caps).
    public func pendingLoginCount() throws(SessionStoreError) -> Int {
        try read { (conn: SQLiteConnection) throws(SQLiteError) -> Int in
            try conn.queryFirst(SQL.countPending) { row in Int(row.int64(0)) } ?? 0
        }
    }

    public func takePendingLogin(stateHash: String, now: Int64) throws(SessionStoreError) -> PendingLogin? {
        // DELETE … RETURNING: reading and consuming are one statement, so a state is usable once
        // even when two callbacks race (in this process or another).
        let taken = try write { (conn: SQLiteConnection) throws(SQLiteError) -> StoredPendingRow? in
            try conn.queryFirst(SQL.takePending, [.text(stateHash)]) { (row: SQLiteRow) throws(SQLiteError) in
                StoredPendingRow(bindingHash: try row.requiredString(0), sealed: try row.requiredBlob(1),
                                 createdAt: row.int64(2), expiresAt: row.int64(3))
            }
        }
        return taken?.pendingLogin(stateHash: stateHash, now: now, sealer: sealer, logger: logger)
    }

    // MARK: - Back-channel logout

    public func endSessions(forLogoutToken jti: String, expiresAt: Int64,
                            matching match: LogoutTokenMatch) throws(SessionStoreError) -> Int? {
        let jtiHash = SecretHash.hex(of: jti)
        return try write { (conn: SQLiteConnection) throws(SQLiteError) -> Int? in
            guard try conn.run(SQL.insertJTI, [.text(jtiHash), .integer(expiresAt)]) == 1 else { return nil }
            switch match {
            case .sid(let sid): return try conn.run(SQL.deleteBySid, [.text(sid)])
            case .sub(let sub): return try conn.run(SQL.deleteBySub, [.text(sub)])
            }
        }
    }

    // MARK: - Helpers

    private func read<R: Sendable>(_ body: (SQLiteConnection) throws(SQLiteError) -> R) throws(SessionStoreError) -> R {
        try database.storeRead(body)
    }

    @discardableResult
    private func write<R: Sendable>(_ body: (SQLiteConnection) throws(SQLiteError) -> R) throws(SessionStoreError) -> R {
        try database.storeWrite(body)
    }

}

extension StoredSessionRow {
    init(_ row: SQLiteRow) throws(SQLiteError) {
        self.init(sub: try row.requiredString(0), sid: row.string(1), createdAt: row.int64(2), lastSeenAt: row.int64(3),
                  idleExpiresAt: row.int64(4), expiresAt: row.int64(5), sealed: try row.requiredBlob(6),
                  version: row.int64(7))
    }
}
