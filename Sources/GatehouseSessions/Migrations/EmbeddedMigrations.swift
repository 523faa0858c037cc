// Generated from Migrations/*.sql — the binary must find its schema wherever it runs, so the
// files are embedded here verbatim. `EmbeddedMigrationsTests` fails if a copy differs from its
// file by a single byte. Add a new file and a new entry; never edit a shipped one.

/// The migrations this binary knows, in order.
public enum EmbeddedMigrations {
    /// Every migration of `Migrations/`, oldest first.
    public static let all: [Migration] = [
        Migration(version: 1, name: "initial", sql: #"""
-- 0001_initial: server-side sessions, pending logins, back-channel logout replay protection.
-- Shipped migrations are never edited: change the schema with a new numbered file.

-- One row per browser session. The cookie value itself is never stored: id_hash is the hex
-- SHA-256 of it. Tokens and ID token claims live only in `sealed` (AES-GCM, associated data =
-- id_hash, so a blob copied to another row does not open).
CREATE TABLE sessions (
    id_hash             TEXT    NOT NULL PRIMARY KEY,
    sub                 TEXT    NOT NULL,
    sid                 TEXT,
    created_at          INTEGER NOT NULL,
    last_seen_at        INTEGER NOT NULL,
    idle_expires_at     INTEGER NOT NULL,
    expires_at          INTEGER NOT NULL,
    sealed              BLOB    NOT NULL,
    access_expires_at   INTEGER,
    version             INTEGER NOT NULL DEFAULT 1,
    refresh_lease_owner TEXT,
    refresh_lease_until INTEGER
) STRICT;

CREATE INDEX sessions_by_sub ON sessions (sub);
CREATE INDEX sessions_by_sid ON sessions (sid) WHERE sid IS NOT NULL;
CREATE INDEX sessions_by_expires_at ON sessions (expires_at);

-- Authorization requests in flight, keyed by the hash of `state`; usable once.
-- binding_hash ties the login to the browser that started it (login-binding cookie).
-- `sealed` holds code_verifier, nonce and return_to (associated data = state_hash).
CREATE TABLE pending_logins (
    state_hash   TEXT    NOT NULL PRIMARY KEY,
    binding_hash TEXT    NOT NULL,
    sealed       BLOB    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX pending_logins_by_expires_at ON pending_logins (expires_at);

-- `jti` values of accepted back-channel logout tokens (hashed), kept until the token could no
-- longer be accepted, so a replayed logout token is refused.
CREATE TABLE logout_jti (
    jti_hash   TEXT    NOT NULL PRIMARY KEY,
    expires_at INTEGER NOT NULL
) STRICT;

CREATE INDEX logout_jti_by_expires_at ON logout_jti (expires_at);

"""#),
        Migration(version: 2, name: "pending_login_binding_index", sql: #"""
-- 0002_pending_login_binding_index: pending logins are capped per browser binding (and in total);
-- the per-binding eviction that runs with every insert reads this index instead of the table.
CREATE INDEX pending_logins_by_binding ON pending_logins (binding_hash, expires_at);

"""#),
    ]
}
