"""Certificates from ACME (SPEC "Facing the browser directly: TLS and ACME"), against Debian's
`pebble` (Let's Encrypt's test ACME server) with `pebble-challtestsrv` as its DNS: every name
resolves to 127.0.0.1, and pebble really validates each http-01 challenge by fetching it from the
gateway's redirect listener.

SPEC: `GATEHOUSE_ACME_DIRECTORY`, `_DOMAINS`, `_EMAIL`, `_CA_BUNDLE`: the certificate is obtained
and renewed (at two thirds of its lifetime) by ACME (RFC 8555, http-01) without a restart; the
account key and certificate live in the session store, so every instance serves the same
certificate and one instance orders at a time. `/readyz` says when no certificate is held;
`gatehouse_tls_certificate_expiry_timestamp_seconds` in `/metrics`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import sqlite3
import ssl
import subprocess
import time
from pathlib import Path

import pytest
import requests

import harness
from harness import Proc, free_port, random_secret_key, run_cli

pytestmark = pytest.mark.skipif(shutil.which("pebble") is None, reason="needs Debian's pebble (e2e/setup.sh installs it)")

DOMAINS = ["gatehouse.test", "www.gatehouse.test"]
EXPIRY = "gatehouse_tls_certificate_expiry_timestamp_seconds"


@pytest.fixture(autouse=True)
def _binary():
    from conftest import _require_binary
    _require_binary()


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


class Pebble:
    """pebble and its DNS, validating http-01 on `http_port` (the gateway's redirect listener)."""

    def __init__(self, work: Path, validity: int | None = None, name="pebble", tls_port: int | None = None):
        work.mkdir(parents=True, exist_ok=True)
        self.work = work
        # Pebble's own HTTPS listener: a certificate from a CA of ours (GATEHOUSE_ACME_CA_BUNDLE).
        self.ca, ca_key = work / "ca.pem", work / "ca.key"
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(ca_key),
                "-out", str(self.ca), "-days", "2", "-subj", "/CN=pebble listener CA",
                "-addext", "basicConstraints=critical,CA:true", "-addext", "keyUsage=critical,keyCertSign")
        key, csr, cert, ext = work / "p.key", work / "p.csr", work / "p.pem", work / "p.ext"
        ext.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(key),
                "-out", str(csr), "-subj", "/CN=localhost")
        openssl("x509", "-req", "-in", str(csr), "-CA", str(self.ca), "-CAkey", str(ca_key), "-set_serial", "9",
                "-days", "2", "-out", str(cert), "-extfile", str(ext))
        self.port, self.management, dns = free_port(), free_port(), free_port()
        self.http_port = free_port()
        self.tls_port = tls_port or free_port()
        config = {"listenAddress": f"127.0.0.1:{self.port}", "managementListenAddress": f"127.0.0.1:{self.management}",
                  "certificate": str(cert), "privateKey": str(key), "httpPort": self.http_port, "tlsPort": self.tls_port,
                  "ocspResponderURL": "", "externalAccountBindingRequired": False}
        if validity:
            config["certificateValidityPeriod"] = validity
        (work / "pebble.json").write_text(json.dumps({"pebble": config}))
        self.dns = Proc(name + "-dns", ["pebble-challtestsrv", "-dns01", f"127.0.0.1:{dns}", "-defaultIPv6", "",
                                        "-http01", "", "-https01", "", "-tlsalpn01", "",
                                        "-management", f"127.0.0.1:{free_port()}"]).start()
        # Pebble's default: 5 % of valid nonces refused, so the client's badNonce retry is exercised.
        env = {**os.environ, "PEBBLE_VA_NOSLEEP": "1", "PEBBLE_WFE_NONCEREJECT": "5"}
        self.proc = Proc(name, ["pebble", "-config", str(work / "pebble.json"), "-dnsserver", f"127.0.0.1:{dns}"],
                         env=env).start()
        self.directory = f"https://127.0.0.1:{self.port}/dir"
        deadline = time.monotonic() + 20
        while True:
            try:
                requests.get(self.directory, verify=str(self.ca), timeout=2)
                break
            except requests.RequestException:
                assert time.monotonic() < deadline, self.proc.log_text()[-3000:]
                time.sleep(0.1)

    def roots(self) -> Path:
        """The roots pebble issues under (its management API), as a bundle."""
        bundle = self.work / "issuing-roots.pem"
        text = requests.get(f"https://127.0.0.1:{self.management}/roots/0", verify=str(self.ca), timeout=5).text
        bundle.write_text(text)
        return bundle

    def validations(self, kind="HTTP") -> int:
        return self.proc.log_text().count(f"Attempting to validate w/ {kind}")

    def stop(self):
        self.proc.stop()
        self.dns.stop()


@pytest.fixture(scope="module")
def pebble(tmp_path_factory):
    p = Pebble(tmp_path_factory.mktemp("pebble"))
    yield p
    p.stop()


def acme_env(pebble: Pebble, db: str | None = None, **extra) -> dict:
    env = {"GATEHOUSE_PUBLIC_URL": f"https://{DOMAINS[0]}:{{port}}", "GATEHOUSE_COOKIE_NAME": "__Host-Http-gatehouse",
           "GATEHOUSE_ACME_DIRECTORY": pebble.directory, "GATEHOUSE_ACME_DOMAINS": ",".join(DOMAINS),
           "GATEHOUSE_ACME_EMAIL": "ops@example.com", "GATEHOUSE_ACME_CA_BUNDLE": str(pebble.ca),
           "GATEHOUSE_HTTP_REDIRECT_LISTEN": f"127.0.0.1:{pebble.http_port}"}
    if db:
        env["GATEHOUSE_DATABASE"] = db
    env.update(extra)
    return env


def acme_gateway(provider, upstream, work: Path, env: dict, start=True):
    gw = harness.Gateway(provider, upstream, work, env=env, start=False)
    gw.url = f"https://127.0.0.1:{gw.port}"
    gw.verify = False
    if start:
        gw.start(wait_ready=False)
    return gw


def served(port: int, verify: Path | None = None, name=DOMAINS[0]) -> dict:
    """The certificate served for `name` at 127.0.0.1:port: its DER hash, SANs and issuer."""
    ctx = ssl.create_default_context(cafile=str(verify)) if verify else ssl._create_unverified_context()
    if not verify:
        ctx.check_hostname = False
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=name) as tls:
            der = tls.getpeercert(binary_form=True)
    text = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-issuer", "-ext", "subjectAltName", "-enddate"],
                          input=der, capture_output=True, check=True).stdout.decode()
    return {"sha256": hashlib.sha256(der).hexdigest(), "text": text,
            "not_after": int(ssl.cert_time_to_seconds(text.split("notAfter=", 1)[1].strip()))}


def wait_for_issued(gw, timeout=60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        assert gw.proc.alive(), gw.proc.log_text()[-4000:]
        try:
            cert = served(gw.port)
            if "Pebble" in cert["text"]:
                return cert
        except OSError:
            pass
        assert time.monotonic() < deadline, "no ACME certificate within the time:\n" + gw.proc.log_text()[-4000:]
        time.sleep(0.3)


def get(gw, path):
    return requests.get(gw.url + path, verify=False, timeout=10)


def metric(gw, name) -> float:
    for line in get(gw, "/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def orders(gw) -> int:
    return gw.proc.log_text().count("ordering a TLS certificate by ACME")


# ---------------------------------------------------------------------------


def test_a_certificate_is_ordered_validated_over_http_01_and_served(pebble, provider, upstream, tmp_path):
    validated = pebble.validations()
    gw = acme_gateway(provider, upstream, tmp_path / "gw", acme_env(pebble))
    try:
        cert = wait_for_issued(gw)
        # Verified against the root pebble issued under, for both names.
        roots = pebble.roots()
        for name in DOMAINS:
            assert served(gw.port, verify=roots, name=name)["sha256"] == cert["sha256"]
        assert "DNS:gatehouse.test" in cert["text"] and "DNS:www.gatehouse.test" in cert["text"]
        assert pebble.validations() - validated >= len(DOMAINS), "pebble did not validate each name over http-01"
        assert get(gw, "/readyz").status_code == 200
        assert int(metric(gw, EXPIRY)) == cert["not_after"]
        assert orders(gw) == 1
        assert "TLS certificate obtained by ACME" in gw.proc.log_text()
        r = requests.get(f"http://127.0.0.1:{pebble.http_port}/x?y=1", allow_redirects=False, timeout=10,
                         headers={"Host": "www.gatehouse.test"})
        assert r.status_code == 308 and r.headers["Location"] == "https://www.gatehouse.test/x?y=1"
        # Nothing secret in the log.
        assert "PRIVATE KEY" not in gw.proc.log_text()
    finally:
        gw.stop()


def test_the_store_keeps_it_sealed_and_a_restart_serves_it_without_ordering(pebble, provider, upstream, tmp_path):
    gw = acme_gateway(provider, upstream, tmp_path / "gw", acme_env(pebble))
    try:
        first = wait_for_issued(gw)
        gw.stop()
        with sqlite3.connect(gw.db) as db:
            rows = db.execute("SELECT name, sealed, not_after FROM tls_certificates").fetchall()
        assert len(rows) == 1 and rows[0][2] == first["not_after"]
        sealed = bytes(rows[0][1])
        assert b"PRIVATE KEY" not in sealed and b"CERTIFICATE" not in sealed and b"account" not in sealed
        gw.start(wait_ready=False)
        again = wait_for_issued(gw)
        assert again["sha256"] == first["sha256"]
        assert orders(gw) == 0, "a restart ordered again instead of serving the stored certificate"
    finally:
        gw.stop()


def test_two_instances_on_one_store_share_one_order(pebble, provider, upstream, tmp_path):
    db = str(tmp_path / "shared.sqlite")
    secret = random_secret_key()
    env = acme_env(pebble, db=db, GATEHOUSE_SECRET_KEY=secret)
    # Pebble validates at A's redirect listener only, as a balancer might send it to any one
    # instance: whichever instance orders, A answers for the account (its thumbprint is in the store).
    a = acme_gateway(provider, upstream, tmp_path / "a", env, start=False)
    b = acme_gateway(provider, upstream, tmp_path / "b",
                     {**env, "GATEHOUSE_HTTP_REDIRECT_LISTEN": f"127.0.0.1:{free_port()}"}, start=False)
    try:
        a.start(wait_ready=False)
        b.start(wait_ready=False)
        cert_a, cert_b = wait_for_issued(a), wait_for_issued(b)
        assert cert_a["sha256"] == cert_b["sha256"]
        assert orders(a) + orders(b) == 1, "both instances ordered"
    finally:
        a.stop()
        b.stop()


def test_renewal_at_two_thirds_of_the_lifetime_without_a_restart(provider, upstream, tmp_path):
    short = Pebble(tmp_path / "pebble", validity=30, name="pebble-short")
    try:
        gw = acme_gateway(provider, upstream, tmp_path / "gw", acme_env(short))
        try:
            first = wait_for_issued(gw)
            kept = socket.create_connection(("127.0.0.1", gw.port), timeout=10)
            kept_tls = ssl._create_unverified_context().wrap_socket(kept, server_hostname=DOMAINS[0])
            # A kept-alive connection (idle, not a fresh one the head timeout would end).
            kept_tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: gatehouse.test\r\n\r\n")
            assert kept_tls.recv(4096).startswith(b"HTTP/1.1 200")
            deadline = time.monotonic() + 45
            while (now := served(gw.port))["sha256"] == first["sha256"]:
                assert time.monotonic() < deadline, "not renewed:\n" + gw.proc.log_text()[-3000:]
                time.sleep(0.5)
            assert now["not_after"] > first["not_after"]
            # Renewed before the old one expired.
            assert time.time() < first["not_after"]
            kept_tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: gatehouse.test\r\n\r\n")
            assert kept_tls.recv(4096).startswith(b"HTTP/1.1 200"), "a connection from before the renewal was dropped"
            kept_tls.close()
            assert int(metric(gw, EXPIRY)) == now["not_after"]
        finally:
            gw.stop()
    finally:
        short.stop()


def test_an_unreachable_ca_leaves_a_placeholder_and_readyz_says_so(provider, upstream, tmp_path, pebble):
    env = acme_env(pebble, GATEHOUSE_ACME_DIRECTORY=f"https://127.0.0.1:{free_port()}/dir")
    gw = acme_gateway(provider, upstream, tmp_path / "gw", env)
    try:
        deadline = time.monotonic() + 30
        while "ACME certificate order failed" not in gw.proc.log_text():
            assert time.monotonic() < deadline and gw.proc.alive(), gw.proc.log_text()[-3000:]
            time.sleep(0.2)
        placeholder = served(gw.port)
        assert "Pebble" not in placeholder["text"]
        ready = get(gw, "/readyz")
        assert ready.status_code == 503 and ready.json()["error"] == "tls_certificate_missing"
        assert metric(gw, EXPIRY) == 0
        # A browser trusting the system's CAs trusts nothing served now.
        with pytest.raises(ssl.SSLError):
            served(gw.port, verify=Path("/etc/ssl/certs/ca-certificates.crt"))
    finally:
        gw.stop()


@pytest.mark.parametrize("env,named", [
    ({"GATEHOUSE_ACME_DIRECTORY": "http://127.0.0.1:1/dir"}, "GATEHOUSE_ACME_DIRECTORY"),
    ({"GATEHOUSE_ACME_DOMAINS": ""}, "GATEHOUSE_ACME_DOMAINS"),
    ({"GATEHOUSE_ACME_DOMAINS": "*.gatehouse.test"}, "GATEHOUSE_ACME_DOMAINS"),
    ({"GATEHOUSE_ACME_DOMAINS": "bad_name.test"}, "GATEHOUSE_ACME_DOMAINS"),
    ({"GATEHOUSE_ACME_EMAIL": "not-an-email"}, "GATEHOUSE_ACME_EMAIL"),
    ({"GATEHOUSE_TLS_CERT": "/etc/hostname", "GATEHOUSE_TLS_KEY": "/etc/hostname"}, "GATEHOUSE_ACME_DIRECTORY"),
])
def test_bad_acme_settings_stop_start_up(provider, upstream, tmp_path, pebble, env, named):
    gw = harness.Gateway(provider, upstream, tmp_path, env=acme_env(pebble, **env), start=False, register=False)
    r = run_cli(["serve"], env=gw.env, timeout=30)
    assert r.returncode == 64, r.stderr
    assert named in r.stderr, r.stderr


def test_acme_variables_without_a_directory_stop_start_up(provider, upstream, tmp_path):
    gw = harness.Gateway(provider, upstream, tmp_path, env={"GATEHOUSE_ACME_DOMAINS": "gatehouse.test"},
                         start=False, register=False)
    r = run_cli(["serve"], env=gw.env, timeout=30)
    assert r.returncode == 64 and "GATEHOUSE_ACME_DOMAINS" in r.stderr


def test_two_instances_on_postgresql_share_one_order_and_a_restart_keeps_it(pebble, provider, upstream, tmp_path):
    from pg_server import PgServer
    pg = PgServer(name="postgres-acme")
    try:
        uri = pg.create_database()
        env = acme_env(pebble, db=uri, GATEHOUSE_SECRET_KEY=random_secret_key())
        a = acme_gateway(provider, upstream, tmp_path / "a", env, start=False)
        b = acme_gateway(provider, upstream, tmp_path / "b",
                         {**env, "GATEHOUSE_HTTP_REDIRECT_LISTEN": f"127.0.0.1:{free_port()}"}, start=False)
        try:
            a.start(wait_ready=False)
            b.start(wait_ready=False)
            cert_a, cert_b = wait_for_issued(a), wait_for_issued(b)
            assert cert_a["sha256"] == cert_b["sha256"]
            assert orders(a) + orders(b) == 1, "both instances ordered"
            sealed = pg.psql("SELECT encode(sealed, 'escape') FROM tls_certificates", database=uri.rsplit("/", 1)[1])
            assert "PRIVATE KEY" not in sealed and "CERTIFICATE" not in sealed
            b.stop()
            b.start(wait_ready=False)
            assert wait_for_issued(b)["sha256"] == cert_a["sha256"] and orders(b) == 0
        finally:
            a.stop()
            b.stop()
    finally:
        pg.destroy()


def test_without_a_redirect_listener_names_are_proved_with_tls_alpn_01(provider, upstream, tmp_path):
    port = free_port()
    alpn = Pebble(tmp_path / "pebble", name="pebble-alpn", tls_port=port)
    try:
        env = acme_env(alpn, GATEHOUSE_HTTP_REDIRECT_LISTEN=None, GATEHOUSE_LISTEN=f"127.0.0.1:{port}")
        gw = acme_gateway(provider, upstream, tmp_path / "gw", env, start=False)
        gw.port = port
        gw.url = f"https://127.0.0.1:{port}"
        gw.start(wait_ready=False)
        try:
            cert = wait_for_issued(gw)
            assert "DNS:gatehouse.test" in cert["text"] and "DNS:www.gatehouse.test" in cert["text"]
            # Each name validated, none over HTTP (pebble logs only its HTTP attempts by kind).
            assert alpn.proc.log_text().count("set VALID by completed challenge") >= len(DOMAINS)
            assert alpn.validations("HTTP") == 0
            assert "ACME certificate order failed" not in gw.proc.log_text()
            # A validator's connection for a name with no pending challenge is refused; browsers are unaffected.
            ctx = ssl._create_unverified_context()
            ctx.set_alpn_protocols(["acme-tls/1"])
            with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
                with pytest.raises(ssl.SSLError):
                    ctx.wrap_socket(raw, server_hostname=DOMAINS[0]).do_handshake()
            assert get(gw, "/healthz").status_code == 200
        finally:
            gw.stop()
    finally:
        alpn.stop()
