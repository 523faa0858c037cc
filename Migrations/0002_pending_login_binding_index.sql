-- 0002_pending_login_binding_index: pending logins are capped per browser binding (and in total);
-- the per-binding eviction that runs with every insert reads this index instead of the table.
CREATE INDEX pending_logins_by_binding ON pending_logins (binding_hash, expires_at);
