"""Provider-facing hardening (review issue 10 items 6 and 8, issue 17).

SPEC /callback: "502 when the provider is unreachable"; /readyz: "503" until "the provider's
metadata is loaded"; `gatehouse check`: "exit 0 or explain"; "Invalid configuration stops the
process at start with exit 64 and a message naming the variable."
"""
from __future__ import annotations

import concurrent.futures
import http.server
import json
import socket
import threading
import time

import pytest
import requests

import harness


class CountingListener:
    """A 'provider' that is down: it accepts TCP connections, counts them and closes them."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.accepts = 0
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepts += 1
            conn.close()

    def count(self) -> int:
        with self.lock:
            return self.accepts

    def close(self):
        self.closed = True
        self.sock.close()


class DiscoveryServer:
    """Serves one discovery document (a provider whose metadata does not fit the gateway)."""

    def __init__(self, document_for):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path != "/.well-known/openid-configuration":
                    self.send_error(404)
                    return
                body = json.dumps(document_for(outer.url)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def document(provider, issuer: str, **extra) -> dict:
    """The e2e provider's discovery document under another issuer (its endpoints kept)."""
    doc = dict(provider.discovery)
    doc["issuer"] = issuer
    doc.update(extra)
    return doc


def wait_until(predicate, what: str, attempts=300, pause=0.1):
    for _ in range(attempts):
        value = predicate()
        if value:
            return value
        time.sleep(pause)
    raise AssertionError(f"timed out waiting for {what}")


def test_down_provider_50_concurrent_logins_make_at_most_a_few_connection_attempts(gateway_factory):
    listener = CountingListener()
    try:
        gw = gateway_factory(env={"GATEHOUSE_ISSUER": listener.url}, wait_ready=False, register=False)
        harness.wait_http_ok(gw.url + "/healthz", gw.proc)
        # The background loader's first attempt.
        wait_until(lambda: listener.count() >= 1, "the first discovery attempt")
        before = listener.count()

        def one_login(_):
            return requests.get(gw.url + "/login", allow_redirects=False, timeout=60)

        with concurrent.futures.ThreadPoolExecutor(max_workers=50) as pool:
            answers = list(pool.map(one_login, range(50)))
        attempts = listener.count() - before
        assert [r.status_code for r in answers] == [502] * 50
        assert all("cannot be reached" in r.text for r in answers)
        # Single-flight with back-off: not one fetch per request (50 on the old code).
        assert attempts <= 3, f"{attempts} connection attempts for 50 concurrent /login"
        ready = requests.get(gw.url + "/readyz", timeout=10)
        assert ready.status_code == 503
        assert "provider unreachable" in ready.json()["error_description"]
    finally:
        listener.close()


def test_issuer_mismatch_is_named_by_readyz_login_and_check(gateway_factory, provider):
    server = DiscoveryServer(lambda url: document(provider, url + "/other"))
    try:
        gw = gateway_factory(env={"GATEHOUSE_ISSUER": server.url}, wait_ready=False, register=False)
        harness.wait_http_ok(gw.url + "/healthz", gw.proc)

        def mismatch_reported():
            r = requests.get(gw.url + "/readyz", timeout=10)
            # a list, not the response: a 503 response is falsy
            return [r] if r.status_code == 503 and "differs from GATEHOUSE_ISSUER" in r.text else None

        ready = wait_until(mismatch_reported, "/readyz to name the issuer mismatch")[0]
        body = ready.json()
        assert body["error"] == "provider_metadata_not_loaded"
        assert "misconfigured provider" in body["error_description"]
        assert server.url + "/other" in body["error_description"]

        login = requests.get(gw.url + "/login", allow_redirects=False, timeout=30)
        assert login.status_code == 502
        assert "misconfigured provider" in login.text
        assert "cannot be reached" not in login.text
        assert gw.env["GATEHOUSE_CLIENT_SECRET"] not in login.text
        assert "differs from GATEHOUSE_ISSUER" in gw.proc.log_text()

        check = gw.cli("check")
        assert check.returncode == 64, check.stdout + check.stderr
        assert "differs from GATEHOUSE_ISSUER" in check.stdout
    finally:
        server.close()


def test_unlisted_token_endpoint_auth_method_fails_check_and_warns_at_startup(gateway_factory, provider):
    server = DiscoveryServer(lambda url: document(
        provider, url, token_endpoint_auth_methods_supported=["private_key_jwt"]))
    try:
        gw = gateway_factory(env={"GATEHOUSE_ISSUER": server.url}, register=False)
        check = gw.cli("check")
        assert check.returncode == 64, check.stdout + check.stderr
        assert "FAIL token endpoint authentication" in check.stdout
        assert "client_secret_basic" in check.stdout and "private_key_jwt" in check.stdout
        assert "does not list the configured token endpoint authentication method" in gw.proc.log_text()
    finally:
        server.close()


@pytest.mark.parametrize("variable,value", [
    ("GATEHOUSE_AUTH_PARAMS", "response_mode=form_post"),
    ("GATEHOUSE_AUTH_PARAMS", "request_uri=urn:example:1"),
    ("GATEHOUSE_AUTH_PARAMS", "request=eyJhbGciOiJub25lIn0.e30."),
    ("GATEHOUSE_AUTH_PARAMS", "code_challenge_method=plain"),
    ("GATEHOUSE_ID_TOKEN_ALGS", "HS256"),
    ("GATEHOUSE_ID_TOKEN_ALGS", "none"),
    ("GATEHOUSE_USERINFO", "sometimes"),
])
def test_refused_oidc_configuration_stops_serve_with_64(gateway_factory, variable, value):
    gw = gateway_factory(env={variable: value}, start=False, register=False)
    result = gw.cli("serve", timeout=30)
    assert result.returncode == 64, result.stdout + result.stderr
    assert variable in result.stderr
