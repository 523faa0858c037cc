"""API routes: the reverse proxy (SPEC: API routes (GATEHOUSE_ROUTES))."""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote

import pytest
import requests

from harness import CSRF, RawConn, free_port, login

MIB = 1 << 20


@pytest.fixture(scope="module")
def sess(gateway, provider):
    return login(gateway, provider)


def hdrs(echo) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in echo["headers"]:
        out.setdefault(k.lower(), []).append(v)
    return out


def raw_api(gw, cookie, head: str, body: bytes = b"", csrf=True) -> tuple:
    extra = f"Cookie: gatehouse={cookie}\r\n" + ("X-CSRF: 1\r\n" if csrf else "")
    req = head.replace("\r\n\r\n", "\r\n" + extra + "\r\n", 1).encode() + body
    with RawConn(gw.port, timeout=30) as c:
        c.send(req)
        return c.read_response()


def vm_hwm_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


# --------------------------------------------------------------------------- auth


def test_no_session_gives_401_json_not_redirect(gateway):
    # SPEC: No valid session: `401` JSON, never a redirect.
    r = gateway.get(requests.Session(), "/api/hello")
    assert r.status_code == 401
    assert r.headers["Content-Type"].startswith("application/json")
    assert "Location" not in r.headers
    assert "error" in r.json()


def test_missing_csrf_gives_401_and_no_upstream_call(gateway, sess, upstream):
    # SPEC: Missing `X-CSRF: 1`: `401` JSON {"error":"csrf_header_missing"}.
    upstream.clear_log()
    r = gateway.get(sess, "/api/hello", csrf=False)
    assert r.status_code == 401 and r.json()["error"] == "csrf_header_missing"
    assert upstream.log() == []


def test_custom_csrf_header_name(gateway_factory, provider):
    # SPEC: GATEHOUSE_CSRF_HEADER header that every ... API request must carry with the value 1
    gw = gateway_factory({"GATEHOUSE_CSRF_HEADER": "X-Requested-By-SPA"})
    s = login(gw, provider)
    assert gw.get(s, "/api/hello", csrf=False).status_code == 401
    r = gw.get(s, "/api/hello", csrf=False, headers={"X-Requested-By-SPA": "1"})
    assert r.status_code == 200


# --------------------------------------------------------------------------- forwarding


def test_method_path_query_and_body_forwarded_exactly(gateway, sess):
    # SPEC: Forwarded: method, path (as in GATEHOUSE_ROUTES), query, headers and body
    cookie = sess.cookies.get("gatehouse")
    body = b"x" * 1000 + b"\x00\xff"
    r = raw_api(gateway, cookie,
                f"PATCH /api/echo/a%20b/c;p=1?a=1&a=2&b=%2F&c&d=%C3%A9 HTTP/1.1\r\n"
                f"Host: 127.0.0.1:{gateway.port}\r\nContent-Type: application/octet-stream\r\n"
                f"Content-Length: {len(body)}\r\n\r\n", body)
    assert r.status == 200, r.body[:300]
    e = json.loads(r.body)
    assert e["method"] == "PATCH"
    assert e["path"] == "/api/echo/a%20b/c;p=1"
    assert e["query"] == "a=1&a=2&b=%2F&c&d=%C3%A9"
    assert e["body_length"] == len(body)
    assert e["body_sha256"] == hashlib.sha256(body).hexdigest()


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE", "OPTIONS"])
def test_methods_forwarded(gateway, sess, method):
    r = gateway.request(sess, method, "/api/echo", data=b"abc" if method in ("POST", "PUT") else None)
    assert r.status_code == 200 and r.json()["method"] == method


def test_request_headers_rewritten(gateway, sess, provider):
    # SPEC: Removed before forwarding: hop-by-hop headers, Cookie, the browser's own
    # Authorization, the CSRF header. Added: Authorization: Bearer <access token>,
    # X-Forwarded-For (the peer address; ... otherwise replaced), X-Forwarded-Proto,
    # X-Forwarded-Host (the host of GATEHOUSE_PUBLIC_URL; here also the request's Host).
    cookie = sess.cookies.get("gatehouse")
    r = raw_api(gateway, cookie,
                f"GET /api/echo HTTP/1.1\r\nHost: 127.0.0.1:{gateway.port}\r\n"
                "Authorization: Basic Zm9vOmJhcg==\r\n"
                "Connection: keep-alive, X-Foo\r\nX-Foo: bar\r\nKeep-Alive: timeout=5\r\n"
                "Proxy-Authorization: Basic eHg6eXk=\r\nTE: trailers\r\n"
                "X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Host: evil.example\r\n"
                "X-Forwarded-Proto: https\r\nX-Custom: kept\r\nAccept: application/json\r\n\r\n")
    assert r.status == 200, r.body[:300]
    h = hdrs(json.loads(r.body))
    assert len(h["authorization"]) == 1
    auth = h["authorization"][0]
    assert auth.startswith("Bearer ")
    info = provider.introspect(auth[len("Bearer "):])
    assert info["active"] and info["kind"] == "access_token" and info["sub"] == "alice"
    for gone in ("cookie", "x-csrf", "x-foo", "keep-alive", "proxy-authorization", "te"):
        assert gone not in h, f"{gone} forwarded: {h.get(gone)}"
    assert "x-foo" not in ",".join(h.get("connection", [])).lower()
    assert h["x-forwarded-for"] == ["127.0.0.1"]
    assert h["x-forwarded-proto"] == ["http"]
    assert h["x-forwarded-host"] == [f"127.0.0.1:{gateway.port}"]
    assert h["x-custom"] == ["kept"]
    assert h["accept"] == ["application/json"]


def test_trusted_proxy_keeps_forwarded_for(gateway_factory, provider):
    # SPEC: an incoming value is kept only from GATEHOUSE_TRUSTED_PROXIES (and appended to)
    gw = gateway_factory({"GATEHOUSE_TRUSTED_PROXIES": "127.0.0.0/8"})
    s = login(gw, provider)
    r = gw.get(s, "/api/echo", headers={"X-Forwarded-For": "203.0.113.7"})
    h = hdrs(r.json())
    xff = ",".join(h["x-forwarded-for"]).replace(" ", "")
    assert xff == "203.0.113.7,127.0.0.1"


def test_response_headers_filtered(gateway, sess):
    # SPEC: Removed from the upstream's answer: hop-by-hop headers and Set-Cookie.
    r = gateway.get(sess, "/api/setcookie")
    assert r.status_code == 200
    set_cookies = r.raw.headers.getlist("Set-Cookie")
    assert not any("upstream=" in c or "other=" in c for c in set_cookies), set_cookies
    for gone in ("X-Hop", "Keep-Alive", "Proxy-Authenticate"):
        assert gone not in r.headers, f"{gone} passed through"
    assert "x-hop" not in r.headers.get("Connection", "").lower()
    assert r.headers["X-Kept"] == "yes"


@pytest.mark.parametrize("code", [201, 204, 400, 404, 418, 500, 503])
def test_upstream_status_passed_through(gateway, sess, code):
    r = gateway.get(sess, f"/api/status/{code}")
    assert r.status_code == code


def test_prefix_match_is_by_path_segment(gateway, sess, upstream):
    # SPEC: A request under PREFIX is forwarded ... `/apix` is not under `/api`
    upstream.clear_log()
    r = gateway.get(sess, "/apix/echo", headers={"Accept": "application/json"})
    assert not (r.status_code == 200 and r.headers.get("Content-Type", "").startswith(
        "application/json") and "headers" in r.text)
    assert not [e for e in upstream.log() if e["path"].startswith("/apix")]


@pytest.mark.parametrize("target", ["/api/../secret", "/api/%2e%2e/secret", "/api/./../secret",
                                    "/api/%2E%2E/%2E%2E/secret"])
def test_dot_segments_do_not_escape_the_route(gateway, sess, upstream, target):
    # SPEC: a request under PREFIX is forwarded; nothing else is
    upstream.clear_log()
    cookie = sess.cookies.get("gatehouse")
    r = raw_api(gateway, cookie, f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n")
    assert 100 <= r.status < 600
    for e in upstream.log():
        norm = posixpath.normpath(unquote(e["path"]))
        assert norm == "/api" or norm.startswith("/api/"), f"{target} reached upstream as {e['path']}"


def test_path_rewrite_when_upstream_has_a_path(gateway_factory, provider, upstream):
    # SPEC: if UPSTREAM_URL has a path, it replaces PREFIX (`/api=http://up/v1`: `/api/x` → `/v1/x`)
    gw = gateway_factory({"GATEHOUSE_ROUTES": f"/api={upstream.url},/v={upstream.url}/api"})
    s = login(gw, provider)
    r = gw.get(s, "/v/echo?q=1")
    assert r.status_code == 200
    assert r.json()["path"] == "/api/echo" and r.json()["query"] == "q=1"
    assert gw.get(s, "/api/echo").json()["path"] == "/api/echo"


# --------------------------------------------------------------------------- streaming


def test_sse_arrives_incrementally(gateway, sess):
    # SPEC: server-sent events reach the browser as they come
    cookie = sess.cookies.get("gatehouse")
    times = []
    with RawConn(gateway.port, timeout=30) as c:
        t0 = time.time()
        c.send(f"GET /api/sse HTTP/1.1\r\nHost: 127.0.0.1:{gateway.port}\r\n"
               f"Cookie: gatehouse={cookie}\r\nX-CSRF: 1\r\nAccept: text/event-stream\r\n"
               f"Connection: close\r\n\r\n".encode())
        head = c.read_response(head_only=True)
        assert head.status == 200
        assert (head.header("Content-Type") or "").startswith("text/event-stream")
        seen = c.buf.count(b"\n\n")
        times += [time.time() - t0] * seen
        while len(times) < 5:
            chunk = c.sock.recv(65536)
            if not chunk:
                break
            c.buf += chunk
            n = c.buf.count(b"\n\n")
            times += [time.time() - t0] * (n - seen)
            seen = n
    assert len(times) == 5, times
    # the upstream spaces the events 300 ms apart (1.2 s in all)
    assert times[-1] - times[0] > 0.8, f"events arrived together: {times}"


@pytest.mark.parametrize("cl", [0, 1], ids=["chunked", "content-length"])
def test_100mib_download_streams_through(gateway, sess, upstream, cl):
    # SPEC: a large ... download is not buffered whole
    want = requests.get(upstream.url + "/__big_sha256?mb=100", timeout=60).json()["sha256"]
    h = hashlib.sha256()
    n = 0
    with sess.get(gateway.url + f"/api/big?mb=100&cl={cl}", headers={**CSRF, "Accept-Encoding": "identity"},
                  stream=True, timeout=120) as r:
        assert r.status_code == 200
        for chunk in r.iter_content(1 << 20):
            n += len(chunk)
            h.update(chunk)
    assert n == 100 * MIB
    assert h.hexdigest() == want


def test_1gib_download_keeps_gateway_memory_bounded(gateway, sess, upstream):
    # Issue: "a 1 GB download ... passes with bounded memory". The gateway's peak RSS (VmHWM) may not
    # grow by more than 64 MiB while 1 GiB streams through it to a reader that checks every byte.
    pid = gateway.proc.pid
    before = vm_hwm_kib(pid)
    want = requests.get(upstream.url + "/__big_sha256?mb=1024", timeout=120).json()["sha256"]
    h = hashlib.sha256()
    n = 0
    with sess.get(gateway.url + "/api/big?mb=1024&cl=1", headers={**CSRF, "Accept-Encoding": "identity"},
                  stream=True, timeout=300) as r:
        assert r.status_code == 200
        for chunk in r.iter_content(1 << 20):
            n += len(chunk)
            h.update(chunk)
    assert n == 1024 * MIB
    assert h.hexdigest() == want
    growth = vm_hwm_kib(pid) - before
    assert growth < 64 * 1024, f"gateway peak RSS grew by {growth} KiB while streaming 1 GiB"


@pytest.fixture(scope="module")
def big_gw(provider, upstream, tmp_path_factory):
    from conftest import _require_binary
    from harness import Gateway
    _require_binary()
    gw = Gateway(provider, upstream, tmp_path_factory.mktemp("gw-big"),
                 env={"GATEHOUSE_MAX_BODY": "200m"}, name="gateway-bigbody")
    yield gw
    gw.stop()


def _payload():
    block = secrets.token_bytes(MIB)
    data_hash = hashlib.sha256()
    for i in range(100):
        data_hash.update(block[i:] + block[:i])
    return block, data_hash.hexdigest()


def _gen(block):
    for i in range(100):
        yield block[i:] + block[:i]


def test_100mib_chunked_upload_streams_through(big_gw, provider):
    # SPEC: a large upload ... is not buffered whole
    s = login(big_gw, provider)
    block, want = _payload()
    r = big_gw.post(s, "/api/upload", data=_gen(block), timeout=300)
    assert r.status_code == 200, r.text[:300]
    assert r.json()["bytes"] == 100 * MIB and r.json()["sha256"] == want


def test_100mib_content_length_upload_streams_through(big_gw, provider):
    s = login(big_gw, provider)
    block, want = _payload()
    data = b"".join(_gen(block))
    r = big_gw.post(s, "/api/upload", data=data, timeout=300)
    assert r.status_code == 200, r.text[:300]
    assert r.json()["bytes"] == 100 * MIB and r.json()["sha256"] == want


def test_upload_is_not_buffered_whole(big_gw, provider):
    # SPEC: streamed both ways (a large upload or download is not buffered whole).
    # The gateway's peak resident memory must not grow by the size of the body.
    s = login(big_gw, provider)
    assert big_gw.get(s, "/api/hello").status_code == 200
    before = vm_hwm_kib(big_gw.proc.pid)
    block, want = _payload()
    r = big_gw.post(s, "/api/upload", data=_gen(block), timeout=300)
    assert r.status_code == 200 and r.json()["sha256"] == want
    with s.get(big_gw.url + "/api/big?mb=100", headers=CSRF, stream=True, timeout=300) as d:
        for _ in d.iter_content(1 << 20):
            pass
    grown_mib = (vm_hwm_kib(big_gw.proc.pid) - before) / 1024
    assert grown_mib < 64, f"peak RSS grew by {grown_mib:.0f} MiB moving 100 MiB each way"


# --------------------------------------------------------------------------- failures


def test_upstream_down_gives_502_json(gateway_factory, provider):
    # SPEC: Upstream unreachable: `502` JSON
    gw = gateway_factory({"GATEHOUSE_ROUTES": f"/api=http://127.0.0.1:{free_port()}"})
    s = login(gw, provider)
    r = gw.get(s, "/api/hello")
    assert r.status_code == 502
    assert r.headers["Content-Type"].startswith("application/json")
    assert "error" in r.json()


def test_slow_upstream_gives_504_json(gateway_factory, provider):
    # SPEC: GATEHOUSE_UPSTREAM_TIMEOUT time limit for an upstream's first response byte;
    # no answer in time: `504` JSON
    gw = gateway_factory({"GATEHOUSE_UPSTREAM_TIMEOUT": "1s"})
    s = login(gw, provider)
    t0 = time.time()
    r = gw.get(s, "/api/slow?ms=4000")
    took = time.time() - t0
    assert r.status_code == 504
    assert r.headers["Content-Type"].startswith("application/json") and "error" in r.json()
    assert took < 3.5, f"504 took {took:.1f}s with a 1s timeout"
    assert gw.get(s, "/api/slow?ms=100").status_code == 200


# --------------------------------------------------------------------------- refresh


def test_expired_access_token_is_refreshed(gateway_factory, provider):
    # SPEC: The access token is refreshed with the refresh token before it expires
    provider.config(access_ttl=3, refresh_access_ttl=3)
    gw = gateway_factory()
    s = login(gw, provider)
    first = gw.get(s, "/api/hello").json()["authorization"]
    before = provider.refresh_count()
    bearers = [first]
    for cycle in (1, 2):  # twice: the second refresh needs the rotated refresh token
        time.sleep(4)
        r = gw.get(s, "/api/hello")
        assert r.status_code == 200, f"cycle {cycle}: {r.status_code} {r.text[:200]}"
        bearer = r.json()["authorization"]
        assert bearer not in bearers, f"cycle {cycle}: expired access token sent"
        info = provider.introspect(bearer.split(" ", 1)[1])
        assert info["active"] is True and info["sub"] == "alice"
        bearers.append(bearer)
        assert provider.refresh_count() >= before + cycle


def test_concurrent_requests_share_one_refresh(gateway_factory, provider):
    # SPEC: concurrent requests of one session share one refresh.
    provider.config(access_ttl=3, refresh_access_ttl=3600, token_delay_ms=1000)
    gw = gateway_factory()
    s = login(gw, provider)
    cookie = s.cookies.get("gatehouse")
    time.sleep(4)
    before = provider.refresh_count()

    def call(_):
        c = requests.Session()
        c.cookies.set("gatehouse", cookie)
        return gw.get(c, "/api/hello", timeout=30)

    with ThreadPoolExecutor(8) as ex:
        results = list(ex.map(call, range(8)))
    assert [r.status_code for r in results] == [200] * 8
    assert provider.refresh_count() - before == 1
    assert len({r.json()["authorization"] for r in results}) == 1


def test_refused_refresh_ends_the_session(gateway_factory, provider):
    # SPEC: A refused refresh (`invalid_grant`) ends the session: `401`.
    provider.config(access_ttl=3)
    gw = gateway_factory()
    s = login(gw, provider)
    time.sleep(4)
    provider.config(fail_refresh="invalid_grant")
    r = gw.get(s, "/api/hello")
    assert r.status_code == 401
    provider.config(fail_refresh=None)
    assert gw.get(s, "/user").status_code == 401
