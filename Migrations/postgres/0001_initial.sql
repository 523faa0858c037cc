-- 0001_initial (PostgreSQL): the schema of Migrations/0001 and 0002 for SQLite, in PostgreSQL types.
-- Shipped migrations are never edited: change the schema with a new numbered file.

-- One row per browser session. The cookie value itself is never stored: id_hash is the hex
-- SHA-256 of it. Tokens and ID token claims live only in `sealed` (AES-GCM, associated data =
-- id_hash, so a blob copied to another row does not open). id_hash compares bytewise (COLLATE "C"),
-- as in SQLite, so `sessions revoke PREFIX` is a range scan of the primary key.
CREATE TABLE sessions (
    id_hash             TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    sub                 TEXT    NOT NULL,
    sid                 TEXT,
    created_at          BIGINT  NOT NULL,
    last_seen_at        BIGINT  NOT NULL,
    idle_expires_at     BIGINT  NOT NULL,
    expires_at          BIGINT  NOT NULL,
    sealed              BYTEA   NOT NULL,
    access_expires_at   BIGINT,
    version             BIGINT  NOT NULL DEFAULT 1,
    refresh_lease_owner TEXT,
    refresh_lease_until BIGINT
);

CREATE INDEX sessions_by_sub ON sessions (sub);
CREATE INDEX sessions_by_sid ON sessions (sid) WHERE sid IS NOT NULL;
CREATE INDEX sessions_by_expires_at ON sessions (expires_at);

-- Authorization requests in flight, keyed by the hash of `state`; usable once.
-- binding_hash ties the login to the browser that started it (login-binding cookie).
-- `sealed` holds code_verifier, nonce and return_to (associated data = state_hash).
-- `seq` is the insertion order, the tie-break of eviction (SQLite's rowid).
CREATE TABLE pending_logins (
    state_hash   TEXT    NOT NULL PRIMARY KEY,
    binding_hash TEXT    NOT NULL,
    sealed       BYTEA   NOT NULL,
    created_at   BIGINT  NOT NULL,
    expires_at   BIGINT  NOT NULL,
    seq          BIGINT  GENERATED ALWAYS AS IDENTITY
);

CREATE INDEX pending_logins_by_expires_at ON pending_logins (expires_at, seq);
CREATE INDEX pending_logins_by_binding ON pending_logins (binding_hash, expires_at, seq);

-- `jti` values of accepted back-channel logout tokens (hashed), kept until the token could no
-- longer be accepted, so a replayed logout token is refused by every instance.
CREATE TABLE logout_jti (
    jti_hash   TEXT    NOT NULL PRIMARY KEY,
    expires_at BIGINT  NOT NULL
);

CREATE INDEX logout_jti_by_expires_at ON logout_jti (expires_at);
