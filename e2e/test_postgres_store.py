"""The gateway with its sessions in PostgreSQL (issue 12; SPEC: GATEHOUSE_DATABASE "also a libpq URI …
the password is never logged or printed"): login, /user, logout, back-channel logout, the admin
commands, /readyz through a PostgreSQL outage. A real PostgreSQL (Debian `postgresql`) is started by
pg_server.py in a temporary directory on a loopback port."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time

import pytest
import requests

from harness import jwt_claims, login
from pg_server import PASSWORD, USER, PgBouncer, PgServer


@pytest.fixture(scope="module")
def pg():
    server = PgServer(name="postgres-store")
    yield server
    server.destroy()


def db_name(uri: str) -> str:
    return uri.rsplit("/", 1)[1]


def pg_gateway(gateway_factory, pg, env: dict | None = None):
    uri = pg.create_database()
    gw = gateway_factory({"GATEHOUSE_DATABASE": uri, **(env or {})})
    return gw, uri


def count(pg, uri, table="sessions") -> int:
    return int(pg.psql(f"SELECT count(*) FROM {table}", database=db_name(uri)).strip())


def assert_no_password(*texts: str):
    for text in texts:
        assert PASSWORD not in text, "the PostgreSQL password was printed"


def wait_status(url: str, status: int, timeout: float = 30.0) -> requests.Response:
    deadline = time.monotonic() + timeout
    while True:
        r = requests.get(url, timeout=10)
        if r.status_code == status or time.monotonic() > deadline:
            return r
        time.sleep(0.1)


def test_login_user_logout_and_backchannel_logout_on_postgres(gateway_factory, provider, pg):
    # SPEC: GATEHOUSE_DATABASE also a libpq URI: sessions in PostgreSQL, shared by every instance.
    gw, uri = pg_gateway(gateway_factory, pg)
    n = len(provider.tokens())
    s = login(gw, provider, "alice")
    user = gw.get(s, "/user")
    assert user.status_code == 200, user.text[:300]
    assert user.json()["sub"] == "alice" if "sub" in user.json() else "alice" in user.text
    assert count(pg, uri) == 1, "the session lives in PostgreSQL"
    sealed = pg.psql("SELECT encode(sealed, 'escape') FROM sessions", database=db_name(uri))
    for t in provider.tokens()[n:]:
        assert t["token"] not in sealed, f"{t['kind']} stored in the clear"
    r = gw.post(s, "/logout")
    assert r.status_code == 302, r.text[:300]
    assert gw.get(s, "/user").status_code == 401
    assert count(pg, uri) == 0

    # Back-channel logout, and its jti replay cache, through PostgreSQL.
    n = len(provider.tokens())
    s = login(gw, provider, "bob")
    idt = next(t for t in provider.tokens()[n:] if t["kind"] == "id_token")
    token = provider.logout_token(sub="bob", sid=jwt_claims(idt["token"])["sid"])
    assert requests.post(gw.url + "/backchannel-logout", data={"logout_token": token}, timeout=10).status_code == 200
    assert gw.get(s, "/user").status_code == 401
    assert count(pg, uri, "logout_jti") == 1
    assert requests.post(gw.url + "/backchannel-logout", data={"logout_token": token}, timeout=10).status_code == 400
    assert_no_password(gw.proc.log_text(), requests.get(gw.url + "/metrics", timeout=10).text)


def test_sessions_list_revoke_purge_on_postgres(gateway_factory, provider, pg):
    # SPEC: gatehouse sessions list / revoke ID / revoke --sub SUB / purge, on either engine.
    gw, uri = pg_gateway(gateway_factory, pg)
    alice = login(gw, provider, "alice")
    bob = login(gw, provider, "bob")
    carol = login(gw, provider, "carol")
    cp = gw.cli("sessions", "list", "--json")
    assert cp.returncode == 0, cp
    listed = json.loads(cp.stdout)
    assert sorted(e["sub"] for e in listed) == ["alice", "bob", "carol"]
    assert_no_password(cp.stdout, cp.stderr)

    alice_id = next(e for e in listed if e["sub"] == "alice")
    prefix = next(v for k, v in alice_id.items() if k != "sub" and isinstance(v, str) and len(v) == 8)
    cp = gw.cli("sessions", "revoke", prefix)
    assert cp.returncode == 0, cp
    assert "revoked 1 session" in cp.stdout
    assert wait_status_user(gw, alice, 401)
    cp = gw.cli("sessions", "revoke", "--sub", "bob")
    assert cp.returncode == 0, cp
    assert wait_status_user(gw, bob, 401)
    assert gw.get(carol, "/user").status_code == 200

    # An expired session, pending login and jti, planted directly: purge removes exactly those.
    db = db_name(uri)
    pg.psql("INSERT INTO sessions (id_hash, sub, created_at, last_seen_at, idle_expires_at, expires_at, sealed) "
            "VALUES (repeat('e', 64), 'old', 1, 1, 2, 3, '\\x00')", database=db)
    pg.psql("INSERT INTO pending_logins (state_hash, binding_hash, sealed, created_at, expires_at) "
            "VALUES ('s', 'b', '\\x00', 1, 2)", database=db)
    pg.psql("INSERT INTO logout_jti (jti_hash, expires_at) VALUES ('j', 2)", database=db)
    cp = gw.cli("sessions", "purge")
    assert cp.returncode == 0, cp
    assert cp.stdout.strip() == "purged 1 sessions, 1 pending logins, 1 logout tokens", cp.stdout
    assert gw.get(carol, "/user").status_code == 200


def wait_status_user(gw, sess, status: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gw.get(sess, "/user").status_code == status:
            return True
        time.sleep(0.1)
    return False


def test_migrate_and_check_on_postgres_never_print_the_password(gateway_factory, provider, pg):
    # SPEC: the password is never logged or printed (check, migrate, errors, /metrics).
    gw, uri = pg_gateway(gateway_factory, pg)
    fresh = pg.create_database()
    cp = gw.cli("migrate", env={"GATEHOUSE_DATABASE": fresh})
    assert cp.returncode == 0, cp
    assert cp.stdout.strip() == ("applied: 1 initial, 2 pending_login_count, 3 session_provider, 4 session_handle, "
                                 "5 session_end_notify, 6 tls_certificates"), cp.stdout
    again = gw.cli("migrate", env={"GATEHOUSE_DATABASE": fresh})
    assert again.returncode == 0 and again.stdout.strip() == "database is up to date", again
    check = gw.cli("check")
    assert check.returncode == 0, check
    shown = f"postgresql://gatehouse:***@127.0.0.1:{pg.port}/{db_name(uri)}"
    assert f"ok   database PostgreSQL {shown}" in check.stdout, check.stdout
    assert_no_password(cp.stdout, cp.stderr, again.stdout, again.stderr, check.stdout, check.stderr)

    # Unreachable database: every command fails with 69 and a reason, never with the password.
    down = f"postgresql://gatehouse:{PASSWORD}@127.0.0.1:1/gatehouse?connect_timeout=2"
    for args in (["migrate"], ["sessions", "list"], ["sessions", "purge"], ["check"]):
        bad = gw.cli(*args, env={"GATEHOUSE_DATABASE": down})
        assert bad.returncode == 69, (args, bad)
        assert "postgresql://gatehouse:***@127.0.0.1:1/gatehouse" in bad.stdout + bad.stderr, bad
        assert "Connection refused" in bad.stdout + bad.stderr, bad
        assert_no_password(bad.stdout, bad.stderr)
    wrong = gw.cli("sessions", "list", env={"GATEHOUSE_DATABASE": pg.uri(db_name(uri), password="n0t-" + PASSWORD)})
    assert wrong.returncode == 69, wrong
    assert_no_password(wrong.stdout, wrong.stderr)
    assert "n0t-" not in wrong.stdout + wrong.stderr

    # A database newer than the binary is refused (exit 64), as with SQLite.
    pg.psql("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)", database=db_name(fresh))
    newer = gw.cli("migrate", env={"GATEHOUSE_DATABASE": fresh})
    assert newer.returncode == 64, newer
    assert "newer" in newer.stderr

    # `serve` that cannot reach its database stops with 69, naming the redacted target.
    gw2 = gateway_factory({"GATEHOUSE_DATABASE": down}, start=False)
    gw2.start(wait_ready=False)
    rc = gw2.proc.wait(timeout=60)
    assert rc == 69
    assert "postgresql://gatehouse:***@127.0.0.1:1/" in gw2.proc.log_text()
    assert_no_password(gw2.proc.log_text(), gw.proc.log_text(), requests.get(gw.url + "/metrics", timeout=10).text)


def test_readyz_reports_postgres_outage_and_recovers(gateway_factory, provider):
    # SPEC (issue 12): a PostgreSQL that cannot be reached → 503 with a reason; the gateway keeps
    # running and recovers when it comes back.
    own = PgServer(name="postgres-outage")
    try:
        uri = own.create_database()
        gw = gateway_factory({"GATEHOUSE_DATABASE": uri})
        s = login(gw, provider, "alice")
        assert requests.get(gw.url + "/readyz", timeout=10).status_code == 200
        own.stop_server()
        r = wait_status(gw.url + "/readyz", 503)
        assert r.status_code == 503, r.text
        assert r.json()["error"] == "database_unavailable"
        assert requests.get(gw.url + "/healthz", timeout=10).status_code == 200, "liveness is not readiness"
        assert gw.proc.alive()
        own.start_server()
        r = wait_status(gw.url + "/readyz", 200)
        assert r.status_code == 200, r.text
        assert gw.get(s, "/user").status_code == 200, "the session survived the outage"
        assert_no_password(gw.proc.log_text())
    finally:
        own.destroy()


def test_gateway_through_pgbouncer_in_transaction_mode(gateway_factory, provider, pg):
    # Issue 12: works through PgBouncer in transaction mode. One server connection serves every
    # client transaction, so state left on it by one transaction would reach the next.
    bouncer = PgBouncer(pg, name="pgbouncer-store")
    try:
        db = db_name(pg.create_database())
        gw = gateway_factory({"GATEHOUSE_DATABASE": bouncer.uri(db)})
        failures: list[str] = []

        def browser(i: int):
            try:
                s = login(gw, provider, f"user{i}")
                for _ in range(3):
                    r = gw.get(s, "/user")
                    if r.status_code != 200:
                        failures.append(f"user{i}: /user {r.status_code}")
                if gw.post(s, "/logout").status_code != 302:
                    failures.append(f"user{i}: logout")
            except Exception as e:  # noqa: BLE001 - reported below
                failures.append(f"user{i}: {e!r}")

        threads = [threading.Thread(target=browser, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not failures, failures
        keep = login(gw, provider, "alice")
        for args in (["migrate"], ["sessions", "list"], ["sessions", "purge"]):
            cp = gw.cli(*args)
            assert cp.returncode == 0, (args, cp)
        assert "alice" in gw.cli("sessions", "list").stdout
        assert gw.get(keep, "/user").status_code == 200

        # The one shared server connection carries nothing from the gateway's transactions.
        via = subprocess.run(
            [str(pg.bin / "psql"), "-X", "-A", "-t", "-h", "127.0.0.1", "-p", str(bouncer.port), "-U", USER, "-d", db,
             "-c", "SELECT (SELECT count(*) FROM pg_prepared_statements) || ' ' || current_setting('statement_timeout')"],
            capture_output=True, text=True, timeout=30, env={**os.environ, "PGPASSWORD": PASSWORD})
        assert via.returncode == 0, via.stderr
        assert via.stdout.strip() == "0 0", "a prepared statement or a session SET outlived its transaction"
        assert pg.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'", database=db).strip() == "0"
        assert_no_password(gw.proc.log_text())
    finally:
        bouncer.destroy()
