"""HTTPS on the public listener (SPEC "Facing the browser directly: TLS and ACME"), with Python's
`ssl` (OpenSSL) and `openssl s_client` as the browsers, and certificates from a test CA made by
the `openssl` command.

SPEC: `GATEHOUSE_TLS_CERT` and `GATEHOUSE_TLS_KEY` (PEM files): `serve` speaks HTTPS on
`GATEHOUSE_LISTEN` (TLS 1.2 and 1.3 only); the files are re-read when they change (new connections
get the new certificate, none is dropped). `GATEHOUSE_HTTP_REDIRECT_LISTEN=ADDR:PORT`: a plain
listener that answers `308` to the same URL on `https://` and serves ACME http-01 challenges.
`gatehouse_tls_certificate_expiry_timestamp_seconds` in `/metrics`. A key that does not match its
certificate stops start-up (exit 64 naming the variable). Session resumption by tickets whose keys
are the same on every instance sharing `GATEHOUSE_SECRET_KEY`. A client that stalls mid-handshake
is closed like a slow header; hostile TLS clients cost bounded memory and disturb no one else.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest
import requests

import harness
from harness import free_port, login, random_secret_key, run_cli, set_cookie_headers

EXPIRY = "gatehouse_tls_certificate_expiry_timestamp_seconds"


@pytest.fixture(autouse=True)
def _binary():
    from conftest import _require_binary
    _require_binary()


# ---------------------------------------------------------------------------
# certificates
# ---------------------------------------------------------------------------


def openssl(*args, cwd=None):
    subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=cwd)


class TestAuthority:  # not a test class
    __test__ = False

    """A CA, and leaf certificates for localhost/127.0.0.1 signed by it."""

    def __init__(self, work: Path):
        self.work = work
        self.cert = work / "ca.pem"
        self.key = work / "ca.key"
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", str(self.key), "-out", str(self.cert), "-days", "2", "-subj", "/CN=Gatehouse Test CA",
                "-addext", "basicConstraints=critical,CA:true", "-addext", "keyUsage=critical,keyCertSign")
        self.serial = 0

    def leaf(self, name: str, days: int = 30, rsa: bool = False) -> tuple[Path, Path]:
        self.serial += 1
        key, csr, cert = self.work / f"{name}.key", self.work / f"{name}.csr", self.work / f"{name}.pem"
        ext = self.work / f"{name}.ext"
        ext.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        new_key = ["-newkey", "rsa:2048"] if rsa else ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
        openssl("req", *new_key, "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=localhost")
        openssl("x509", "-req", "-in", str(csr), "-CA", str(self.cert), "-CAkey", str(self.key),
                "-set_serial", str(1000 + self.serial), "-days", str(days), "-out", str(cert), "-extfile", str(ext))
        return cert, key


@pytest.fixture(scope="module")
def ca(tmp_path_factory) -> TestAuthority:
    return TestAuthority(tmp_path_factory.mktemp("tls-ca"))


def tls_gateway(provider, upstream, work: Path, ca: TestAuthority, cert: Path, key: Path, env=None, start=True):
    """A gateway serving HTTPS at https://localhost:PORT with `cert` and `key`."""
    base = {"GATEHOUSE_PUBLIC_URL": "https://localhost:{port}", "GATEHOUSE_COOKIE_NAME": "__Host-Http-gatehouse",
            "GATEHOUSE_TLS_CERT": str(cert), "GATEHOUSE_TLS_KEY": str(key)}
    base.update(env or {})
    gw = harness.Gateway(provider, upstream, work, env=base, start=False)
    gw.url = f"https://localhost:{gw.port}"
    gw.verify = str(ca.cert)
    if start:
        gw.start()
    return gw


@pytest.fixture(scope="module")
def tlsgw(provider, upstream, ca, tmp_path_factory):
    work = tmp_path_factory.mktemp("tls-gateway")
    # Copies the gateway reads: the reload test replaces them.
    cert, key = ca.leaf("served")
    served_cert, served_key = work / "cert.pem", work / "key.pem"
    served_cert.write_bytes(cert.read_bytes())
    served_key.write_bytes(key.read_bytes())
    redirect_port = free_port()
    gw = tls_gateway(provider, upstream, work / "gw", ca, served_cert, served_key,
                     env={"GATEHOUSE_HTTP_REDIRECT_LISTEN": f"127.0.0.1:{redirect_port}"})
    gw.cert_file, gw.key_file, gw.redirect_port = served_cert, served_key, redirect_port
    yield gw
    gw.stop()


def https_session(ca: TestAuthority) -> requests.Session:
    """A browser-like session trusting the test CA (not REQUESTS_CA_BUNDLE, which would win)."""
    sess = requests.Session()
    sess.trust_env = False
    sess.verify = str(ca.cert)
    return sess


def client_context(ca: TestAuthority, minimum=None, maximum=None, alpn=None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca.cert))
    if minimum:
        ctx.minimum_version = minimum
    if maximum:
        ctx.maximum_version = maximum
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx


def handshake(port: int, ctx: ssl.SSLContext, session=None) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return ctx.wrap_socket(raw, server_hostname="localhost", session=session)


def get_over(tls: ssl.SSLSocket, path="/healthz", extra=b"") -> bytes:
    """One HTTP/1.1 request on an open TLS socket; the whole answer (Content-Length framed)."""
    tls.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: localhost\r\n" + extra + b"\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = tls.recv(65536)
        assert chunk, f"closed before a head: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":", 1)[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:")))
    while len(body) < length:
        body += tls.recv(65536)
    return head + b"\r\n\r\n" + body


def metric(gw, name: str) -> float:
    text = requests.get(gw.url + "/metrics", verify=gw.verify, timeout=10).text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def not_after(cert: Path) -> int:
    out = subprocess.run(["openssl", "x509", "-in", str(cert), "-noout", "-enddate"],
                         check=True, capture_output=True, text=True).stdout.strip()
    return int(ssl.cert_time_to_seconds(out.split("=", 1)[1]))


def served_fingerprint(port: int, ca: TestAuthority) -> str:
    with handshake(port, client_context(ca)) as tls:
        return hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()


def fingerprint(cert: Path) -> str:
    der = ssl.PEM_cert_to_DER_cert(cert.read_text())
    return hashlib.sha256(der).hexdigest()


# ---------------------------------------------------------------------------
# the listener
# ---------------------------------------------------------------------------


def test_https_answers_with_hsts_and_the_certificate_expiry_in_metrics(tlsgw):
    r = requests.get(tlsgw.url + "/healthz", verify=tlsgw.verify, timeout=10)
    assert r.status_code == 200 and r.text.strip() == "ok"
    assert r.headers["Strict-Transport-Security"].startswith("max-age=")
    assert int(metric(tlsgw, EXPIRY)) == not_after(tlsgw.cert_file)


def test_plain_http_on_the_https_port_gets_no_answer_and_harms_nothing(tlsgw):
    with socket.create_connection(("127.0.0.1", tlsgw.port), timeout=10) as raw:
        raw.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        data = b""
        try:
            while chunk := raw.recv(4096):
                data += chunk
        except ConnectionResetError:
            pass
    assert b"HTTP/1.1 200" not in data
    assert requests.get(tlsgw.url + "/healthz", verify=tlsgw.verify, timeout=10).status_code == 200


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_tls_1_2_and_1_3_are_spoken(tlsgw, ca, version):
    with handshake(tlsgw.port, client_context(ca, minimum=version, maximum=version)) as tls:
        assert tls.version() == {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]
        assert get_over(tls).startswith(b"HTTP/1.1 200")
        if version == ssl.TLSVersion.TLSv1_2:
            # Mozilla "intermediate": forward-secret AEAD suites only.
            name = tls.cipher()[0]
            assert name.startswith(("ECDHE-", "DHE-")) and ("GCM" in name or "CHACHA20" in name), name


@pytest.mark.parametrize("proto", ["-tls1", "-tls1_1"])
def test_tls_1_0_and_1_1_are_refused(tlsgw, proto):
    r = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{tlsgw.port}", proto,
                        "-cipher", "DEFAULT:@SECLEVEL=0"],
                       input=b"", capture_output=True, timeout=20)
    out = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
    assert "Cipher is (NONE)" in out or r.returncode != 0, out[-2000:]
    assert "New, TLSv1" not in out.replace("New, TLSv1.2", "").replace("New, TLSv1.3", ""), out[-2000:]


def test_weak_tls_1_2_ciphers_are_refused(tlsgw):
    r = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{tlsgw.port}", "-tls1_2",
                        "-cipher", "AES128-SHA:AES256-SHA:DES-CBC3-SHA:@SECLEVEL=0"],
                       input=b"", capture_output=True, timeout=20)
    out = r.stdout.decode(errors="replace")
    assert "Cipher is (NONE)" in out or r.returncode != 0, out[-2000:]


def test_alpn_chooses_http_1_1_and_an_h2_only_client_still_gets_http_1_1(tlsgw, ca):
    with handshake(tlsgw.port, client_context(ca, alpn=["h2", "http/1.1"])) as tls:
        assert tls.selected_alpn_protocol() == "http/1.1"
        assert get_over(tls).startswith(b"HTTP/1.1 200")
    with handshake(tlsgw.port, client_context(ca, alpn=["h2"])) as tls:
        assert tls.selected_alpn_protocol() is None
        assert get_over(tls).startswith(b"HTTP/1.1 200")


def test_sni_names_are_accepted(tlsgw, ca):
    ctx = client_context(ca)
    raw = socket.create_connection(("127.0.0.1", tlsgw.port), timeout=10)
    with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
        assert get_over(tls).startswith(b"HTTP/1.1 200")


def test_login_api_upload_and_big_download_over_https(tlsgw, provider, ca):
    sess = https_session(ca)
    login(tlsgw, provider, sess=sess)
    cookies = set_cookie_headers(sess.login_result.callback_response)
    session_cookie = next(c for c in cookies if c.startswith("__Host-Http-gatehouse="))
    assert "Secure" in session_cookie and "HttpOnly" in session_cookie
    user = tlsgw.get(sess, "/user", timeout=10)
    assert user.status_code == 200 and user.json()["sub"] == "alice", user.text
    body = os.urandom(3 << 20)
    up = tlsgw.post(sess, "/api/upload", data=body, timeout=60)
    assert up.status_code == 200, up.text[:300]
    assert up.json()["bytes"] == len(body) and up.json()["sha256"] == hashlib.sha256(body).hexdigest()
    big = tlsgw.get(sess, "/api/big?mb=8", timeout=60)
    assert big.status_code == 200 and len(big.content) == 8 << 20


def test_pipelined_requests_over_one_tls_connection(tlsgw, ca):
    with handshake(tlsgw.port, client_context(ca)) as tls:
        request = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
        tls.sendall(request * 20)
        data = b""
        deadline = time.monotonic() + 15
        while data.count(b"HTTP/1.1 200") < 20 and time.monotonic() < deadline:
            chunk = tls.recv(65536)
            if not chunk:
                break
            data += chunk
        assert data.count(b"HTTP/1.1 200") == 20


def test_websocket_over_https(provider, upstream, ca, tmp_path):
    from test_websockets import WSUpstream
    from websockets.sync.client import connect
    cert, key = ca.leaf("ws")
    with WSUpstream(tmp_path / "ws-upstream") as ws_up:
        gw = tls_gateway(provider, upstream, tmp_path / "gw", ca, cert, key,
                         env={"GATEHOUSE_ROUTES": f"/api={upstream.url},/ws={ws_up.url}"})
        try:
            sess = https_session(ca)
            login(gw, provider, sess=sess)
            cookie = f"{gw.cookie_name}={sess.cookies.get(gw.cookie_name)}"
            with connect(f"wss://localhost:{gw.port}/ws/echo", ssl=client_context(ca), origin=gw.public_url,
                         additional_headers={"Cookie": cookie}, max_size=None, compression=None,
                         open_timeout=15, close_timeout=5) as ws:
                ws.send("over tls")
                assert ws.recv(timeout=10) == "over tls"
                message = os.urandom(2 << 20)
                ws.send(message)
                assert ws.recv(timeout=30) == message
        finally:
            gw.stop()


# ---------------------------------------------------------------------------
# certificate files
# ---------------------------------------------------------------------------


def test_replaced_files_serve_new_connections_and_keep_the_old_ones(tlsgw, ca):
    old = fingerprint(tlsgw.cert_file)
    assert served_fingerprint(tlsgw.port, ca) == old
    kept = handshake(tlsgw.port, client_context(ca))
    assert get_over(kept).startswith(b"HTTP/1.1 200")
    cert, key = ca.leaf("renewed", days=60)
    # As certbot or cert-manager do: new files renamed over the old ones.
    for source, target in ((key, tlsgw.key_file), (cert, tlsgw.cert_file)):
        temporary = target.with_suffix(".new")
        temporary.write_bytes(source.read_bytes())
        temporary.rename(target)
    deadline = time.monotonic() + 15
    while served_fingerprint(tlsgw.port, ca) != fingerprint(cert):
        assert time.monotonic() < deadline, "the replaced certificate was not served within 15 s"
        time.sleep(0.3)
    assert get_over(kept).startswith(b"HTTP/1.1 200"), "a connection made before the change was dropped"
    kept.close()
    assert int(metric(tlsgw, EXPIRY)) == not_after(cert)
    assert "TLS certificate reloaded" in tlsgw.proc.log_text()


def test_a_broken_replacement_keeps_the_current_certificate(tlsgw, ca):
    current = served_fingerprint(tlsgw.port, ca)
    saved = tlsgw.key_file.read_bytes()
    other_cert, other_key = ca.leaf("mismatch")
    try:
        tlsgw.key_file.write_bytes(other_key.read_bytes())
        deadline = time.monotonic() + 15
        while "cannot serve; the previous certificate stays" not in tlsgw.proc.log_text():
            assert time.monotonic() < deadline, "the mismatched key was not noticed"
            time.sleep(0.3)
        assert served_fingerprint(tlsgw.port, ca) == current
        assert requests.get(tlsgw.url + "/healthz", verify=tlsgw.verify, timeout=10).status_code == 200
    finally:
        tlsgw.key_file.write_bytes(saved)


def bad_start(provider, upstream, tmp_path, env) -> subprocess.CompletedProcess:
    gw = harness.Gateway(provider, upstream, tmp_path, env=env, start=False, register=False)
    return run_cli(["serve"], env=gw.env, timeout=30)


def test_a_key_that_is_not_the_certificates_stops_start_up(provider, upstream, ca, tmp_path):
    cert, _ = ca.leaf("a")
    _, other = ca.leaf("b")
    r = bad_start(provider, upstream, tmp_path, {"GATEHOUSE_TLS_CERT": str(cert), "GATEHOUSE_TLS_KEY": str(other)})
    assert r.returncode == 64, r.stderr
    assert "GATEHOUSE_TLS_KEY" in r.stderr and "does not belong" in r.stderr
    assert "PRIVATE KEY" not in r.stderr + r.stdout


@pytest.mark.parametrize("case", ["missing-cert", "cert-not-pem", "key-not-pem", "cert-only", "key-only"])
def test_unusable_files_stop_start_up_naming_the_variable(provider, upstream, ca, tmp_path, case):
    cert, key = ca.leaf("c")
    junk = tmp_path / "junk.pem"
    junk.write_text("not a pem file\n")
    env, named = {
        "missing-cert": ({"GATEHOUSE_TLS_CERT": str(tmp_path / "nope.pem"), "GATEHOUSE_TLS_KEY": str(key)}, "GATEHOUSE_TLS_CERT"),
        "cert-not-pem": ({"GATEHOUSE_TLS_CERT": str(junk), "GATEHOUSE_TLS_KEY": str(key)}, "GATEHOUSE_TLS_CERT"),
        "key-not-pem": ({"GATEHOUSE_TLS_CERT": str(cert), "GATEHOUSE_TLS_KEY": str(junk)}, "GATEHOUSE_TLS_KEY"),
        "cert-only": ({"GATEHOUSE_TLS_CERT": str(cert)}, "GATEHOUSE_TLS_KEY"),
        "key-only": ({"GATEHOUSE_TLS_KEY": str(key)}, "GATEHOUSE_TLS_CERT"),
    }[case]
    r = bad_start(provider, upstream, tmp_path, env)
    assert r.returncode == 64, r.stderr
    assert named in r.stderr, r.stderr


def test_an_rsa_certificate_serves_too(provider, upstream, ca, tmp_path):
    cert, key = ca.leaf("rsa", rsa=True)
    gw = tls_gateway(provider, upstream, tmp_path, ca, cert, key)
    try:
        with handshake(gw.port, client_context(ca, maximum=ssl.TLSVersion.TLSv1_2)) as tls:
            assert "RSA" in tls.cipher()[0]
            assert get_over(tls).startswith(b"HTTP/1.1 200")
    finally:
        gw.stop()


# ---------------------------------------------------------------------------
# resumption
# ---------------------------------------------------------------------------


def resumed_at(port: int, ctx: ssl.SSLContext, session) -> bool:
    with handshake(port, ctx, session=session) as tls:
        get_over(tls)
        return tls.session_reused


def fresh_session(port: int, ctx: ssl.SSLContext):
    with handshake(port, ctx) as tls:
        # TLS 1.3 tickets arrive after the handshake: a request and its answer bring them in.
        get_over(tls)
        return tls.session


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_sessions_resume_on_every_instance_sharing_the_secret_key(provider, upstream, ca, tmp_path, version):
    cert, key = ca.leaf("shared")
    secret = random_secret_key()
    a = tls_gateway(provider, upstream, tmp_path / "a", ca, cert, key, env={"GATEHOUSE_SECRET_KEY": secret})
    b = tls_gateway(provider, upstream, tmp_path / "b", ca, cert, key, env={"GATEHOUSE_SECRET_KEY": secret})
    c = tls_gateway(provider, upstream, tmp_path / "c", ca, cert, key)
    try:
        ctx = client_context(ca, minimum=version, maximum=version)
        session = fresh_session(a.port, ctx)
        assert resumed_at(a.port, ctx, session), "no resumption at the same instance"
        assert resumed_at(b.port, ctx, fresh_session(a.port, ctx)), "no resumption at an instance with the same key"
        assert not resumed_at(c.port, ctx, fresh_session(a.port, ctx)), "resumed with another instance's secret key"
    finally:
        for gw in (a, b, c):
            gw.stop()


# ---------------------------------------------------------------------------
# the redirect listener
# ---------------------------------------------------------------------------


def test_redirect_listener_answers_308_to_the_same_url_on_https(tlsgw):
    base = f"http://127.0.0.1:{tlsgw.redirect_port}"
    for method in ("GET", "HEAD", "POST"):
        r = requests.request(method, base + "/some/page?x=1&y=%20", allow_redirects=False, timeout=10)
        assert r.status_code == 308, (method, r.status_code)
        assert r.headers["Location"] == f"https://localhost:{tlsgw.port}/some/page?x=1&y=%20"
    followed = requests.get(base + "/healthz", timeout=10, verify=tlsgw.verify)
    assert followed.status_code == 200 and followed.url.startswith("https://localhost:")


def test_redirect_listener_never_redirects_to_a_host_it_was_sent(tlsgw):
    base = f"http://127.0.0.1:{tlsgw.redirect_port}"
    r = requests.get(base + "/x", headers={"Host": "evil.example"}, allow_redirects=False, timeout=10)
    assert r.status_code == 308 and r.headers["Location"] == f"https://localhost:{tlsgw.port}/x"
    with socket.create_connection(("127.0.0.1", tlsgw.redirect_port), timeout=10) as raw:
        raw.sendall(b"GET //evil.example/x HTTP/1.1\r\nHost: localhost\r\n\r\n")
        head = raw.recv(4096).decode(errors="replace")
    location = next(line for line in head.split("\r\n") if line.lower().startswith("location:"))
    assert location.split(":", 1)[1].strip().startswith(f"https://localhost:{tlsgw.port}/")
    assert "//evil.example" not in location.split(f"{tlsgw.port}", 1)[1]


def test_unknown_acme_challenges_are_404(tlsgw):
    r = requests.get(f"http://127.0.0.1:{tlsgw.redirect_port}/.well-known/acme-challenge/nothing-here", timeout=10,
                     allow_redirects=False)
    assert r.status_code == 404 and r.json()["error"] == "not_found"


def test_redirect_listener_needs_a_port_of_its_own(provider, upstream, ca, tmp_path):
    cert, key = ca.leaf("port")
    gw = harness.Gateway(provider, upstream, tmp_path, start=False, register=False,
                         env={"GATEHOUSE_TLS_CERT": str(cert), "GATEHOUSE_TLS_KEY": str(key)})
    gw.env["GATEHOUSE_HTTP_REDIRECT_LISTEN"] = gw.env["GATEHOUSE_LISTEN"]
    r = run_cli(["serve"], env=gw.env, timeout=30)
    assert r.returncode == 64 and "GATEHOUSE_HTTP_REDIRECT_LISTEN" in r.stderr


# ---------------------------------------------------------------------------
# hostile clients
# ---------------------------------------------------------------------------


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_stalled_handshake_is_closed_like_a_slow_head(tlsgw, ca):
    stalled = socket.create_connection(("127.0.0.1", tlsgw.port), timeout=20)
    # The first bytes of a ClientHello record, and nothing more.
    stalled.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    started = time.monotonic()
    assert requests.get(tlsgw.url + "/healthz", verify=tlsgw.verify, timeout=10).status_code == 200
    try:
        assert stalled.recv(4096) == b""
    except ConnectionResetError:
        pass
    waited = time.monotonic() - started
    assert 5 < waited < 19, f"closed after {waited:.1f} s (the head timeout is 10 s)"


def test_garbage_records_and_a_handshake_flood_cost_bounded_memory(tlsgw, ca):
    pid = tlsgw.proc.pid
    before = rss_kib(pid)
    garbage = []
    for i in range(200):
        s = socket.create_connection(("127.0.0.1", tlsgw.port), timeout=10)
        # A record header announcing 16 KiB, then junk; or a plausible record of noise.
        s.sendall(b"\x16\x03\x03\x40\x00" + os.urandom(1024) if i % 2 else os.urandom(2048))
        garbage.append(s)
    flood = []
    for _ in range(300):
        s = socket.create_connection(("127.0.0.1", tlsgw.port), timeout=10)
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(32))
        flood.append(s)
    # Everyone else is served meanwhile.
    with handshake(tlsgw.port, client_context(ca)) as tls:
        assert get_over(tls).startswith(b"HTTP/1.1 200")
    closed = 0
    for s in garbage:
        try:
            s.settimeout(10)
            data = s.recv(4096)
            # An alert at most, never an HTTP answer; then the end.
            assert not data.startswith(b"HTTP/")
            while data:
                data = s.recv(4096)
            closed += 1
        except (ConnectionResetError, BrokenPipeError):
            closed += 1
        finally:
            s.close()
    assert closed == len(garbage)
    grown = rss_kib(pid) - before
    assert grown < 48 * 1024, f"RSS grew by {grown} KiB for 500 hostile connections"
    for s in flood:
        s.close()
    assert requests.get(tlsgw.url + "/healthz", verify=tlsgw.verify, timeout=10).status_code == 200


def test_renegotiation_is_refused_and_others_are_still_served(tlsgw):
    # `R` on a line of its own asks s_client to renegotiate (TLS 1.2; not with -quiet, which turns
    # its commands off and would send the letter as data).
    p = subprocess.Popen(["openssl", "s_client", "-connect", f"127.0.0.1:{tlsgw.port}", "-tls1_2"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    time.sleep(1.0)
    p.stdin.write(b"R\n")
    p.stdin.flush()
    time.sleep(1.5)
    text = p.communicate(timeout=20)[0].decode(errors="replace")  # closes stdin: s_client ends
    assert "RENEGOTIATING" in text, text[-1500:]
    assert "no renegotiation" in text, text[-1500:]
    assert requests.get(tlsgw.url + "/healthz", verify=tlsgw.verify, timeout=10).status_code == 200
