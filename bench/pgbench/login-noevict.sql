-- As login-nolock.sql without the overall eviction (OFFSET <total cap>).
\set b random(1, 1000000)
\set r random(1, 1000000000)
BEGIN;
INSERT INTO pending_logins (state_hash, binding_hash, sealed, created_at, expires_at) VALUES (md5(random()::text) || md5(random()::text), md5(:b::text), decode(repeat('ab', 180), 'hex'), 1, 2000000000);
DELETE FROM pending_logins WHERE state_hash IN (SELECT state_hash FROM pending_logins WHERE binding_hash = md5(:b::text) ORDER BY expires_at DESC, seq DESC OFFSET 10);
COMMIT;
DELETE FROM pending_logins WHERE state_hash = md5(:r::text) || md5(:b::text);
INSERT INTO sessions (id_hash, sub, sid, created_at, last_seen_at, idle_expires_at, expires_at, sealed, access_expires_at) VALUES (md5(random()::text) || md5(random()::text), 'user' || :b, md5(:b::text), 1, 1, 2000000000, 2000000000, decode(repeat('ab', 1465), 'hex'), 2000000000);
