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
