/// Every statement of the session stores, for both engines (see `SessionStatement`). The schema is
/// the same in both (`Migrations/` and `Migrations/postgres/`), but for PostgreSQL's `seq` column,
/// the insertion order SQLite keeps as `rowid`.
extension SessionStatement {
    // MARK: - Sessions

    static let insertSession = SessionStatement("""
        INSERT INTO sessions (id_hash, sub, sid, created_at, last_seen_at, idle_expires_at, expires_at,
                              sealed, access_expires_at, version, provider, handle, user_agent)
        VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7, ?8, 1, ?9, ?10, ?11)
        """)
    static let selectSession = SessionStatement("""
        SELECT sub, sid, created_at, last_seen_at, idle_expires_at, expires_at, sealed, version, provider
        FROM sessions WHERE id_hash = ?1
        """)
    static let deleteExpiredSession = SessionStatement("""
        DELETE FROM sessions WHERE id_hash = ?1 AND (idle_expires_at <= ?2 OR expires_at <= ?2)
        """)
    /// The idle expiry never passes the absolute one (SQLite's `MIN` and PostgreSQL's `LEAST`, spelled
    /// the way both understand).
    static let touchSession = SessionStatement("""
        UPDATE sessions SET last_seen_at = ?1,
                            idle_expires_at = CASE WHEN ?2 < expires_at THEN ?2 ELSE expires_at END
        WHERE id_hash = ?3
        """)
    static let selectSealed = SessionStatement("SELECT sealed, version FROM sessions WHERE id_hash = ?1")
    /// The compare-and-swap of a token update: only one writer of a version wins. SQLite runs one
    /// writer at a time; in PostgreSQL a concurrent writer of the same row makes this one wait, then
    /// re-check `version` on the row it wrote (READ COMMITTED re-evaluation).
    static let updateTokens = SessionStatement("""
        UPDATE sessions SET sealed = ?1, access_expires_at = ?2, version = version + 1
        WHERE id_hash = ?3 AND version = ?4
        """)
    /// One conditional UPDATE: two owners racing for the lease cannot both see it free (SQLite's write
    /// lock; PostgreSQL's row lock and re-evaluation, as for `updateTokens`).
    static let acquireLease = SessionStatement("""
        UPDATE sessions SET refresh_lease_owner = ?1, refresh_lease_until = ?2
        WHERE id_hash = ?3
          AND (refresh_lease_owner IS NULL OR refresh_lease_owner = ?1
               OR refresh_lease_until IS NULL OR refresh_lease_until <= ?4)
        """)
    static let releaseLease = SessionStatement("""
        UPDATE sessions SET refresh_lease_owner = NULL, refresh_lease_until = NULL
        WHERE id_hash = ?1 AND refresh_lease_owner = ?2
        """)
    static let deleteSession = SessionStatement("DELETE FROM sessions WHERE id_hash = ?1")
    /// A `sub` or `sid` is the provider's: the same value at another provider is someone else.
    static let deleteBySub = SessionStatement("DELETE FROM sessions WHERE sub = ?1 AND provider = ?2")
    static let deleteBySid = SessionStatement("DELETE FROM sessions WHERE sid = ?1 AND provider = ?2")
    /// "My sessions": one user's active sessions (index `sessions_by_sub`), oldest first.
    static let listUserSessions = SessionStatement("""
        SELECT handle, created_at, last_seen_at, user_agent, id_hash FROM sessions
        WHERE sub = ?1 AND provider = ?2 AND idle_expires_at > ?3 AND expires_at > ?3 AND handle IS NOT NULL
        ORDER BY created_at, id_hash
        """)
    /// Ends one of the user's sessions by its handle: another user's handle matches no row.
    static let deleteByHandle = SessionStatement("""
        DELETE FROM sessions WHERE handle = ?1 AND sub = ?2 AND provider = ?3 RETURNING id_hash
        """)

    // MARK: - Administration

    /// The sessions whose id hash lies in `[?1, ?2)`, kept as they are until the DELETE of the same
    /// transaction: SQLite's `BEGIN IMMEDIATE` already holds the whole database; PostgreSQL locks
    /// just these rows.
    static let lockByPrefix = SessionStatement(
        sqlite: "SELECT id_hash FROM sessions WHERE id_hash >= ?1 AND id_hash < ?2",
        postgres: "SELECT id_hash FROM sessions WHERE id_hash >= $1 AND id_hash < $2 FOR UPDATE")
    static let deleteByPrefix = SessionStatement("DELETE FROM sessions WHERE id_hash >= ?1 AND id_hash < ?2")
    static let listActive = SessionStatement("""
        SELECT substr(id_hash, 1, 8), sub, created_at, last_seen_at, idle_expires_at, expires_at, provider
        FROM sessions WHERE idle_expires_at > ?1 AND expires_at > ?1
        ORDER BY created_at, id_hash
        """)
    static let countActive = SessionStatement("SELECT COUNT(*) FROM sessions WHERE idle_expires_at > ?1 AND expires_at > ?1")
    static let purgeSessions = SessionStatement("DELETE FROM sessions WHERE idle_expires_at <= ?1 OR expires_at <= ?1")
    static let purgePending = SessionStatement("DELETE FROM pending_logins WHERE expires_at <= ?1")
    static let purgeJTI = SessionStatement("DELETE FROM logout_jti WHERE expires_at <= ?1")
    /// Answers only when the database has the sessions schema (readiness probe).
    static let ping = SessionStatement("SELECT 1 FROM sessions LIMIT 1")

    // MARK: - Pending logins

    /// In PostgreSQL the INSERT's trigger updates `pending_login_count` (migration 0002): that row
    /// lock serializes every writer of pending logins, on every instance, until COMMIT, as SQLite's
    /// write lock does, so the evictions after it see the table as it is.
    static let insertPending = SessionStatement("""
        INSERT INTO pending_logins (state_hash, binding_hash, sealed, created_at, expires_at)
        VALUES (?1, ?2, ?3, ?4, ?5)
        """)
    /// Keeps the `?2` newest logins of binding `?1` (index `pending_logins_by_binding`). PostgreSQL
    /// skips a row a callback is taking at this moment (`SKIP LOCKED`) and leaves it to it: waiting
    /// could deadlock, as the callback holds that row and waits for `pending_login_count`, which
    /// this transaction holds since its INSERT.
    static let evictPendingOfBinding = SessionStatement(
        sqlite: """
            DELETE FROM pending_logins WHERE rowid IN (
                SELECT rowid FROM pending_logins WHERE binding_hash = ?1
                ORDER BY expires_at DESC, rowid DESC LIMIT -1 OFFSET ?2)
            """,
        postgres: """
            DELETE FROM pending_logins WHERE state_hash IN (
                SELECT state_hash FROM pending_logins WHERE binding_hash = $1
                ORDER BY expires_at DESC, seq DESC OFFSET $2 FOR UPDATE SKIP LOCKED)
            """)
    /// Keeps at most `?1` rows: the surplus closest to expiry goes (index
    /// `pending_logins_by_expires_at`). SQLite's `COUNT(*)` counts b-tree cells page by page, cheap
    /// at the cap; PostgreSQL reads the count kept by `pending_login_count`'s triggers, so this reads
    /// only the surplus rows, never the whole table (and skips rows being taken, as above).
    static let evictPendingOverall = SessionStatement(
        sqlite: """
            DELETE FROM pending_logins WHERE rowid IN (
                SELECT rowid FROM pending_logins ORDER BY expires_at, rowid
                LIMIT max(0, (SELECT COUNT(*) FROM pending_logins) - ?1))
            """,
        postgres: """
            DELETE FROM pending_logins WHERE state_hash IN (
                SELECT state_hash FROM pending_logins ORDER BY expires_at, seq
                LIMIT GREATEST(0, (SELECT n FROM pending_login_count) - $1) FOR UPDATE SKIP LOCKED)
            """)
    /// Reading and consuming are one statement, so a state is usable once even when two callbacks
    /// race (in two threads, processes or instances).
    static let takePending = SessionStatement("""
        DELETE FROM pending_logins WHERE state_hash = ?1 RETURNING binding_hash, sealed, created_at, expires_at
        """)
    static let selectPending = SessionStatement("""
        SELECT binding_hash, sealed, created_at, expires_at FROM pending_logins WHERE state_hash = ?1
        """)
    static let countPending = SessionStatement("SELECT COUNT(*) FROM pending_logins")

    // MARK: - Back-channel logout

    static let insertJTI = SessionStatement("""
        INSERT INTO logout_jti (jti_hash, expires_at) VALUES (?1, ?2) ON CONFLICT (jti_hash) DO NOTHING
        """)
}
