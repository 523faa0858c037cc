/// Every statement of the store: fixed strings, so each is prepared once and cached.
enum SQL {
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
    /// Keeps the `?2` newest logins of binding `?1` (index `pending_logins_by_binding`).
    static let evictPendingOfBinding = """
        DELETE FROM pending_logins WHERE rowid IN (
            SELECT rowid FROM pending_logins WHERE binding_hash = ?1
            ORDER BY expires_at DESC, rowid DESC LIMIT -1 OFFSET ?2)
        """
    /// Keeps at most `?1` rows: the surplus closest to expiry goes (index `pending_logins_by_expires_at`;
    /// `COUNT(*)` counts b-tree cells page by page, so this stays cheap at the cap).
    static let evictPendingOverall = """
        DELETE FROM pending_logins WHERE rowid IN (
            SELECT rowid FROM pending_logins ORDER BY expires_at, rowid
            LIMIT max(0, (SELECT COUNT(*) FROM pending_logins) - ?1))
        """
    static let takePending = """
        DELETE FROM pending_logins WHERE state_hash = ? RETURNING binding_hash, sealed, created_at, expires_at
        """
    static let insertJTI = "INSERT INTO logout_jti (jti_hash, expires_at) VALUES (?, ?) ON CONFLICT (jti_hash) DO NOTHING"
    static let purgeSessions = "DELETE FROM sessions WHERE idle_expires_at <= ?1 OR expires_at <= ?1"
    static let purgePending = "DELETE FROM pending_logins WHERE expires_at <= ?"
    static let countPending = "SELECT COUNT(*) FROM pending_logins"
    static let purgeJTI = "DELETE FROM logout_jti WHERE expires_at <= ?"
    static let ping = "SELECT 1 FROM sessions LIMIT 1"
}
