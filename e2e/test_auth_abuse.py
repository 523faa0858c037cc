"""Abuse of the unauthenticated and cookie-facing surface (issue 10: items 6, 7 and 10).

Black-box: the gateway binary, the third-party provider, raw sockets and the SQLite file
read directly (as an operator would with `sqlite3`).
"""

from __future__ import annotations

import base64
import json
import secrets
import sqlite3
import time

import pytest
import requests

from harness import RawConn, finish_callback, login, provider_authorize, run_cli, start_login

# docs/security.md: pending logins are capped per browser and in total.
PER_BROWSER = 10
TOTAL = 10_000


@pytest.fixture(autouse=True)
def _binary():
    from conftest import _require_binary
    _require_binary()


def pending_rows(gw) -> int:
    con = sqlite3.connect(f"file:{gw.db}?mode=ro", uri=True, timeout=10)
    try:
        return con.execute("SELECT COUNT(*) FROM pending_logins").fetchone()[0]
    finally:
        con.close()


def planted() -> str:
    """A well-formed session cookie value that names no session (what a sibling subdomain plants)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


def flood_login(port: int, count: int, cookie: str | None = None) -> None:
    """`count` GET /login on one keep-alive connection, each from a fresh browser unless `cookie`."""
    extra = f"Cookie: {cookie}\r\n" if cookie else ""
    request = f"GET /login HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}\r\n".encode()
    with RawConn(port, timeout=30) as c:
        sent = 0
        while sent < count:
            batch = min(50, count - sent)
            c.send(request * batch)
            for _ in range(batch):
                assert c.read_response().status == 302
            sent += batch


# --------------------------------------------------------------------------- item 6


def test_one_browser_keeps_at_most_ten_pending_logins_oldest_evicted(gateway_factory, provider):
    gw = gateway_factory()
    sess = requests.Session()
    starts = [start_login(sess, gw) for _ in range(PER_BROWSER + 5)]
    assert pending_rows(gw) == PER_BROWSER
    # The oldest tab's login was evicted: its callback fails like an expired one, no session.
    oldest = provider_authorize(sess, starts[0][1])
    r = finish_callback(sess, oldest)
    assert r.status_code == 400
    assert gw.cookie_name not in sess.cookies
    # The newest still completes.
    newest = provider_authorize(sess, starts[-1][1])
    r = finish_callback(sess, newest)
    assert r.status_code == 302
    assert sess.cookies.get(gw.cookie_name)


def test_login_flood_from_fresh_browsers_never_grows_past_the_total_cap(gateway_factory):
    gw = gateway_factory()
    flood_login(gw.port, TOTAL + 60)
    assert pending_rows(gw) == TOTAL
    # And the gateway still serves logins afterwards.
    assert requests.get(gw.url + "/login", allow_redirects=False, timeout=10).status_code == 302
    assert pending_rows(gw) == TOTAL


def test_active_sessions_gauge_follows_login_and_logout(gateway_factory, provider):
    gw = gateway_factory()

    def gauge_is(n: int) -> bool:
        for _ in range(300):
            text = requests.get(gw.url + "/metrics", timeout=5).text
            if f"\ngatehouse_active_sessions {n}\n" in text:
                return True
            time.sleep(0.01)
        return False

    assert gauge_is(0)
    s = login(gw, provider)
    assert gauge_is(1)
    assert gw.post(s, "/logout").status_code == 302
    assert gauge_is(0)


# --------------------------------------------------------------------------- item 7


def test_planted_cookie_of_the_same_name_does_not_hide_the_session(gateway_factory, provider):
    gw = gateway_factory()
    real = login(gw, provider).cookies.get(gw.cookie_name)
    name = gw.cookie_name
    for cookie in (f"{name}={planted()}; {name}={real}",
                   f"{name}={planted()}; other=1; {name}={planted()}; {name}={real}"):
        r = requests.get(gw.url + "/user", headers={"X-CSRF": "1", "Cookie": cookie}, timeout=10)
        assert r.status_code == 200, cookie
        assert r.json()["sub"] == "alice"
        api = requests.get(gw.url + "/api/echo", headers={"X-CSRF": "1", "Cookie": cookie}, timeout=10)
        assert api.status_code == 200


@pytest.mark.parametrize("env, variable", [
    ({"GATEHOUSE_PUBLIC_URL": "https://app.example.com", "GATEHOUSE_COOKIE_NAME": "sid"}, "GATEHOUSE_COOKIE_NAME"),
    ({"GATEHOUSE_PUBLIC_URL": "https://app.example.com", "GATEHOUSE_COOKIE_NAME": "__Secure-sid"},
     "GATEHOUSE_COOKIE_NAME"),
    ({"GATEHOUSE_CSRF_HEADER": "Content-Language"}, "GATEHOUSE_CSRF_HEADER"),
    ({"GATEHOUSE_CSRF_HEADER": "range"}, "GATEHOUSE_CSRF_HEADER"),
    ({"GATEHOUSE_CSRF_HEADER": "Sec-Token"}, "GATEHOUSE_CSRF_HEADER"),
    ({"GATEHOUSE_CSRF_HEADER": "Proxy-Token"}, "GATEHOUSE_CSRF_HEADER"),
    ({"GATEHOUSE_CSRF_HEADER": "Origin"}, "GATEHOUSE_CSRF_HEADER"),
    ({"GATEHOUSE_PUBLIC_URL": "https://app.example.com", "GATEHOUSE_HSTS": "max-age=1y"}, "GATEHOUSE_HSTS"),
    ({"GATEHOUSE_HSTS": "includeSubDomains"}, "GATEHOUSE_HSTS"),
])
def test_unsafe_cookie_csrf_and_hsts_settings_stop_serve_with_64(gateway_factory, env, variable):
    gw = gateway_factory(env, start=False)
    cp = run_cli(["serve"], env=gw.env, timeout=30)
    assert cp.returncode == 64, cp.stderr
    assert variable in cp.stderr


# --------------------------------------------------------------------------- item 10


def test_hsts_on_every_answer_over_https_and_never_on_http(gateway_factory):
    gw = gateway_factory({"GATEHOUSE_PUBLIC_URL": "https://app.example.com"})
    for method, path, csrf in [("GET", "/healthz", False), ("GET", "/", False), ("GET", "/user", True),
                               ("GET", "/nope.png", False), ("GET", "/login", False), ("GET", "/metrics", False),
                               ("POST", "/logout", True), ("GET", "/api/echo", True)]:
        r = gw.request(requests.Session(), method, path, csrf=csrf)
        assert r.headers.get("Strict-Transport-Security") == "max-age=31536000", (method, path)
    with RawConn(gw.port) as c:  # an answer the HTTP server writes itself
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n")
        r = c.read_response()
        assert r.status == 400
        assert r.header("Strict-Transport-Security") == "max-age=31536000"

    plain = gateway_factory({"GATEHOUSE_HSTS": "max-age=60"})
    for path in ("/healthz", "/", "/user"):
        assert "Strict-Transport-Security" not in requests.get(plain.url + path, timeout=10).headers


def test_hsts_configured_and_off(gateway_factory):
    gw = gateway_factory({"GATEHOUSE_PUBLIC_URL": "https://app.example.com",
                          "GATEHOUSE_HSTS": "max-age=63072000; includeSubDomains; preload"})
    assert requests.get(gw.url + "/healthz", timeout=10).headers["Strict-Transport-Security"] \
        == "max-age=63072000; includeSubDomains; preload"
    off = gateway_factory({"GATEHOUSE_PUBLIC_URL": "https://app.example.com", "GATEHOUSE_HSTS": "off"})
    assert "Strict-Transport-Security" not in requests.get(off.url + "/healthz", timeout=10).headers


def test_sessions_list_escapes_terminal_control_in_sub(gateway_factory, provider):
    gw = gateway_factory()
    login(gw, provider)  # a real session beside the hostile one
    hostile = "\u001b[2J\u001b]0;owned\u0007\u009b31m\u202eevil\ttab\nline"
    now = int(time.time())
    con = sqlite3.connect(gw.db, timeout=10)
    with con:
        con.execute("INSERT INTO sessions (id_hash, sub, sid, created_at, last_seen_at, idle_expires_at, "
                    "expires_at, sealed, access_expires_at) VALUES (?, ?, NULL, ?, ?, ?, ?, X'00', NULL)",
                    ("ab" * 32, hostile, now, now, now + 3600, now + 86400))
    con.close()

    table = gw.cli("sessions", "list")
    assert table.returncode == 0, table.stderr
    for ch in ("\u001b", "\u0007", "\u009b", "\u202e", "\r"):
        assert ch not in table.stdout
    lines = table.stdout.strip("\n").split("\n")
    assert len(lines) == 3  # header, alice, the hostile one: the newline did not add a row
    assert all(len(line.split("\t")) == 7 for line in lines)
    assert "\\u{1b}[2J" in table.stdout

    listed = gw.cli("sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    for ch in ("\u001b", "\u0007", "\u009b", "\u202e", "\t", "\n"):
        assert ch not in listed.stdout.strip("\n")
    subs = {row["sub"] for row in json.loads(listed.stdout)}
    assert subs == {"alice", hostile}
