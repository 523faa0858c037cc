"""API routes against a hostile upstream (security review, issue 10): tunnels, replays, forwarded
headers, ambiguous framing. SPEC: API routes (GATEHOUSE_ROUTES).

The upstream is e2e/hostile_upstream.py: raw sockets, answers written byte for byte, every request
counted. Requests that must share one upstream pool go over one keep-alive browser connection
(one connection stays on one event loop, and each loop has its own pool).
"""

from __future__ import annotations

import json
import os

import pytest
import requests

import harness
from harness import E2E_DIR, PYTHON, Proc, RawConn, login, wait_for_port_file


class Hostile:
    def __init__(self, work):
        port_file = work / "hostile.port"
        self.proc = Proc("hostile-upstream", [PYTHON, str(E2E_DIR / "hostile_upstream.py"),
                                              "--port-file", str(port_file)],
                         env={**os.environ, "PYTHONUNBUFFERED": "1"}).start()
        self.port = wait_for_port_file(port_file, self.proc)
        self.url = f"http://127.0.0.1:{self.port}"

    def stats(self) -> dict:
        return requests.get(self.url + "/_stats", timeout=5).json()

    def requests_to(self, name: str) -> list[dict]:
        return [r for r in self.stats()["requests"] if r["path"].endswith("/" + name)]

    def reset(self):
        requests.post(self.url + "/_reset", timeout=5)

    def stop(self):
        self.proc.stop()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    h = Hostile(tmp_path_factory.mktemp("hostile"))
    yield h
    h.stop()


@pytest.fixture(scope="module")
def gw(provider, hostile, tmp_path_factory):
    harness_gw = harness.Gateway(provider, None, tmp_path_factory.mktemp("gw-abuse"),
                                 env={"GATEHOUSE_ROUTES": f"/api={hostile.url}"}, name="gateway-proxy-abuse")
    yield harness_gw
    harness_gw.stop()


@pytest.fixture(scope="module")
def cookie(gw, provider):
    return login(gw, provider).login_result.cookie


@pytest.fixture(autouse=True)
def _fresh_stats(hostile):
    hostile.reset()


def request(gw, cookie, method, target, headers=(), body=b"", csrf=True) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", f"Host: 127.0.0.1:{gw.port}", f"Cookie: {gw.cookie_name}={cookie}"]
    if csrf:
        lines.append("X-CSRF: 1")
    lines += [f"{k}: {v}" for k, v in headers]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def exchange(conn: RawConn, gw, cookie, method, target, **kw):
    conn.send(request(gw, cookie, method, target, **kw))
    return conn.read_response(method=method)


def error_code(resp) -> str | None:
    try:
        return json.loads(resp.body).get("error")
    except ValueError:
        return None


# --- item 2: CONNECT / TRACE / TRACK never reach the upstream ------------------------------------

@pytest.mark.parametrize("method", ["CONNECT", "TRACE", "TRACK", "connect"])
def test_tunnel_and_echo_methods_are_405_without_upstream(gw, cookie, hostile, method):
    with RawConn(gw.port, timeout=15) as c:
        resp = exchange(c, gw, cookie, method, "/api/tunnel")
        assert resp.status == 405
        assert error_code(resp) == "method_not_allowed"
        assert json.loads(resp.body)["error_description"]
        allow = resp.header("Allow") or ""
        assert "GET" in allow and "CONNECT" not in allow and "TRACE" not in allow
        # The browser's connection stays usable: the next call is answered normally.
        after = exchange(c, gw, cookie, "GET", "/api/echo")
        assert after.status == 200 and json.loads(after.body)["method"] == "GET"
    assert hostile.requests_to("tunnel") == []


def test_connect_tunnel_bytes_never_answer_another_request(gw, cookie, hostile):
    """The reported mix-up: CONNECT was forwarded, the 2xx treated as bodiless and the connection
    pooled, so the upstream's tunnel bytes answered the next request on that pool."""
    with RawConn(gw.port, timeout=15) as c:
        exchange(c, gw, cookie, "CONNECT", "/api/tunnel")
        for _ in range(3):
            resp = exchange(c, gw, cookie, "GET", "/api/echo")
            assert b"TUNNEL-SECRET" not in resp.body
            assert resp.status == 200


def test_unsolicited_101_is_502_and_the_connection_is_not_reused(gw, cookie, hostile):
    with RawConn(gw.port, timeout=15) as c:
        resp = exchange(c, gw, cookie, "GET", "/api/switch")
        assert resp.status == 502
        assert error_code(resp) == "upstream_unreachable"
        for _ in range(3):
            after = exchange(c, gw, cookie, "GET", "/api/echo")
            assert b"TUNNEL-SECRET" not in after.body
            assert after.status == 200


def test_interim_1xx_answers_are_skipped(gw, cookie):
    with RawConn(gw.port, timeout=15) as c:
        resp = exchange(c, gw, cookie, "GET", "/api/interim")
        assert resp.status == 200
        assert resp.body == b"final"


# --- item 3: non-idempotent requests are never replayed -------------------------------------------

@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_empty_unsafe_request_is_not_replayed(gw, cookie, hostile, method):
    with RawConn(gw.port, timeout=15) as c:
        # Leaves one idle keep-alive upstream connection in this loop's pool.
        assert exchange(c, gw, cookie, "GET", "/api/echo").status == 200
        # The upstream reads the request on that reused connection, then closes it unanswered.
        resp = exchange(c, gw, cookie, method, "/api/drop-first")
        assert resp.status == 502
        assert error_code(resp) == "upstream_unreachable"
    seen = [r for r in hostile.requests_to("drop-first") if r["method"] == method]
    assert len(seen) == 1, f"the upstream executed {method} {len(seen)} times: {seen}"


def test_safe_request_is_retried_once_on_a_new_connection(gw, cookie, hostile):
    with RawConn(gw.port, timeout=15) as c:
        assert exchange(c, gw, cookie, "GET", "/api/echo").status == 200
        resp = exchange(c, gw, cookie, "GET", "/api/drop-first")
        assert resp.status == 200 and resp.body == b"done"
    seen = hostile.requests_to("drop-first")
    assert [r["reused"] for r in seen] == [True, False]


# --- item 5: forwarding headers come from the configuration, not the browser ----------------------

FORGED = [("X-Real-IP", "198.51.100.7"), ("True-Client-IP", "198.51.100.8"), ("X-Forwarded-Port", "8443"),
          ("X-Forwarded-Prefix", "/admin"), ("X-Original-URL", "/admin/delete"), ("X-Rewrite-URL", "/admin/delete"),
          ("Forwarded", "for=198.51.100.9;host=evil.example;proto=https"), ("X-Forwarded-Host", "evil.example"),
          ("X-Forwarded-Proto", "https"), ("X-Forwarded-For", "198.51.100.10")]


def echoed_headers(resp) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, value in json.loads(resp.body)["headers"]:
        out.setdefault(name.lower(), []).append(value)
    return out


def test_forwarding_headers_from_an_untrusted_browser_are_replaced_or_removed(gw, cookie):
    with RawConn(gw.port, timeout=15) as c:
        c.send(request(gw, cookie, "GET", "/api/echo", headers=FORGED).replace(
            f"Host: 127.0.0.1:{gw.port}".encode(), b"Host: evil.example:1234"))
        resp = c.read_response()
    assert resp.status == 200
    seen = echoed_headers(resp)
    for name in ["x-real-ip", "true-client-ip", "x-forwarded-port", "x-forwarded-prefix", "x-original-url",
                 "x-rewrite-url", "forwarded"]:
        assert name not in seen, f"{name} reached the upstream: {seen[name]}"
    # Host and scheme of GATEHOUSE_PUBLIC_URL, never the browser's Host or claims.
    assert seen["x-forwarded-host"] == [f"127.0.0.1:{gw.port}"]
    assert seen["x-forwarded-proto"] == ["http"]
    assert seen["x-forwarded-for"] == ["127.0.0.1"]


def test_forwarding_headers_from_a_trusted_proxy_pass_unchanged(provider, hostile, tmp_path):
    trusted = harness.Gateway(provider, None, tmp_path / "gw-trusted", name="gateway-proxy-abuse-trusted",
                              env={"GATEHOUSE_ROUTES": f"/api={hostile.url}",
                                   "GATEHOUSE_TRUSTED_PROXIES": "127.0.0.0/8"})
    try:
        cookie = login(trusted, provider).login_result.cookie
        with RawConn(trusted.port, timeout=15) as c:
            c.send(request(trusted, cookie, "GET", "/api/echo", headers=FORGED).replace(
                f"Host: 127.0.0.1:{trusted.port}".encode(), b"Host: evil.example:1234"))
            resp = c.read_response()
        assert resp.status == 200
        seen = echoed_headers(resp)
        for name, value in FORGED:
            if name.lower() in ("x-forwarded-host", "x-forwarded-proto", "x-forwarded-for"):
                continue
            assert seen.get(name.lower()) == [value], f"{name}: {seen.get(name.lower())}"
        # Host and scheme are still the gateway's own; X-Forwarded-For is kept and appended to.
        assert seen["x-forwarded-host"] == [f"127.0.0.1:{trusted.port}"]
        assert seen["x-forwarded-proto"] == ["http"]
        assert seen["x-forwarded-for"] == ["198.51.100.10, 127.0.0.1"]
    finally:
        trusted.stop()


# --- ambiguous framing from the upstream (items 2 and 4, and what careful proxies refuse) ---------

@pytest.mark.parametrize("name", ["cl-conflict", "cl-list", "cl-sign", "cl-te"])
def test_ambiguous_length_is_502_before_any_byte(gw, cookie, name):
    with RawConn(gw.port, timeout=15) as c:
        resp = exchange(c, gw, cookie, "GET", f"/api/{name}")
        assert resp.status == 502
        assert error_code(resp) == "upstream_unreachable"
        assert b"hello" not in resp.body
        after = exchange(c, gw, cookie, "GET", "/api/echo")
        assert after.status == 200


def test_malformed_chunk_cuts_the_browser_connection(gw, cookie):
    with RawConn(gw.port, timeout=15) as c:
        c.send(request(gw, cookie, "GET", "/api/bad-chunk"))
        head = c.read_response(head_only=True)
        assert head.status == 200
        # What follows the head is the first chunk, then the connection ends: never an answer
        # made of the bytes after the broken chunk size.
        assert c.is_closed(wait=10)
        assert b"SMUGGLED" not in c.buf


def test_bodyless_answers_keep_the_browser_connection_in_step(gw, cookie):
    with RawConn(gw.port, timeout=15) as c:
        head = exchange(c, gw, cookie, "HEAD", "/api/head-length")
        assert head.status == 200 and head.header("Content-Length") == "42" and head.body == b""
        empty = exchange(c, gw, cookie, "GET", "/api/no-content")
        assert empty.status == 204
        longer = exchange(c, gw, cookie, "GET", "/api/longer")
        assert longer.status == 200 and longer.body == b"hello"
        for _ in range(3):
            after = exchange(c, gw, cookie, "GET", "/api/echo")
            assert after.status == 200, after
            assert b"SMUGGLED" not in after.body
