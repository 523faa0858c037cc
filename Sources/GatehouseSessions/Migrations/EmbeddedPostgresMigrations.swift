// Generated from Migrations/postgres/*.sql, embedded verbatim like `EmbeddedMigrations.all`;
// `EmbeddedMigrationsTests` fails if a copy differs from its file by a single byte. Add a new file
// and a new entry; never edit a shipped one.

extension EmbeddedMigrations {
    /// Every migration of `Migrations/postgres/`, oldest first.
    public static let postgres: [Migration] = [
        Migration(version: 1, name: "initial", sql: #"""
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

"""#),
        Migration(version: 2, name: "pending_login_count", sql: #"""
-- 0002_pending_login_count (PostgreSQL): the number of pending logins, kept by statement triggers, so
-- that enforcing the overall cap costs O(surplus) per /login instead of walking every pending login
-- (an OFFSET over 10,000 rows held one PostgreSQL to ~45 logins/s at the cap: docs/scaling.md).
-- The UPDATE of this one row also serializes the writers of pending_logins for the rest of their
-- transaction (a row lock, released by COMMIT), which keeps both caps exact across instances.
CREATE TABLE pending_login_count (
    singleton BOOLEAN NOT NULL PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    n         BIGINT  NOT NULL
);

INSERT INTO pending_login_count (n) SELECT count(*) FROM pending_logins;

CREATE FUNCTION pending_login_count_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE pending_login_count SET n = n + (SELECT count(*) FROM added);
    RETURN NULL;
END
$$;

CREATE FUNCTION pending_login_count_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE pending_login_count SET n = n - (SELECT count(*) FROM removed);
    RETURN NULL;
END
$$;

CREATE FUNCTION pending_login_count_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE pending_login_count SET n = 0;
    RETURN NULL;
END
$$;

CREATE TRIGGER pending_logins_count_insert AFTER INSERT ON pending_logins
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION pending_login_count_added();
CREATE TRIGGER pending_logins_count_delete AFTER DELETE ON pending_logins
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION pending_login_count_removed();
CREATE TRIGGER pending_logins_count_truncate AFTER TRUNCATE ON pending_logins
    FOR EACH STATEMENT EXECUTE FUNCTION pending_login_count_truncated();

"""#),
    ]
}
