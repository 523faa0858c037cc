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
public final class SQLiteSessionStore: SessionStore {
    /// The underlying database (for `gatehouse migrate` and readiness checks).
    public let database: SQLiteDatabase
    private let sealer: TokenSealer
    private let logger: Logger

    /// Opens (creating if needed) the database file. Does not migrate: call `migrate()`.
    /// - Throws: `SessionStoreError.database` when the file cannot be opened or configured.
    public convenience init(path: String, sealer: TokenSealer, logger: Logger) throws(SessionStoreError) {
        let database: SQLiteDatabase
        do {
            database = try SQLiteDatabase(path: path)
        } catch {
            throw .database(error)
        }
        self.init(database: database, sealer: sealer, logger: logger)
    }

    /// A store over an already open database.
    public init(database: SQLiteDatabase, sealer: TokenSealer, logger: Logger) {
        self.database = database
        self.sealer = sealer
        self.logger = logger
    }

    /// Applies pending embedded migrations (see `Migrator`) and logs each one applied.
    /// - Throws: `MigrationError`, e.g. `.databaseNewerThanBinary`.
    @discardableResult
    public func migrate() throws(MigrationError) -> [Migration] {
        let applied = try Migrator.migrate(database)
        for migration in applied {
            logger.info("applied database migration", metadata: [
                "db.migration.version": "\(migration.version)", "db.migration.name": "\(migration.name)",
            ])
        }
        return applied
    }

    /// Checkpoints the WAL and closes the database; later calls throw.
    public func close() throws(SessionStoreError) {
        do {
            try database.close()
        } catch {
            throw .database(error)
        }
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
        let found = try read { (conn: SQLiteConnection) throws(SQLiteError) -> SessionRow? in
            try conn.queryFirst(SQL.selectSession, [.text(idHash)], row: SessionRow.init)
        }
        guard let row = found else { return nil }
        guard SessionLifetime.isActive(idleExpiresAt: row.idleExpiresAt, expiresAt: row.expiresAt, now: now) else {
            // Only delete it if it is still expired: another process may have just slid it.
            try write { (conn: SQLiteConnection) throws(SQLiteError) in
                try conn.run(SQL.deleteExpiredSession, [.text(idHash), .integer(now)])
            }
            return nil
        }
        let secrets: SessionSecrets
        do {
            secrets = try SessionSecrets.opened(row.sealed, idHash: idHash, sealer: sealer)
        } catch {
            // Not deleted: if the operator restores the right key, the session works again.
            logger.warning("stored session cannot be opened; treating it as absent", metadata: [
                "session.id_prefix": "\(idHash.prefix(8))", "error": "\(error)",
            ])
            return nil
        }
        return Session(idHash: idHash, sub: row.sub, sid: row.sid, claims: Array(secrets.claims),
                       tokens: secrets.tokens, createdAt: row.createdAt, lastSeenAt: row.lastSeenAt,
                       idleExpiresAt: row.idleExpiresAt, expiresAt: row.expiresAt, version: row.version)
    }

    @discardableResult
    public func touch(idHash: String, lastSeen: Int64, idleExpiresAt: Int64) throws(SessionStoreError) -> Bool {
        try write { (conn: SQLiteConnection) throws(SQLiteError) -> Bool in
            try conn.run(SQL.touchSession, [.integer(lastSeen), .integer(idleExpiresAt), .text(idHash)]) == 1
        }
    }

    public func updateTokens(idHash: String, expectedVersion: Int64, tokens: TokenSet,
                             claims: [UInt8]?) throws(SessionStoreError) -> Bool {
        let keptClaims: [UInt8]
        if let claims {
            keptClaims = claims
        } else {
            // Claims live in the same sealed blob: read them back to re-seal with the new tokens.
            let found = try read { (conn: SQLiteConnection) throws(SQLiteError) -> SealedVersion? in
                try conn.queryFirst(SQL.selectSealed, [.text(idHash)]) { (row: SQLiteRow) throws(SQLiteError) in
                    SealedVersion(sealed: try row.requiredBlob(0), version: row.int64(1))
                }
            }
            guard let current = found, current.version == expectedVersion else { return false }
            keptClaims = Array(try SessionSecrets.opened(current.sealed, idHash: idHash, sealer: sealer).claims)
        }
        let sealed = try SessionSecrets.sealed(tokens: tokens, claims: keptClaims, idHash: idHash, sealer: sealer)
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

    @discardableResult
    public func deleteSession(idHash: String) throws(SessionStoreError) -> Bool {
        try write { (conn: SQLiteConnection) throws(SQLiteError) -> Bool in
            try conn.run(SQL.deleteSession, [.text(idHash)]) == 1
        }
    }

    @discardableResult
    public func deleteSessions(sub: String) throws(SessionStoreError) -> Int {
        try write { (conn: SQLiteConnection) throws(SQLiteError) -> Int in
            try conn.run(SQL.deleteBySub, [.text(sub)])
        }
    }

    @discardableResult
    public func deleteSessions(sid: String) throws(SessionStoreError) -> Int {
        try write { (conn: SQLiteConnection) throws(SQLiteError) -> Int in
            try conn.run(SQL.deleteBySid, [.text(sid)])
        }
    }

    @discardableResult
    public func deleteSessions(idPrefix: String) throws(SessionStoreError) -> Int {
        let prefix = try SessionIDPrefix.normalized(idPrefix)
        // Hashes are lowercase hex, so every hash starting with `prefix` sorts in [prefix, prefix+"g").
        let range: [SQLiteValue] = [.text(prefix), .text(prefix + "g")]
        let outcome = try write { (conn: SQLiteConnection) throws(SQLiteError) -> PrefixDeletion in
            let matches = try conn.queryFirst(SQL.countByPrefix, range) { row in Int(row.int64(0)) } ?? 0
            guard matches <= 1 else { return .ambiguous(matches) }
            return .deleted(try conn.run(SQL.deleteByPrefix, range))
        }
        switch outcome {
        case .ambiguous(let matches): throw .ambiguousIDPrefix(prefix: prefix, matches: matches)
        case .deleted(let count): return count
        }
    }

    public func listSessions(now: Int64) throws(SessionStoreError) -> [SessionSummary] {
        try read { (conn: SQLiteConnection) throws(SQLiteError) -> [SessionSummary] in
            try conn.query(SQL.listActive, [.integer(now)]) { (row: SQLiteRow) throws(SQLiteError) in
                SessionSummary(idPrefix: try row.requiredString(0), sub: try row.requiredString(1),
                               createdAt: row.int64(2), lastSeenAt: row.int64(3),
                               idleExpiresAt: row.int64(4), expiresAt: row.int64(5))
            }
        }
    }

    public func countActiveSessions(now: Int64) throws(SessionStoreError) -> Int {
        try read { (conn: SQLiteConnection) throws(SQLiteError) -> Int in
            try conn.queryFirst(SQL.countActive, [.integer(now)]) { row in Int(row.int64(0)) } ?? 0
        }
    }

    // MARK: - Pending logins

    public func savePendingLogin(_ login: PendingLogin) throws(SessionStoreError) {
        let sealed = try PendingLoginSecrets.sealed(login, sealer: sealer)
        try write { (conn: SQLiteConnection) throws(SQLiteError) in
            try conn.run(SQL.insertPending, [
                .text(login.stateHash), .text(login.bindingHash), .blob(sealed),
                .integer(login.createdAt), .integer(login.expiresAt),
            ])
        }
    }

    public func takePendingLogin(stateHash: String, now: Int64) throws(SessionStoreError) -> PendingLogin? {
        // DELETE … RETURNING: reading and consuming are one statement, so a state is usable once
        // even when two callbacks race (in this process or another).
        let taken = try write { (conn: SQLiteConnection) throws(SQLiteError) -> PendingRow? in
            try conn.queryFirst(SQL.takePending, [.text(stateHash)]) { (row: SQLiteRow) throws(SQLiteError) in
                PendingRow(bindingHash: try row.requiredString(0), sealed: try row.requiredBlob(1),
                           createdAt: row.int64(2), expiresAt: row.int64(3))
            }
        }
        guard let row = taken, now < row.expiresAt else { return nil }
        let secrets: PendingLoginSecrets
        do {
            secrets = try PendingLoginSecrets.opened(row.sealed, stateHash: stateHash, sealer: sealer)
        } catch {
            logger.warning("stored pending login cannot be opened; treating it as absent", metadata: [
                "oauth.state_hash_prefix": "\(stateHash.prefix(8))", "error": "\(error)",
            ])
            return nil
        }
        return PendingLogin(stateHash: stateHash, bindingHash: row.bindingHash, codeVerifier: secrets.codeVerifier,
                            nonce: secrets.nonce, returnTo: secrets.returnTo,
                            createdAt: row.createdAt, expiresAt: row.expiresAt)
    }

    // MARK: - Back-channel logout, maintenance

    public func recordLogoutJTI(_ jti: String, expiresAt: Int64) throws(SessionStoreError) -> Bool {
        let jtiHash = SecretHash.hex(of: jti)
        return try write { (conn: SQLiteConnection) throws(SQLiteError) -> Bool in
            try conn.run(SQL.insertJTI, [.text(jtiHash), .integer(expiresAt)]) == 1
        }
    }

    @discardableResult
    public func purgeExpired(now: Int64) throws(SessionStoreError) -> PurgeCounts {
        try write { (conn: SQLiteConnection) throws(SQLiteError) -> PurgeCounts in
            PurgeCounts(sessions: try conn.run(SQL.purgeSessions, [.integer(now)]),
                        pendingLogins: try conn.run(SQL.purgePending, [.integer(now)]),
                        logoutJTIs: try conn.run(SQL.purgeJTI, [.integer(now)]))
        }
    }

    public func ping() throws(SessionStoreError) {
        _ = try read { (conn: SQLiteConnection) throws(SQLiteError) -> Bool in
            // Touches the schema too: an unmigrated database is not ready.
            try conn.queryFirst(SQL.ping) { _ in true } ?? false
        }
    }

    // MARK: - Helpers

    private func read<R: Sendable>(_ body: (SQLiteConnection) throws(SQLiteError) -> R) throws(SessionStoreError) -> R {
        do {
            return try database.withConnection(body)
        } catch {
            throw .database(error)
        }
    }

    /// Writes in a `BEGIN IMMEDIATE` transaction, so the busy timeout covers waiting for other
    /// connections and a multi-statement write is all-or-nothing.
    @discardableResult
    private func write<R: Sendable>(_ body: (SQLiteConnection) throws(SQLiteError) -> R) throws(SessionStoreError) -> R {
        do {
            return try database.transaction(immediate: true, body)
        } catch {
            throw .database(error)
        }
    }

    private enum PrefixDeletion: Sendable {
        case ambiguous(Int)
        case deleted(Int)
    }

    private struct SealedVersion: Sendable {
        let sealed: [UInt8]
        let version: Int64
    }

    private struct PendingRow: Sendable {
        let bindingHash: String
        let sealed: [UInt8]
        let createdAt: Int64
        let expiresAt: Int64
    }

    private struct SessionRow: Sendable {
        let sub: String
        let sid: String?
        let createdAt: Int64
        let lastSeenAt: Int64
        let idleExpiresAt: Int64
        let expiresAt: Int64
        let sealed: [UInt8]
        let version: Int64

        init(_ row: SQLiteRow) throws(SQLiteError) {
            sub = try row.requiredString(0)
            sid = row.string(1)
            createdAt = row.int64(2)
            lastSeenAt = row.int64(3)
            idleExpiresAt = row.int64(4)
            expiresAt = row.int64(5)
            sealed = try row.requiredBlob(6)
            version = row.int64(7)
        }
    }
}

/// Every statement of the store: fixed strings, so each is prepared once and cached.
private enum SQL {
    static let insertSession = """
        INSERT INTO sessions (id_hash, sub, sid, created_at, last_seen_at, idle_expires_at, expires_at,
                              sealed, access_expires_at, version)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
        """
    static let selectSession = """
        SELECT sub, sid, created_at, last_seen_at, idle_expires_at, expires_at, sealed, version
        FROM sessions WHERE id_hash = ?
        """
    static let deleteExpiredSession = """
        DELETE FROM sessions WHERE id_hash = ?1 AND (idle_expires_at <= ?2 OR expires_at <= ?2)
        """
    static let touchSession = """
        UPDATE sessions SET last_seen_at = ?1, idle_expires_at = MIN(?2, expires_at) WHERE id_hash = ?3
        """
    static let selectSealed = "SELECT sealed, version FROM sessions WHERE id_hash = ?"
    static let updateTokens = """
        UPDATE sessions SET sealed = ?1, access_expires_at = ?2, version = version + 1
        WHERE id_hash = ?3 AND version = ?4
        """
    static let acquireLease = """
        UPDATE sessions SET refresh_lease_owner = ?1, refresh_lease_until = ?2
        WHERE id_hash = ?3
          AND (refresh_lease_owner IS NULL OR refresh_lease_owner = ?1
               OR refresh_lease_until IS NULL OR refresh_lease_until <= ?4)
        """
    static let releaseLease = """
        UPDATE sessions SET refresh_lease_owner = NULL, refresh_lease_until = NULL
        WHERE id_hash = ?1 AND refresh_lease_owner = ?2
        """
    static let deleteSession = "DELETE FROM sessions WHERE id_hash = ?"
    static let deleteBySub = "DELETE FROM sessions WHERE sub = ?"
    static let deleteBySid = "DELETE FROM sessions WHERE sid = ?"
    static let countByPrefix = "SELECT COUNT(*) FROM sessions WHERE id_hash >= ?1 AND id_hash < ?2"
    static let deleteByPrefix = "DELETE FROM sessions WHERE id_hash >= ?1 AND id_hash < ?2"
    static let listActive = """
        SELECT substr(id_hash, 1, 8), sub, created_at, last_seen_at, idle_expires_at, expires_at
        FROM sessions WHERE idle_expires_at > ?1 AND expires_at > ?1
        ORDER BY created_at, id_hash
        """
    static let countActive = "SELECT COUNT(*) FROM sessions WHERE idle_expires_at > ?1 AND expires_at > ?1"
    static let insertPending = """
        INSERT INTO pending_logins (state_hash, binding_hash, sealed, created_at, expires_at) VALUES (?, ?, ?, ?, ?)
        """
    static let takePending = """
        DELETE FROM pending_logins WHERE state_hash = ? RETURNING binding_hash, sealed, created_at, expires_at
        """
    static let insertJTI = "INSERT INTO logout_jti (jti_hash, expires_at) VALUES (?, ?) ON CONFLICT (jti_hash) DO NOTHING"
    static let purgeSessions = "DELETE FROM sessions WHERE idle_expires_at <= ?1 OR expires_at <= ?1"
    static let purgePending = "DELETE FROM pending_logins WHERE expires_at <= ?"
    static let purgeJTI = "DELETE FROM logout_jti WHERE expires_at <= ?"
    static let ping = "SELECT 1 FROM sessions LIMIT 1"
}
