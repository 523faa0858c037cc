"""What a running gateway executes, for the release link's function order.

Usage: scenario.py WORK_DIR   (GATEHOUSE_BIN names the binary; bench/linkorder/record runs it under
callgrind and turns the functions it saw into Sources/GatehouseCLI/gatehouse.order)

The gateway is set up like bench/serve_profile.py (e2e's Authlib provider, one route, SQLite) but
the route points at e2e's upstream, so the run covers: start, migrations, discovery and JWKS,
/healthz and /readyz, logins (/login, /callback, token and userinfo calls), proxied /api calls
with a session, /user, the static SPA with and without gzip, /metrics, logout, and shutdown.
Log levels info and warning both run (a level changes which logging code runs). A third run serves
HTTPS (GATEHOUSE_TLS_CERT/KEY): handshakes, a login and proxied calls over TLS.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

WORK = Path(sys.argv[1])
os.environ.setdefault("E2E_ARTIFACTS", str(WORK / "artifacts"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "e2e"))

import requests  # noqa: E402

import harness  # noqa: E402

CSRF = {"X-CSRF": "1"}


def exercise(gateway: harness.Gateway, provider: harness.Provider) -> None:
    for path in ("/healthz", "/readyz", "/metrics"):
        requests.get(gateway.url + path, timeout=10)
    for i in range(3):
        session = harness.login(gateway, provider, username=f"order{i}")
        for _ in range(30):
            answer = session.get(gateway.url + "/api/hello", headers=CSRF, timeout=10)
            assert answer.status_code == 200, answer.status_code
        session.get(gateway.url + "/user", timeout=10)
        if i == 2:
            session.post(gateway.url + "/logout", headers=CSRF, timeout=10, allow_redirects=False)
    for _ in range(20):
        requests.get(gateway.url + "/healthz", timeout=10)
        requests.get(gateway.url + "/app.js", headers={"Accept-Encoding": "gzip"}, timeout=10)
        requests.get(gateway.url + "/", timeout=10)
    requests.get(gateway.url + "/api/hello", timeout=10)  # no session: 401


def exercise_tls(gateway: harness.Gateway, provider: harness.Provider, ca: str) -> None:
    browser = requests.Session()
    browser.trust_env = False
    browser.verify = ca
    for _ in range(5):
        fresh = requests.Session()
        fresh.trust_env = False
        fresh.get(gateway.url + "/healthz", verify=ca, timeout=10)
    session = harness.login(gateway, provider, username="order-tls", sess=browser)
    for _ in range(30):
        answer = session.get(gateway.url + "/api/hello", headers=CSRF, timeout=10)
        assert answer.status_code == 200, answer.status_code
    session.get(gateway.url + "/user", timeout=10)


def start_tls_gateway(provider: harness.Provider, upstream: harness.Upstream) -> tuple[harness.Gateway, str]:
    import subprocess
    folder = WORK / "tls"
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
    gateway = harness.Gateway(provider, upstream, WORK / "gateway-tls", start=False,
                              env={"GATEHOUSE_LOG_LEVEL": "warning", "GATEHOUSE_PUBLIC_URL": "https://localhost:{port}",
                                   "GATEHOUSE_COOKIE_NAME": "__Host-Http-gatehouse",
                                   "GATEHOUSE_TLS_CERT": str(cert), "GATEHOUSE_TLS_KEY": str(key)})
    gateway.url = f"https://localhost:{gateway.port}"
    gateway.verify = str(cert)
    gateway.start()
    return gateway, str(cert)


def main() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    provider = harness.Provider(WORK / "provider")
    upstream = harness.Upstream(WORK / "upstream")
    try:
        for level in ("info", "warning"):
            gateway = harness.Gateway(provider, upstream, WORK / f"gateway-{level}", start=False,
                                      env={"GATEHOUSE_LOG_LEVEL": level})
            gateway.start()
            gateway.wait_ready()
            try:
                exercise(gateway, provider)
            finally:
                gateway.stop()
        gateway, ca = start_tls_gateway(provider, upstream)
        try:
            exercise_tls(gateway, provider, ca)
        finally:
            gateway.stop()
    finally:
        upstream.stop()
        provider.stop()


if __name__ == "__main__":
    main()
