"""Step-up per route (SPEC "Sessions the SPA controls", issue 36 item 2): route options `acr=` and
`max_age=`; `401 step_up_required` with the `/login` to use; the callback requires the returned
`acr` and `auth_time`, so a provider that ignores `acr_values` (or `max_age`) cannot silently
downgrade a step-up. Against the keycloak-profile emulator (acr honoured or ignored on demand, an SSO
session of a chosen age) and against idpyoidc's OP from PyPI (which ignores `acr_values` and honours
`max_age`)."""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

import pytest
import requests

from harness import Gateway, set_cookie_headers
from test_providers import EmulatedProvider, browser_login, callback_response


def routes(up: str) -> str:
    return (f"/api={up},/gold={up}/api;acr=urn:gold|urn:platinum,/fresh={up}/api;max_age=60,"
            f"/both={up}/api;acr=urn:gold;max_age=60;identity=headers")


@pytest.fixture
def keycloak(tmp_path, upstream, request):
    made = []

    def make(env=None):
        provider = EmulatedProvider(tmp_path / f"emu{len(made)}", "keycloak")
        gw = Gateway(provider, upstream, tmp_path / f"gw{len(made)}",
                     env={"GATEHOUSE_PROVIDER": "keycloak", "GATEHOUSE_ROUTES": routes(upstream.url), **(env or {})},
                     name=f"gateway-{request.node.name}-{len(made)}")
        made.extend([gw, provider])
        return provider, gw

    yield make
    for item in made:
        item.stop()


def follow_login(gw, sess: requests.Session, path: str) -> requests.Response:
    """GET the gateway's `path` (a /login link) and follow the redirects to the callback's answer."""
    r = sess.get(urljoin(gw.url, path), allow_redirects=True, timeout=30)
    return callback_response(r)


def test_step_up_required_then_satisfied(keycloak):
    provider, gw = keycloak()
    sess, _ = browser_login(gw)
    assert gw.get(sess, "/api/hello").status_code == 200
    r = gw.get(sess, "/gold/hello")
    assert r.status_code == 401, r.text
    body = r.json()
    assert body["error"] == "step_up_required"
    assert body["acr_values"] == "urn:gold urn:platinum"
    assert "max_age" not in body
    assert urlsplit(body["login"]).path == "/login" and "acr_values=urn%3Agold%20urn%3Aplatinum" in body["login"]
    # The SPA follows the link (adding where to come back to).
    cb = follow_login(gw, sess, body["login"] + "&returnTo=/gold-page")
    assert cb.status_code == 302 and cb.headers["Location"].endswith("/gold-page"), (cb.status_code, cb.text[:300])
    asked = provider.stats()["authorize"][-1]
    assert asked.get("acr_values") == "urn:gold urn:platinum", asked
    assert gw.get(sess, "/gold/hello").status_code == 200
    assert gw.get(sess, "/api/hello").status_code == 200
    # Signed out: 401 unauthenticated, not step-up.
    r = gw.get(requests.Session(), "/gold/hello")
    assert r.status_code == 401 and r.json()["error"] != "step_up_required"


def test_provider_ignoring_acr_values_cannot_downgrade(keycloak):
    provider, gw = keycloak()
    sess, _ = browser_login(gw)
    provider.config(acr_mode="ignore")
    link = gw.get(sess, "/gold/hello").json()["login"]
    cb = follow_login(gw, sess, link)
    assert cb.status_code == 400, (cb.status_code, cb.text[:300])
    assert "text/html" in cb.headers["Content-Type"]
    assert not any(h.startswith(gw.cookie_name + "=") and "Max-Age=0" not in h for h in set_cookie_headers(cb))
    # The session from before is as it was: still not enough for the route, fine elsewhere.
    assert gw.get(sess, "/gold/hello").status_code == 401
    assert gw.get(sess, "/api/hello").status_code == 200
    metrics = requests.get(gw.url + "/metrics", timeout=5).text
    assert 'reason="step_up_not_satisfied"' in metrics


def test_max_age_against_an_old_provider_session(keycloak):
    provider, gw = keycloak()
    # The user's session at the provider is an hour old: the login reports that auth_time.
    provider.config(session_age=3600)
    sess, _ = browser_login(gw)
    r = gw.get(sess, "/fresh/hello")
    assert r.status_code == 401 and r.json()["max_age"] == 60 and "acr_values" not in r.json(), r.text
    assert r.json()["login"] == "/login?max_age=60"
    # A provider that ignores max_age hands back the old auth_time: refused.
    provider.config(max_age_mode="ignore")
    cb = follow_login(gw, sess, "/login?max_age=60")
    assert cb.status_code == 400, cb.text[:300]
    assert gw.get(sess, "/fresh/hello").status_code == 401
    # One that honours it signs the user in again: allowed.
    provider.config(max_age_mode="honour")
    cb = follow_login(gw, sess, "/login?max_age=60")
    assert cb.status_code == 302, cb.text[:300]
    assert provider.stats()["authorize"][-1].get("max_age") == "60"
    assert gw.get(sess, "/fresh/hello").status_code == 200
    # Both at once, and beside identity headers.
    r = gw.get(sess, "/both/hello")
    assert r.status_code == 401 and r.json()["acr_values"] == "urn:gold" and r.json()["max_age"] == 60
    cb = follow_login(gw, sess, r.json()["login"])
    assert cb.status_code == 302
    assert gw.get(sess, "/both/hello").status_code == 200


def test_malformed_step_up_requests_and_options(keycloak, upstream):
    from harness import run_cli
    provider, gw = keycloak()
    for query in ("max_age=-1", "max_age=abc", "acr_values=", "max_age=1&max_age=2", "acr_values=a%0Ab"):
        r = requests.get(gw.url + "/login?" + query, allow_redirects=False, timeout=10)
        assert r.status_code == 400, (query, r.status_code)
    for route, words in [(f"/x={upstream.url};acr=", "needs a value"),
                         (f"/x={upstream.url};max_age=soon", "max_age"),
                         (f"/x={upstream.url};auth=none;acr=gold", "auth=none"),
                         (f"/x={upstream.url};auth=client;max_age=5", "auth=client")]:
        env = dict(gw.env, GATEHOUSE_ROUTES=route)
        result = run_cli(["serve"], env=env, timeout=20)
        assert result.returncode == 64 and words in result.stderr, (route, result.stderr[-300:])


def test_step_up_at_a_real_provider_from_pypi(tmp_path, upstream):
    """idpyoidc's OP: it ignores `acr_values` (its `acr` is fixed), so a step-up asking for another
    level is refused at the callback; it honours `max_age` (a fresh login), so that one succeeds."""
    from types import SimpleNamespace
    from test_token_exchange import CLIENT_ID, CLIENT_SECRET, IdpyProvider, sign_in
    placeholder = SimpleNamespace(issuer="http://127.0.0.1:1", client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                                  register_redirect=lambda *a: None)
    gw = Gateway(placeholder, upstream, tmp_path / "gw", register=False, start=False,
                 env={"GATEHOUSE_ROUTES": f"/api={upstream.url},/gold={upstream.url}/api;acr=urn:gold,"
                                          f"/fresh={upstream.url}/api;max_age=30"})
    provider = IdpyProvider(tmp_path / "idp", gw.public_url + "/callback")
    try:
        gw.env["GATEHOUSE_ISSUER"] = provider.issuer
        gw.start()
        sess = sign_in(gw)
        r = gw.get(sess, "/gold/hello")
        assert r.status_code == 401 and r.json()["error"] == "step_up_required"
        cb = follow_login(gw, sess, r.json()["login"])
        assert cb.status_code == 400, cb.text[:300]
        assert gw.get(sess, "/gold/hello").status_code == 401
        # max_age: idpyoidc's logins are always fresh, so the route is satisfied, and a step-up
        # login asking for it passes the callback's auth_time check.
        assert gw.get(sess, "/fresh/hello").status_code == 200
        cb = follow_login(gw, sess, "/login?max_age=30")
        assert cb.status_code == 302, cb.text[:300]
        assert gw.get(sess, "/fresh/hello").status_code == 200
    finally:
        gw.stop()
        provider.stop()
