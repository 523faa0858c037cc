-- 0003_session_provider: the provider a session signed in with (GATEHOUSE_PROVIDERS). Additive:
-- sessions from before belong to the one provider there was, `default`. Refresh, logout,
-- back-channel logout and `sessions revoke --sub` select by it; the existing sub and sid indexes
-- still narrow those look-ups to a user's few rows.
ALTER TABLE sessions ADD COLUMN provider TEXT NOT NULL DEFAULT 'default';
