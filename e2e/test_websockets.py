"""WebSockets through the gateway (SPEC "WebSockets"; issue 14) against a real WebSocket upstream
(e2e/ws_upstream.py, the `websockets` library) with `websockets` clients.

"`GET` + `Upgrade: websocket` under a route is checked like an API call, with `Origin` equal to
`PUBLIC_URL`'s origin in place of the CSRF header (`403` otherwise); logout/revocation closes the
session's sockets within 5 s." Idle timeout: GATEHOUSE_WEBSOCKET_IDLE (default 10m)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from pathlib import Path

import pytest
import requests
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

import harness
from harness import PYTHON, E2E_DIR, Proc, login, wait_for_port_file, wait_http_ok


class WSUpstream:
    def __init__(self, work: Path, tls: tuple[str, str] | None = None):
        work.mkdir(parents=True, exist_ok=True)
        port_file = work / "ws_upstream.port"
        port_file.unlink(missing_ok=True)
        argv = [PYTHON, str(E2E_DIR / "ws_upstream.py"), "--port", "0", "--port-file", str(port_file)]
        if tls:
            argv += ["--tls", *tls]
        self.proc = Proc("wss_upstream" if tls else "ws_upstream", argv,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"}).start()
        self.port = wait_for_port_file(port_file, self.proc)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        if not tls:
            wait_http_ok(self.url + "/__health", self.proc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.stop()


@pytest.fixture(scope="module")
def ws_upstream(tmp_path_factory):
    with WSUpstream(tmp_path_factory.mktemp("ws-upstream")) as up:
        yield up


def ws_routes(upstream, ws_upstream) -> str:
    return f"/api={upstream.url},/ws={ws_upstream.url}"


@pytest.fixture(scope="module")
def wsgw(provider, upstream, ws_upstream, tmp_path_factory):
    gw = harness.Gateway(provider, upstream, tmp_path_factory.mktemp("ws-gateway"),
                         env={"GATEHOUSE_ROUTES": ws_routes(upstream, ws_upstream)})
    yield gw
    gw.stop()


def ws_url(gw, path: str) -> str:
    return gw.url.replace("http://", "ws://") + path


def open_ws(gw, sess, path="/ws/echo", origin=None, **kw):
    headers = {}
    if sess is not None:
        headers["Cookie"] = f"{gw.cookie_name}={sess.cookies.get(gw.cookie_name)}"
    return connect(ws_url(gw, path), origin=origin or gw.public_url, additional_headers=headers,
                   max_size=None, compression=None, open_timeout=15, close_timeout=5, **kw)


def echoing_socket(gw, provider, username="alice", path="/ws/echo"):
    """Signs in, opens a WebSocket and checks that it echoes; returns (session, socket)."""
    sess = login(gw, provider, username=username)
    ws = open_ws(gw, sess, path)
    ws.send("first")
    assert ws.recv(timeout=10) == "first"
    return sess, ws


def closed_within(ws, seconds: float) -> ConnectionClosed:
    """Reads until the connection closes; fails if it is still open after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"the WebSocket was still open after {seconds} s"
        try:
            ws.recv(timeout=left)
        except TimeoutError:
            continue
        except ConnectionClosed as closed:
            return closed


def test_text_and_binary_echo_with_bearer_and_no_cookie(wsgw, provider):
    sess = login(wsgw, provider)
    with open_ws(wsgw, sess) as ws:
        ws.send("hello through the gateway")
        assert ws.recv(timeout=10) == "hello through the gateway"
        blob = bytes(range(256)) * 4
        ws.send(blob)
        assert ws.recv(timeout=10) == blob
        ws.send("__headers__")
        seen = json.loads(ws.recv(timeout=10))
    assert seen["authorization"].startswith("Bearer ")
    assert "cookie" not in seen
    assert seen["upgrade"].lower() == "websocket"
    assert seen["x-forwarded-proto"] == "http"
    assert seen["sec-websocket-version"] == "13"


def test_extensions_pass_through_permessage_deflate(wsgw, provider):
    sess = login(wsgw, provider)
    headers = {"Cookie": f"{wsgw.cookie_name}={sess.cookies.get(wsgw.cookie_name)}"}
    with connect(ws_url(wsgw, "/ws/echo"), origin=wsgw.public_url, additional_headers=headers,
                 compression="deflate", open_timeout=15) as ws:
        assert "permessage-deflate" in ws.response.headers.get("Sec-WebSocket-Extensions", "")
        text = "compressible " * 5000
        ws.send(text)
        assert ws.recv(timeout=10) == text


def test_ten_mebibyte_message_both_ways(wsgw, provider):
    sess = login(wsgw, provider)
    payload = os.urandom(10 << 20)
    with open_ws(wsgw, sess) as ws:
        ws.send(payload)
        assert ws.recv(timeout=60) == payload


def test_ping_pong(wsgw, provider):
    sess = login(wsgw, provider)
    with open_ws(wsgw, sess) as ws:
        pong = ws.ping(b"are you there")
        assert pong.wait(10), "no pong through the gateway"
        ws.send("still open")
        assert ws.recv(timeout=10) == "still open"


def test_close_codes_are_relayed_both_ways(wsgw, provider):
    sess = login(wsgw, provider)
    with open_ws(wsgw, sess, "/ws/close?code=4321&reason=upstream-bye") as ws:
        closed = closed_within(ws, 10)
    assert closed.rcvd is not None and closed.rcvd.code == 4321 and closed.rcvd.reason == "upstream-bye"

    ws = open_ws(wsgw, sess)
    ws.send("x")
    assert ws.recv(timeout=10) == "x"
    ws.close(4555, "browser-bye")
    with open_ws(wsgw, sess) as ws2:
        ws2.send("__last_close__")
        assert json.loads(ws2.recv(timeout=10)) == {"code": 4555, "reason": "browser-bye"}


def test_wrong_origin_is_403_and_missing_origin_too(wsgw, provider):
    sess = login(wsgw, provider)
    for origin in ("http://evil.example", wsgw.public_url + ".evil.example", "null"):
        with pytest.raises(InvalidStatus) as refused:
            open_ws(wsgw, sess, origin=origin)
        assert refused.value.response.status_code == 403
        assert json.loads(refused.value.response.body)["error"] == "origin_not_allowed"
    # raw: no Origin at all
    r = raw_handshake(wsgw, "/ws/echo", cookie=sess.cookies.get(wsgw.cookie_name), origin=None)
    assert r.startswith(b"HTTP/1.1 403 "), r[:200]


def test_no_session_is_401(wsgw):
    with pytest.raises(InvalidStatus) as refused:
        open_ws(wsgw, None)
    assert refused.value.response.status_code == 401
    assert json.loads(refused.value.response.body)["error"] == "unauthenticated"


def test_refused_handshake_is_relayed_and_bad_accept_is_502(wsgw, provider):
    sess = login(wsgw, provider)
    with pytest.raises(InvalidStatus) as refused:
        open_ws(wsgw, sess, "/ws/refuse")
    assert refused.value.response.status_code == 403
    assert json.loads(refused.value.response.body)["error"] == "forbidden_by_upstream"
    with pytest.raises(InvalidStatus) as bad:
        open_ws(wsgw, sess, "/ws/badaccept")
    assert bad.value.response.status_code == 502
    assert json.loads(bad.value.response.body)["error"] == "upstream_websocket_handshake_failed"


def raw_handshake(gw, path, cookie=None, origin="", version="13", extra=(), body=b"") -> bytes:
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{gw.port}", "Upgrade: websocket",
             "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
             f"Sec-WebSocket-Version: {version}"]
    if origin is not None:
        lines.append(f"Origin: {origin or gw.public_url}")
    if cookie:
        lines.append(f"Cookie: {gw.cookie_name}={cookie}")
    lines += list(extra)
    with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return data


def test_malformed_handshakes(wsgw, provider):
    sess = login(wsgw, provider)
    cookie = sess.cookies.get(wsgw.cookie_name)
    r = raw_handshake(wsgw, "/ws/echo", cookie=cookie, version="8")
    assert r.startswith(b"HTTP/1.1 426 ") and b"Sec-WebSocket-Version: 13" in r, r[:300]
    # a handshake with a body is no handshake
    r = raw_handshake(wsgw, "/ws/echo", cookie=cookie, extra=["Content-Length: 5"], body=b"hello")
    assert r.startswith(b"HTTP/1.1 400 ") and b"invalid_websocket_handshake" in r, r[:300]
    # a plain API call is unaffected: the CSRF header is still required without Upgrade
    assert requests.get(wsgw.url + "/api/hello", cookies=sess.cookies, timeout=10).status_code == 401


def test_logout_closes_the_socket_within_five_seconds(wsgw, provider):
    sess, ws = echoing_socket(wsgw, provider)
    r = wsgw.post(sess, "/logout", allow_redirects=False)
    assert r.status_code == 302
    closed = closed_within(ws, 5)
    assert closed.rcvd is not None and closed.rcvd.code == 1008


def test_revocation_by_another_process_closes_the_socket_within_five_seconds(wsgw, provider):
    _, ws = echoing_socket(wsgw, provider, username="wsrevoke")
    out = wsgw.cli("sessions", "revoke", "--sub", "wsrevoke")
    assert out.returncode == 0, out.stderr
    closed = closed_within(ws, 5)
    assert closed.rcvd is not None and closed.rcvd.code == 1008


def test_backchannel_logout_closes_the_socket(wsgw, provider):
    sess = login(wsgw, provider, username="wsbcl")
    ws = open_ws(wsgw, sess)
    token = provider.logout_token(sub="wsbcl")
    r = requests.post(wsgw.url + "/backchannel-logout", data={"logout_token": token}, timeout=10)
    assert r.status_code == 200, r.text
    closed = closed_within(ws, 5)
    assert closed.rcvd is not None and closed.rcvd.code == 1008


def test_token_refresh_does_not_close_the_socket(provider, upstream, ws_upstream, gateway_factory):
    provider.config(access_ttl=3, refresh_access_ttl=3600)
    gw = gateway_factory(env={"GATEHOUSE_ROUTES": ws_routes(upstream, ws_upstream)})
    sess, ws = echoing_socket(gw, provider)
    before = provider.refresh_count()
    deadline = time.monotonic() + 20
    while provider.refresh_count() == before:  # an API call refreshes once the token is near expiry
        assert time.monotonic() < deadline, "no refresh happened"
        assert gw.get(sess, "/api/hello").status_code == 200
        time.sleep(0.5)
    # at least one periodic session check (every 2 s) runs after the refresh
    time.sleep(2.5)
    ws.send("after the refresh")
    assert ws.recv(timeout=10) == "after the refresh"
    ws.close()


def test_idle_timeout_closes_the_socket(provider, upstream, ws_upstream, gateway_factory):
    gw = gateway_factory(env={"GATEHOUSE_ROUTES": ws_routes(upstream, ws_upstream),
                              "GATEHOUSE_WEBSOCKET_IDLE": "2s"})
    _, ws = echoing_socket(gw, provider)
    closed = closed_within(ws, 30)
    assert closed.rcvd is not None and closed.rcvd.code == 1001
    assert closed.rcvd.reason == "idle timeout"


def test_graceful_shutdown_closes_sockets_with_1001(provider, upstream, ws_upstream, gateway_factory):
    gw = gateway_factory(env={"GATEHOUSE_ROUTES": ws_routes(upstream, ws_upstream)})
    _, ws = echoing_socket(gw, provider)
    started = time.monotonic()
    assert gw.stop() == 0
    closed = closed_within(ws, 10)
    assert closed.rcvd is not None and closed.rcvd.code == 1001
    # the socket did not hold the shutdown for the 25 s grace period
    assert time.monotonic() - started < 20


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_thousand_concurrent_idle_websockets_with_bounded_memory(wsgw, provider, record_property):
    from websockets.asyncio.client import connect as aconnect
    sess = login(wsgw, provider)
    cookie = f"{wsgw.cookie_name}={sess.cookies.get(wsgw.cookie_name)}"
    count = 1000

    async def run():
        before = rss_kib(wsgw.proc.pid)
        sockets = []
        try:
            for batch in range(0, count, 100):
                sockets += await asyncio.gather(*[
                    aconnect(ws_url(wsgw, "/ws/echo"), origin=wsgw.public_url,
                             additional_headers={"Cookie": cookie}, compression=None,
                             ping_interval=None, open_timeout=30)
                    for _ in range(batch, min(count, batch + 100))])
            # every one of them works
            await asyncio.gather(*[s.send(f"m{i}") for i, s in enumerate(sockets)])
            got = await asyncio.gather(*[asyncio.wait_for(s.recv(), 30) for s in sockets])
            assert got == [f"m{i}" for i in range(count)]
            after = rss_kib(wsgw.proc.pid)
            metrics = requests.get(wsgw.url + "/metrics", timeout=10).text
            assert f"gatehouse_websockets_open {count}" in metrics.splitlines()
            return before, after
        finally:
            await asyncio.gather(*[s.close() for s in sockets], return_exceptions=True)

    before, after = asyncio.run(run())
    per_socket = (after - before) * 1024 / count
    record_property("rss_bytes_per_websocket", int(per_socket))
    print(f"\nRSS {before} KiB -> {after} KiB with {count} open WebSockets: {per_socket:.0f} bytes each")
    assert after - before < 64 * 1024, f"RSS grew by {after - before} KiB for {count} idle WebSockets"


@pytest.mark.browser
def test_demo_spa_live_panel_in_chromium(provider, upstream, ws_upstream, gateway_factory):
    from browser import By, WebDriverWait, make_driver, sign_in
    gw = gateway_factory(env={
        "GATEHOUSE_ROUTES": f"/api={upstream.url},/api/live={ws_upstream.url}/feed,/ws={ws_upstream.url}"})
    d = make_driver()
    try:
        wait = WebDriverWait(d, 20)
        sign_in(d, gw, provider)
        # the live panel's WebSocket (/api/live) shows the upstream's messages as they come
        wait.until(lambda d: "tick" in d.find_element(By.CSS_SELECTOR, "#live-feed").text)
        assert d.find_element(By.CSS_SELECTOR, "#live-state").text == "connected"
        # and a socket the page opens itself echoes
        echoed = d.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const ws = new WebSocket(location.origin.replace('http', 'ws') + '/ws/echo');
            ws.onopen = () => ws.send('from chromium');
            ws.onmessage = (e) => { done(e.data); ws.close(); };
            ws.onerror = () => done('error');
        """)
        assert echoed == "from chromium"
    finally:
        d.quit()


# ---------------------------------------------------------------------------
# wss:// upstreams (https routes): the loop connects over TLS (OpenSSL) and relays.
# The gateway runs in a private mount namespace where a test CA bundle holding the upstream's
# self-signed certificate replaces the system one (as the Swift TLS tests do).
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wss_setup(provider, upstream, tmp_path_factory):
    import shutil
    import subprocess
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare to trust a test certificate")
    work = tmp_path_factory.mktemp("wss")
    cert, key, bundle = work / "cert.pem", work / "key.pem", work / "bundle.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    bundle.write_bytes(Path("/etc/ssl/certs/ca-certificates.crt").read_bytes() + cert.read_bytes())
    with WSUpstream(work / "upstream", tls=(str(cert), str(key))) as up:
        yield from _wss_gateway(provider, upstream, up, work, bundle)


def _wss_gateway(provider, upstream, up, work, bundle):
    gw = harness.Gateway(provider, upstream, work / "gateway", start=False,
                         env={"GATEHOUSE_ROUTES": f"/api={upstream.url},/wss={up.url}"})
    gw.proc = Proc(gw.name, ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                             'mount --bind "$0" /etc/ssl/certs/ca-certificates.crt && exec "$@"',
                             str(bundle), str(harness.gatehouse_bin()), "serve"],
                   env=gw.env, cwd=harness.REPO).start()
    gw.wait_ready()
    gw.ca_bundle = bundle
    yield gw
    gw.stop()


class FileOpens:
    """Counts opens of one file (inotify IN_OPEN on its inode, by whatever path it is opened)."""
    IN_OPEN, IN_CLOSE, IN_NONBLOCK = 0x20, 0x18, 0o4000

    def __init__(self, path):
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(self.IN_NONBLOCK)
        # Closes too: inotify merges an event identical to the last one queued, so opens alone
        # would count as one however many there were.
        assert self.fd >= 0 and libc.inotify_add_watch(self.fd, str(path).encode(), self.IN_OPEN | self.IN_CLOSE) >= 0
        self.opens = 0

    def count(self):
        import struct
        while True:
            try:
                data = os.read(self.fd, 4096)
            except BlockingIOError:
                return self.opens
            offset = 0
            while offset + 16 <= len(data):
                _, mask, _, length = struct.unpack_from("iIII", data, offset)
                self.opens += bool(mask & self.IN_OPEN)
                offset += 16 + length

    def close(self):
        os.close(self.fd)


def test_wss_upstream_echo_ping_and_large_message(wss_setup, provider):
    gw = wss_setup
    sess = login(gw, provider)
    with open_ws(gw, sess, "/wss/echo") as ws:
        ws.send("over TLS")
        assert ws.recv(timeout=10) == "over TLS"
        payload = os.urandom(3 << 20)
        ws.send(payload)
        assert ws.recv(timeout=60) == payload
        assert ws.ping(b"tls").wait(10)
        ws.send("__headers__")
        seen = json.loads(ws.recv(timeout=10))
    assert seen["authorization"].startswith("Bearer ") and "cookie" not in seen


def test_wss_tunnels_share_one_parsed_ca_bundle(wss_setup, provider):
    # Each tunnel is a connection of its own; the bundle is parsed once for all of them (about
    # 24 ms of CPU per parse), not once per tunnel.
    gw = wss_setup
    sess = login(gw, provider)
    opens = FileOpens(gw.ca_bundle)
    try:
        for i in range(3):
            with open_ws(gw, sess, "/wss/echo") as ws:
                ws.send(f"tunnel {i}")
                assert ws.recv(timeout=10) == f"tunnel {i}"
        assert opens.count() <= 1
    finally:
        opens.close()


def test_wss_refusal_relayed_close_code_and_logout(wss_setup, provider):
    gw = wss_setup
    sess = login(gw, provider)
    with pytest.raises(InvalidStatus) as refused:
        open_ws(gw, sess, "/wss/refuse")
    assert refused.value.response.status_code == 403
    with open_ws(gw, sess, "/wss/close?code=4100&reason=tls-bye") as ws:
        closed = closed_within(ws, 10)
    assert closed.rcvd is not None and closed.rcvd.code == 4100
    ws = open_ws(gw, sess, "/wss/echo")
    ws.send("x")
    assert ws.recv(timeout=10) == "x"
    assert gw.post(sess, "/logout", allow_redirects=False).status_code == 302
    closed = closed_within(ws, 5)
    assert closed.rcvd is not None and closed.rcvd.code == 1008


def test_wss_upstream_with_an_untrusted_certificate_is_502(provider, upstream, gateway_factory, tmp_path):
    import subprocess
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    with WSUpstream(tmp_path / "untrusted", tls=(str(cert), str(key))) as up:
        gw = gateway_factory(env={"GATEHOUSE_ROUTES": f"/api={upstream.url},/wss={up.url}"})
        sess = login(gw, provider)
        with pytest.raises(InvalidStatus) as refused:
            open_ws(gw, sess, "/wss/echo")
        assert refused.value.response.status_code == 502
