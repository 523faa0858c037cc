-- 0004_session_handle (PostgreSQL): "my sessions" (GET /sessions, POST /sessions/revoke). Each
-- session gets a random public handle, never the cookie nor its hash, by which its user may list
-- and end it, and the browser's User-Agent as recorded at login. Additive: sessions from before get
-- a handle now (and no user agent).
ALTER TABLE sessions ADD COLUMN handle TEXT;
ALTER TABLE sessions ADD COLUMN user_agent TEXT;
UPDATE sessions SET handle = md5(random()::text || clock_timestamp()::text || id_hash) WHERE handle IS NULL;
CREATE UNIQUE INDEX sessions_by_handle ON sessions (handle);
