"""Pushed authorization requests (RFC 9126; SPEC "FAPI 2.0: PAR and DPoP", issue 37 item 1), against
idpyoidc's OP from PyPI (`--par`): `GATEHOUSE_PAR=auto` pushes when discovery lists the endpoint and
the browser then carries only `client_id` and `request_uri`; `off` never pushes; `on` at a provider
without PAR stops `serve` and `check`, naming PAR; a push the provider refuses is a 502 page."""

from __future__ import annotations

from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from harness import Gateway, run_cli
from test_token_exchange import CLIENT_ID, CLIENT_SECRET, IdpyProvider, sign_in


@pytest.fixture
def par_setup(tmp_path, upstream):
    made = []

    def make(env=None, par=True, secret=CLIENT_SECRET, start=True):
        placeholder = SimpleNamespace(issuer="http://127.0.0.1:1", client_id=CLIENT_ID, client_secret=secret,
                                      register_redirect=lambda *a: None)
        gw = Gateway(placeholder, upstream, tmp_path / f"gw{len(made)}", register=False, start=False, env=env or {})
        provider = IdpyProvider(tmp_path / f"idp{len(made)}", gw.public_url + "/callback",
                                extra_args=("--par",) if par else ())
        gw.env["GATEHOUSE_ISSUER"] = provider.issuer
        made.append((gw, provider))
        if start:
            gw.start()
        return gw, provider

    yield make
    for gw, provider in made:
        gw.stop()
        provider.stop()


def authorize_query(gw) -> dict:
    r = requests.get(gw.url + "/login", allow_redirects=False, timeout=30)
    assert r.status_code == 302, r.text[:300]
    return parse_qs(urlsplit(r.headers["Location"]).query)


def test_auto_pushes_and_the_browser_carries_only_a_reference(par_setup):
    gw, provider = par_setup()
    before = provider.stats()["par"]
    query = authorize_query(gw)
    assert set(query) == {"client_id", "request_uri"}, query
    assert query["client_id"] == [CLIENT_ID] and query["request_uri"][0].startswith("urn:")
    assert provider.stats()["par"] == before + 1
    # A whole sign-in through it, then an API call.
    browser = sign_in(gw)
    assert gw.get(browser, "/api/hello").status_code == 200
    assert gw.get(browser, "/user").json()["sub"] == "alice"


def test_off_never_pushes(par_setup):
    gw, provider = par_setup({"GATEHOUSE_PAR": "off"})
    query = authorize_query(gw)
    assert {"state", "code_challenge", "redirect_uri", "scope"} <= set(query)
    assert provider.stats()["par"] == 0
    assert gw.get(sign_in(gw), "/api/hello").status_code == 200


def test_on_at_a_provider_without_par_stops_serve_and_check(par_setup):
    gw, provider = par_setup({"GATEHOUSE_PAR": "on"}, par=False, start=False)
    served = run_cli(["serve"], env=gw.env, timeout=30)
    assert served.returncode != 0, served.stderr[-500:]
    assert "GATEHOUSE_PAR" in served.stderr and "pushed_authorization_request_endpoint" in served.stderr
    checked = run_cli(["check"], env=gw.env, timeout=30)
    assert checked.returncode != 0 and "GATEHOUSE_PAR" in checked.stdout + checked.stderr, checked.stdout[-500:]
    # auto at the same provider simply does not push.
    gw.env["GATEHOUSE_PAR"] = "auto"
    gw.start()
    assert "request_uri" not in authorize_query(gw)


def test_a_refused_push_is_a_502_page(par_setup):
    gw, provider = par_setup(secret="not-the-secret")
    r = requests.get(gw.url + "/login", allow_redirects=False, timeout=30)
    assert r.status_code == 502 and "text/html" in r.headers["Content-Type"], (r.status_code, r.text[:300])
    assert "not-the-secret" not in gw.proc.log_text()


def test_bad_par_setting_is_refused(par_setup):
    gw, provider = par_setup({"GATEHOUSE_PAR": "sometimes"}, start=False)
    result = run_cli(["serve"], env=gw.env, timeout=20)
    assert result.returncode == 64 and "GATEHOUSE_PAR" in result.stderr and "auto, on or off" in result.stderr
