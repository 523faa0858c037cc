-- 0005_session_end_notify (PostgreSQL only): every deleted session is announced on channel
-- `gatehouse_session_ended` (payload: its id_hash) when the deleting transaction commits, whoever
-- deleted it (an instance's logout, revocation or back-channel logout, `gatehouse sessions revoke`).
-- Each instance LISTENs and drops the session from its cache at once, so a session ended on one
-- instance is refused by all, not half a second later (SPEC "Sessions the SPA controls").
CREATE OR REPLACE FUNCTION gatehouse_session_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('gatehouse_session_ended', OLD.id_hash);
    RETURN OLD;
END;
$$;
CREATE TRIGGER sessions_announce_end AFTER DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION gatehouse_session_ended();
