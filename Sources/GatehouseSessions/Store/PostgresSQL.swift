/// Every statement of the PostgreSQL store: the SQLite store's statements (`SQL`) in PostgreSQL's
/// dialect (`$n` placeholders, `LEAST`, the `seq` column for SQLite's `rowid`). Sent unnamed with
/// `PQsendQueryParams`, never prepared by name (PgBouncer transaction mode).
enum PostgresSQL {
    static let insertSession = """
        INSERT INTO sessions (id_hash, sub, sid, created_at, last_seen_at, idle_expires_at, expires_at,
                              sealed, access_expires_at, version)
        VALUES ($1, $2, $3, $4, $4, $5, $6, $7, $8, 1)
        """
    static let selectSession = """
        SELECT sub, sid, created_at, last_seen_at, idle_expires_at, expires_at, sealed, version
        FROM sessions WHERE id_hash = $1
        """
    static let deleteExpiredSession = """
        DELETE FROM sessions WHERE id_hash = $1 AND (idle_expires_at <= $2 OR expires_at <= $2)
        """
    static let touchSession = """
        UPDATE sessions SET last_seen_at = $1, idle_expires_at = LEAST($2, expires_at) WHERE id_hash = $3
        """
    static let selectSealed = "SELECT sealed, version FROM sessions WHERE id_hash = $1"
    /// A concurrent writer of the same row makes this one wait, then re-check `version` on the
    /// row it wrote (READ COMMITTED re-evaluation): one writer of a version wins.
    static let updateTokens = """
        UPDATE sessions SET sealed = $1, access_expires_at = $2, version = version + 1
        WHERE id_hash = $3 AND version = $4
        """
    static let acquireLease = """
        UPDATE sessions SET refresh_lease_owner = $1, refresh_lease_until = $2
        WHERE id_hash = $3
          AND (refresh_lease_owner IS NULL OR refresh_lease_owner = $1
               OR refresh_lease_until IS NULL OR refresh_lease_until <= $4)
        """
    static let releaseLease = """
        UPDATE sessions SET refresh_lease_owner = NULL, refresh_lease_until = NULL
        WHERE id_hash = $1 AND refresh_lease_owner = $2
        """
    static let deleteSession = "DELETE FROM sessions WHERE id_hash = $1"
    static let deleteBySub = "DELETE FROM sessions WHERE sub = $1"
    static let deleteBySid = "DELETE FROM sessions WHERE sid = $1"
    /// `FOR UPDATE`: the rows counted stay as counted until the DELETE of the same transaction.
    static let lockByPrefix = "SELECT id_hash FROM sessions WHERE id_hash >= $1 AND id_hash < $2 FOR UPDATE"
    static let deleteByPrefix = "DELETE FROM sessions WHERE id_hash >= $1 AND id_hash < $2"
    static let listActive = """
        SELECT substr(id_hash, 1, 8), sub, created_at, last_seen_at, idle_expires_at, expires_at
        FROM sessions WHERE idle_expires_at > $1 AND expires_at > $1
        ORDER BY created_at, id_hash
        """
    static let countActive = "SELECT COUNT(*) FROM sessions WHERE idle_expires_at > $1 AND expires_at > $1"
    static let insertPending = """
        INSERT INTO pending_logins (state_hash, binding_hash, sealed, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)
        """
    /// Keeps the `$2` newest logins of binding `$1`. `SKIP LOCKED`: a row a callback is taking at this
    /// moment is left to it. Waiting for it instead could deadlock: the callback holds that row and
    /// waits for `pending_login_count`, which this transaction holds since its INSERT.
    static let evictPendingOfBinding = """
        DELETE FROM pending_logins WHERE state_hash IN (
            SELECT state_hash FROM pending_logins WHERE binding_hash = $1
            ORDER BY expires_at DESC, seq DESC OFFSET $2 FOR UPDATE SKIP LOCKED)
        """
    /// Keeps at most `$1` rows: the surplus closest to expiry goes (skipping rows being taken, as
    /// above). The count comes from
    /// `pending_login_count` (kept by triggers, migration 0002), so this reads only the surplus rows
    /// of index `pending_logins_by_expires_at`, never the whole table.
    static let evictPendingOverall = """
        DELETE FROM pending_logins WHERE state_hash IN (
            SELECT state_hash FROM pending_logins ORDER BY expires_at, seq
            LIMIT GREATEST(0, (SELECT n FROM pending_login_count) - $1) FOR UPDATE SKIP LOCKED)
        """
    static let takePending = """
        DELETE FROM pending_logins WHERE state_hash = $1 RETURNING binding_hash, sealed, created_at, expires_at
        """
    static let insertJTI = "INSERT INTO logout_jti (jti_hash, expires_at) VALUES ($1, $2) ON CONFLICT (jti_hash) DO NOTHING"
    static let purgeSessions = "DELETE FROM sessions WHERE idle_expires_at <= $1 OR expires_at <= $1"
    static let purgePending = "DELETE FROM pending_logins WHERE expires_at <= $1"
    static let countPending = "SELECT COUNT(*) FROM pending_logins"
    static let purgeJTI = "DELETE FROM logout_jti WHERE expires_at <= $1"
    static let ping = "SELECT 1 FROM sessions LIMIT 1"
}
