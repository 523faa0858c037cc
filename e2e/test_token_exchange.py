"""A token per API (SPEC "Identity for your own APIs", issue 35 item 4), against a real third-party
provider from PyPI: idpyoidc's OP (e2e/idpyoidc_provider.py), which implements RFC 8693 token
exchange and, with the script's small refresh helper, RFC 8707 `resource` on the refresh grant.

`exchange=token`: twenty concurrent calls make one exchange; a refused audience is 403
`token_exchange_refused` and the session goes on; a provider that is down is 502.
`exchange=refresh`: the grant's rotated refresh token is stored under the refresh lease, so the
next normal refresh presents the new one (idpyoidc refuses a spent refresh token).
"""

from __future__ import annotations

import base64
import concurrent.futures
import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urljoin

import pytest
import requests

from harness import Gateway, Proc, free_port

E2E = Path(__file__).resolve().parent
CLIENT_ID, CLIENT_SECRET = "gatehouse", "s3cret-exchange"


class IdpyProvider:
    """idpyoidc's OP on a free port, for one gateway's redirect URI."""

    def __init__(self, work: Path, redirect_uri: str, access_token_ttl: int = 300, extra_args: tuple = ()):
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.client_id, self.client_secret = CLIENT_ID, CLIENT_SECRET
        argv = [sys.executable, str(E2E / "idpyoidc_provider.py"), "--port", str(self.port),
                "--client-id", CLIENT_ID, "--client-secret", CLIENT_SECRET, "--redirect-uri", redirect_uri,
                "--audience", "orders-api", "--resource", "https://orders.example", "--refresh-resource",
                "--implicit-consent", "--access-token-ttl", str(access_token_ttl), *extra_args]
        work.mkdir(parents=True, exist_ok=True)
        self.proc = Proc("idpyoidc", argv, cwd=work).start()
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if requests.get(self.issuer + "/.well-known/openid-configuration", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            assert self.proc.alive(), self.proc.log_text()[-2000:]
            time.sleep(0.1)
        raise AssertionError("idpyoidc did not start: " + self.proc.log_text()[-2000:])

    def stats(self) -> dict:
        return requests.get(self.issuer + "/_stats", timeout=5).json()

    def stop(self):
        self.proc.stop()


@pytest.fixture
def exchange_setup(tmp_path, upstream, request):
    made = []

    def make(access_token_ttl=300):
        placeholder = SimpleNamespace(issuer="http://127.0.0.1:1", client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                                      register_redirect=lambda *a: None)
        up = upstream.url
        gw = Gateway(placeholder, upstream, tmp_path / f"gw{len(made)}", register=False, start=False, env={
            "GATEHOUSE_ROUTES": ",".join([
                f"/orders={up}/api;exchange=token;audience=orders-api",
                f"/evil={up}/api;exchange=token;audience=evil",
                f"/res={up}/api;exchange=refresh;resource=https://orders.example",
                f"/badres={up}/api;exchange=refresh;resource=https://elsewhere.example",
                f"/plain={up}/api",
            ]),
            "GATEHOUSE_SCOPES": "openid profile email offline_access",
        })
        provider = IdpyProvider(tmp_path / f"idp{len(made)}", gw.public_url + "/callback", access_token_ttl)
        gw.env["GATEHOUSE_ISSUER"] = provider.issuer
        gw.start()
        made.append((gw, provider))
        return gw, provider

    yield make
    for gw, provider in made:
        gw.stop()
        provider.stop()


def sign_in(gw) -> requests.Session:
    browser = requests.Session()
    r = browser.get(gw.url + "/login", allow_redirects=False, timeout=30)
    assert r.status_code == 302, r.text
    at_provider = browser.get(urljoin(gw.url, r.headers["Location"]), allow_redirects=False, timeout=30)
    assert at_provider.status_code in (302, 303), at_provider.text[:500]
    callback = at_provider.headers["Location"]
    assert callback.startswith(gw.public_url + "/callback?"), callback
    done = browser.get(callback, allow_redirects=False, timeout=30)
    assert done.status_code == 302, done.text[:500]
    assert browser.cookies.get(gw.cookie_name)
    return browser


def bearer_seen(gw, browser, path) -> str:
    r = gw.get(browser, path)
    assert r.status_code == 200, (path, r.status_code, r.text[:300])
    headers = {name.lower(): value for name, value in r.json()["headers"]}
    return headers["authorization"].removeprefix("Bearer ")


def audience(token: str) -> list[str]:
    part = token.split(".")[1]
    aud = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))["aud"]
    return aud if isinstance(aud, list) else [aud]


def test_twenty_calls_make_one_exchange(exchange_setup):
    gw, provider = exchange_setup()
    browser = sign_in(gw)
    users_token = bearer_seen(gw, browser, "/plain/echo")
    before = provider.stats()["token_ok"]["token-exchange"]
    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        tokens = list(pool.map(lambda _: bearer_seen(gw, browser, "/orders/echo"), range(20)))
    assert len(set(tokens)) == 1
    exchanged = tokens[0]
    assert exchanged != users_token
    assert "orders-api" in audience(exchanged)
    assert provider.stats()["token_ok"]["token-exchange"] - before == 1
    # The exchanged token is the upstream's alone: not in the gateway's log.
    assert exchanged not in gw.proc.log_text()
    assert users_token not in gw.proc.log_text()


def test_a_refused_exchange_is_403_and_the_session_goes_on(exchange_setup):
    gw, provider = exchange_setup()
    browser = sign_in(gw)
    r = gw.get(browser, "/evil/echo")
    assert r.status_code == 403 and r.json()["error"] == "token_exchange_refused", r.text
    assert provider.stats()["token_error"]["token-exchange"] == 1
    assert gw.get(browser, "/plain/echo").status_code == 200
    assert gw.get(browser, "/user").status_code == 200
    # The good API still gets its token.
    assert "orders-api" in audience(bearer_seen(gw, browser, "/orders/echo"))
    r = gw.get(browser, "/badres/echo")
    assert r.status_code == 403 and r.json()["error"] == "token_exchange_refused", r.text
    assert gw.get(browser, "/plain/echo").status_code == 200


def test_a_provider_that_is_down_is_502(exchange_setup):
    gw, provider = exchange_setup()
    browser = sign_in(gw)
    provider.stop()
    r = gw.get(browser, "/orders/echo")
    assert r.status_code == 502 and r.json()["error"] == "token_exchange_failed", r.text
    # The session is not ended by it.
    assert gw.get(browser, "/plain/echo").status_code == 200


def test_refresh_with_resource_then_a_normal_refresh_without_reuse(exchange_setup):
    gw, provider = exchange_setup(access_token_ttl=4)
    browser = sign_in(gw)
    first_user_token = bearer_seen(gw, browser, "/plain/echo")
    orders = bearer_seen(gw, browser, "/res/echo")
    assert "https://orders.example" in audience(orders)
    stats = provider.stats()
    assert stats["token_ok"]["refresh_token"] == 1 and stats["token_error"]["refresh_token"] == 0
    # Cached per session and route.
    assert bearer_seen(gw, browser, "/res/echo") == orders
    # The user's own access token expires: the normal refresh must present the rotated refresh
    # token (idpyoidc refuses the spent one, and the call would then fail).
    time.sleep(4.5)
    second_user_token = bearer_seen(gw, browser, "/plain/echo")
    assert second_user_token != first_user_token
    stats = provider.stats()
    assert stats["token_error"]["refresh_token"] == 0, stats
    assert stats["token_ok"]["refresh_token"] >= 2
    assert gw.get(browser, "/user").status_code == 200
