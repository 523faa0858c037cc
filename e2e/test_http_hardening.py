"""The HTTP/1.1 server on raw sockets (SPEC: HTTP/1.1 server behaviour)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from harness import RawConn, login, raw_request


@pytest.fixture(scope="module")
def cookie(gateway, provider):
    return login(gateway, provider).cookies.get("gatehouse")


def api_head(gw, cookie, method, path, extra=""):
    return (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{gw.port}\r\n"
            f"Cookie: gatehouse={cookie}\r\nX-CSRF: 1\r\n{extra}")


def expect_400_and_close(gw, data: bytes, status=400, wait=15.0):
    with RawConn(gw.port, timeout=wait) as c:
        c.send(data)
        r = c.read_response()
        assert r.status == status, (data[:200], r.status, r.body[:200])
        assert c.is_closed(5.0), "connection left open after a refused request"
    assert requests.get(gw.url + "/healthz", timeout=5).status_code == 200


# --------------------------------------------------------------------------- framing


def test_keep_alive_two_requests_one_socket(gateway):
    # SPEC: Keep-alive
    with RawConn(gateway.port) as c:
        for _ in range(2):
            c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert c.read_response().status == 200
        assert not c.is_closed(0.5)


def test_http10_request_is_answered(gateway):
    r = raw_request(gateway.port, b"GET /healthz HTTP/1.0\r\n\r\n")
    assert r.status == 200


def test_pipelined_requests_answered_in_order(gateway):
    with RawConn(gateway.port) as c:
        c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
               b"GET /no-such-file.txt HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n"
               b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
               b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        got = [c.read_response().status, c.read_response().status]
        m = c.read_response()
        got.append(m.status)
        got.append(c.read_response(method="HEAD").status)
        assert got == [200, 404, 200, 200]
        assert b"gatehouse_" in m.body


def test_chunked_request_body(gateway, cookie):
    # SPEC: Content-Length and chunked bodies in and out
    body = b"hello world, chunked"
    chunks = b"5\r\nhello\r\n6;ext=1\r\n world\r\n9\r\n, chunked\r\n0\r\nX-Trailer: 1\r\n\r\n"
    with RawConn(gateway.port) as c:
        c.send((api_head(gateway, cookie, "POST", "/api/echo",
                         "Transfer-Encoding: chunked\r\n") + "\r\n").encode() + chunks)
        r = c.read_response()
        assert r.status == 200, r.body[:300]
        e = json.loads(r.body)
        assert e["body_length"] == len(body)
        assert e["body_sha256"] == hashlib.sha256(body).hexdigest()
        # the connection is still usable afterwards
        c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert c.read_response().status == 200


def test_expect_100_continue(gateway, cookie):
    # SPEC: `Expect: 100-continue`
    with RawConn(gateway.port) as c:
        c.send((api_head(gateway, cookie, "POST", "/api/echo",
                         "Content-Length: 5\r\nExpect: 100-continue\r\n") + "\r\n").encode())
        first = c.read_response(head_only=True)
        assert first.status == 100
        c.send(b"hello")
        r = c.read_response()
        assert r.status == 200
        assert json.loads(r.body)["body_length"] == 5


def test_expect_100_continue_refused_body_too_large(gateway_factory, provider):
    # SPEC: `413` for bodies over the limit -- without reading the body first
    gw = gateway_factory({"GATEHOUSE_MAX_BODY": "1k"})
    ck = login(gw, provider).cookies.get("gatehouse")
    with RawConn(gw.port) as c:
        c.send((api_head(gw, ck, "POST", "/api/upload",
                         "Content-Length: 100000\r\nExpect: 100-continue\r\n") + "\r\n").encode())
        assert c.read_response().status == 413


# --------------------------------------------------------------------------- refusals


def test_content_length_and_transfer_encoding(gateway, cookie):
    # SPEC: Refused with 400 and the connection closed: both Content-Length and Transfer-Encoding
    expect_400_and_close(gateway, (api_head(gateway, cookie, "POST", "/api/echo",
                                            "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n")
                                   + "\r\n").encode() + b"0\r\n\r\n")


def test_different_content_lengths(gateway, cookie):
    # SPEC: several different Content-Lengths
    expect_400_and_close(gateway, (api_head(gateway, cookie, "POST", "/api/echo",
                                            "Content-Length: 5\r\nContent-Length: 6\r\n")
                                   + "\r\n").encode() + b"hello!")


def test_bad_chunk_size(gateway, cookie):
    # SPEC: a malformed chunk size
    expect_400_and_close(gateway, (api_head(gateway, cookie, "POST", "/api/echo",
                                            "Transfer-Encoding: chunked\r\n")
                                   + "\r\n").encode() + b"zz\r\nhello\r\n0\r\n\r\n")


def test_obs_fold(gateway):
    # SPEC: obsolete line folding
    expect_400_and_close(gateway, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n\r\n")


def test_space_before_colon(gateway):
    # SPEC: whitespace before a header's colon
    expect_400_and_close(gateway, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A : 1\r\n\r\n")


def test_header_without_colon(gateway):
    # SPEC: a header line without a colon
    expect_400_and_close(gateway, b"GET /healthz HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n")


def test_bare_lf(gateway):
    # SPEC: a request line or header without CRLF structure
    expect_400_and_close(gateway, b"GET /healthz HTTP/1.1\nHost: x\n\n")


def test_bad_request_line(gateway):
    expect_400_and_close(gateway, b"GET\r\n\r\n")


@pytest.mark.parametrize("version", [b"HTTP/2.0", b"HTTP/1.2", b"HTTP/3.0"])
def test_unsupported_http_version(gateway, version):
    # SPEC: 505 for an HTTP version other than 1.0 and 1.1
    r = raw_request(gateway.port, b"GET /healthz " + version + b"\r\nHost: x\r\n\r\n")
    assert r.status == 505


def test_headers_over_16k(gateway):
    # SPEC: 431 for headers over 16 KiB
    big = b"X-Big: " + b"a" * (20 * 1024) + b"\r\n"
    r = raw_request(gateway.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n")
    assert r.status == 431
    many = b"".join(b"X-H%d: %s\r\n" % (i, b"b" * 100) for i in range(200))
    r = raw_request(gateway.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
    assert r.status == 431


def test_headers_under_16k_accepted(gateway):
    big = b"X-Big: " + b"a" * (8 * 1024) + b"\r\n"
    r = raw_request(gateway.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n")
    assert r.status == 200


def test_body_over_max_body(gateway_factory, provider):
    # SPEC: 413 for bodies over the limit (configurable by GATEHOUSE_MAX_BODY)
    gw = gateway_factory({"GATEHOUSE_MAX_BODY": "1k"})
    s = login(gw, provider)
    ck = s.cookies.get("gatehouse")
    ok = gw.post(s, "/api/upload", data=b"a" * 1000)
    assert ok.status_code == 200
    r = raw_request(gw.port, (api_head(gw, ck, "POST", "/api/upload", "Content-Length: 2048\r\n")
                              + "\r\n").encode() + b"a" * 2048)
    assert r.status == 413
    chunked = b"800\r\n" + b"a" * 2048 + b"\r\n0\r\n\r\n"
    with RawConn(gw.port) as c:
        c.send((api_head(gw, ck, "POST", "/api/upload", "Transfer-Encoding: chunked\r\n")
                + "\r\n").encode() + chunked)
        assert c.read_response().status == 413


# --------------------------------------------------------------------------- timeouts


@pytest.mark.slow
def test_slow_head_gets_408_and_close(gateway):
    # SPEC: `408` and close when a request's headers do not arrive within 10 s
    t0 = time.time()
    with RawConn(gateway.port, timeout=20) as c:
        c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        r = c.read_response()
        took = time.time() - t0
        assert r.status == 408
        assert c.is_closed(3.0)
    assert 8 <= took <= 14, f"408 after {took:.1f}s"


def test_idle_keep_alive_still_open_after_5s(gateway):
    # SPEC: idle keep-alive connections close after 60 s (so not after 5 s)
    with RawConn(gateway.port) as c:
        c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert c.read_response().status == 200
        assert not c.is_closed(5.0)
        c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert c.read_response().status == 200


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("E2E_SLOW") != "1",
                    reason="waits 60+ s; run with E2E_SLOW=1")
def test_idle_keep_alive_closed_after_60s(gateway):
    # SPEC: idle keep-alive connections close after 60 s
    with RawConn(gateway.port, timeout=90) as c:
        c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert c.read_response().status == 200
        t0 = time.time()
        assert c.is_closed(75.0)
        assert 55 <= time.time() - t0 <= 75


# --------------------------------------------------------------------------- robustness


def _fuzz_payloads(n=200, seed=1234):
    rnd = random.Random(seed)
    valid = [b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
             b"POST /api/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nX-CSRF: 1\r\n\r\nabc",
             b"POST /api/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
             b"GET /user HTTP/1.1\r\nHost: x\r\nCookie: gatehouse=abc\r\nX-CSRF: 1\r\n\r\n",
             b"GET /callback?code=%%%&state=\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
             b"GET /login?returnTo=%00 HTTP/1.1\r\nHost: x\r\n\r\n"]
    out = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            out.append(bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 2048))))
        else:
            b = bytearray(rnd.choice(valid))
            for _ in range(rnd.randint(1, 8)):
                op = rnd.randint(0, 3)
                pos = rnd.randint(0, len(b))
                if op == 0:
                    b[pos:pos] = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 16)))
                elif op == 1 and b:
                    del b[pos:pos + rnd.randint(1, 8)]
                elif op == 2:
                    b[pos:pos] = rnd.choice([b"\r\n", b"\n", b":", b" ", b"\x00", b"\r\n\r\n",
                                             b"Content-Length: 99999999999999999999\r\n",
                                             b"Transfer-Encoding: chunked\r\n", b"ffffffffffffffff\r\n",
                                             b"-1\r\n", b"%", b"\xff" * 10])
                else:
                    b = b * rnd.randint(1, 3)
            out.append(bytes(b))
    return out


def test_fuzz_never_takes_the_server_down(gateway):
    # SPEC: A malformed request never crashes the process or disturbs other connections.
    keeper = RawConn(gateway.port)
    keeper.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert keeper.read_response().status == 200
    for payload in _fuzz_payloads():
        try:
            with socket.create_connection(("127.0.0.1", gateway.port), timeout=2) as s:
                s.sendall(payload)
                s.shutdown(socket.SHUT_WR)
                s.settimeout(0.3)
                try:
                    s.recv(65536)
                except (socket.timeout, OSError):
                    pass
        except OSError:
            pass
        assert gateway.proc.alive(), f"gateway died on payload {payload[:200]!r}"
    assert requests.get(gateway.url + "/healthz", timeout=5).status_code == 200
    keeper.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert keeper.read_response().status == 200, "an established connection was disturbed"
    keeper.close()


def test_500_concurrent_connections(gateway):
    # SPEC: keep-alive server on sockets; many clients at once
    n = 500
    socks = []
    try:
        for _ in range(n):
            socks.append(socket.create_connection(("127.0.0.1", gateway.port), timeout=30))
        for s in socks:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")

        def read(s):
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return data
                data += chunk

        with ThreadPoolExecutor(64) as ex:
            answers = list(ex.map(read, socks))
    finally:
        for s in socks:
            s.close()
    ok = sum(1 for a in answers if a.startswith(b"HTTP/1.1 200"))
    assert ok == n, f"only {ok}/{n} connections got 200"
    assert requests.get(gateway.url + "/healthz", timeout=5).status_code == 200
