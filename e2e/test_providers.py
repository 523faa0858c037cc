"""Issue 13: Gatehouse against emulations of Auth0, Google, Facebook, Keycloak, Entra ID and
Okta (provider_emulator.py), each with its documented quirks, through `GATEHOUSE_PROVIDER`.

For each profile: a full browser-level login (requests following every redirect), an API call
through the echo upstream with the provider's access token, a refresh where the provider has
refresh tokens, and logout to the provider's logout endpoint. Then the quirks on their own:
required claims, per-login parameters, Facebook's nonce and GET exchange, Auth0's audience,
and the session end without a refresh token.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from harness import (CLIENT_ID, CLIENT_SECRET, E2E_DIR, PYTHON, Gateway, Proc, run_cli,
                     wait_for_port_file, wait_http_ok)


class EmulatedProvider:
    """provider_emulator.py with one profile; quacks like harness.Provider for Gateway."""

    ISSUER_PATHS = {"auth0": "/", "google": "", "facebook": "", "keycloak": "/realms/demo",
                    "entra": "/common/v2.0", "okta": "/oauth2/default"}

    def __init__(self, work: Path, profile: str):
        self.profile = profile
        self.client_id = CLIENT_ID
        self.client_secret = CLIENT_SECRET
        work.mkdir(parents=True, exist_ok=True)
        port_file = work / f"{profile}.port"
        port_file.unlink(missing_ok=True)
        self.proc = Proc(f"emulator-{profile}", [PYTHON, str(E2E_DIR / "provider_emulator.py"),
                                                 "--profile", profile, "--port", "0", "--port-file", str(port_file),
                                                 "--client-id", CLIENT_ID, "--client-secret", CLIENT_SECRET],
                         env={**os.environ, "PYTHONUNBUFFERED": "1"}).start()
        self.port = wait_for_port_file(port_file, self.proc)
        self.base = f"http://127.0.0.1:{self.port}"
        self.issuer = self.base + self.ISSUER_PATHS[profile]
        discovery = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
        self.discovery = wait_http_ok(discovery, self.proc).json()

    def register_redirect(self, redirect_uri: str, client_id: str | None = None):
        requests.post(self.base + "/_test/clients", json={"redirect_uris": [redirect_uri]},
                      timeout=5).raise_for_status()

    def config(self, **kw) -> dict:
        r = requests.post(self.base + "/_test/config", json=kw, timeout=5)
        r.raise_for_status()
        return r.json()

    def stats(self) -> dict:
        return requests.get(self.base + "/_test/stats", timeout=5).json()

    def stop(self):
        self.proc.stop()


@pytest.fixture
def emulate(tmp_path, upstream, request):
    """emulate(profile, env={...}, access_ttl=None, start=True) -> (provider, gateway)."""
    made = []

    def make(profile: str, env: dict | None = None, access_ttl: int | None = None, start=True,
             wait_ready=True):
        provider = EmulatedProvider(tmp_path / f"emu-{profile}-{len(made)}", profile)
        made.append(provider)
        if access_ttl is not None:
            provider.config(access_ttl=access_ttl)
        gw_env = {"GATEHOUSE_PROVIDER": profile}
        gw_env.update(env or {})
        gw = Gateway(provider, upstream, tmp_path / f"gw-{profile}-{len(made)}", env=gw_env,
                     name=f"gateway-{request.node.name}-{len(made)}", start=start, wait_ready=wait_ready)
        made.append(gw)
        return provider, gw

    yield make
    for item in reversed(made):
        item.stop()


def browser_login(gw: Gateway, query: str = "") -> tuple[requests.Session, requests.Response]:
    """GET /login and follow every redirect (gateway → provider → /callback → returnTo)."""
    sess = requests.Session()
    r = sess.get(gw.url + "/login" + (("?" + query) if query else ""), allow_redirects=True, timeout=30)
    return sess, r


def callback_response(r: requests.Response) -> requests.Response:
    """The gateway's answer to /callback within a followed redirect chain."""
    for step in list(r.history) + [r]:
        if urlsplit(step.url).path == "/callback":
            return step
    raise AssertionError(f"no /callback in {[s.url for s in r.history]} -> {r.url}")


def user(gw: Gateway, sess: requests.Session) -> requests.Response:
    return gw.get(sess, "/user")


def api_authorization(gw: Gateway, sess: requests.Session) -> str:
    r = gw.get(sess, "/api/hello")
    assert r.status_code == 200, r.text
    return r.json()["authorization"]


def await_new_access_token(gw: Gateway, sess: requests.Session, old: str, limit_s: float = 20) -> str:
    """Calls the API until the gateway has refreshed (the token expires after a short lifetime)."""
    deadline = time.time() + limit_s
    while time.time() < deadline:
        current = api_authorization(gw, sess)
        if current != old:
            return current
        time.sleep(0.2)
    raise AssertionError("the access token was never refreshed")


def logout(gw: Gateway, sess: requests.Session) -> str:
    r = gw.post(sess, "/logout")
    assert r.status_code == 302, r.text
    return r.headers["Location"]


def query(url: str) -> dict:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


# ---------------------------------------------------------------------------
# Each profile end to end
# ---------------------------------------------------------------------------

PROFILE_ENV = {
    "auth0": {"GATEHOUSE_AUTH_PARAMS": "audience=https://api.example.com"},
    "google": {},
    "keycloak": {},
    "entra": {},
    "okta": {},
}


@pytest.mark.parametrize("profile", sorted(PROFILE_ENV))
def test_login_api_refresh_logout(emulate, profile):
    provider, gw = emulate(profile, env=PROFILE_ENV[profile], access_ttl=3)
    sess, r = browser_login(gw)
    assert callback_response(r).status_code == 302 and r.status_code == 200, r.text
    me = user(gw, sess).json()
    assert me["sub"] == "user-1" and me["session"]["refreshable"] is True
    assert isinstance(me["session"]["accessTokenExpiresAt"], int)
    if profile == "keycloak":
        # An offline token would outlive a logout at Keycloak: the profile does not ask for one.
        assert "offline_access" not in provider.stats()["authorize"][-1]["scope"].split()

    first = api_authorization(gw, sess)
    assert first.startswith("Bearer ")
    second = await_new_access_token(gw, sess, first)
    assert second.startswith("Bearer ") and second != first
    refreshes = [t for t in provider.stats()["token"] if t["grant_type"] == "refresh_token"]
    assert refreshes and all(t["method"] == "POST" for t in refreshes)

    location = logout(gw, sess)
    logout_query = query(location)
    if profile == "auth0":
        # No end_session_endpoint in the tenant's document: the profile's /v2/logout.
        assert location.startswith(provider.base + "/v2/logout?")
        assert logout_query == {"client_id": CLIENT_ID, "returnTo": gw.url + "/"}
    elif profile == "google":
        assert location == "/"  # Google has no RP-initiated logout
    else:
        assert location.startswith(provider.discovery["end_session_endpoint"] + "?")
        assert logout_query["post_logout_redirect_uri"] == gw.url + "/"
        assert logout_query["id_token_hint"].count(".") == 2
        assert len(logout_query.get("state", "")) >= 16
    if location != "/":
        follow = requests.get(location, allow_redirects=False, timeout=10)
        assert follow.status_code == 302 and follow.headers["Location"] == gw.url + "/", follow.text
    assert user(gw, sess).status_code == 401
    # Where the provider has a revocation endpoint, logout revoked the refresh token there.
    revocations = provider.stats()["revocations"]
    if "revocation_endpoint" in provider.discovery:
        assert sorted(r["token_type_hint"] for r in revocations) == ["access_token", "refresh_token"]
    else:
        assert revocations == []


def test_google_short_issuer_and_hd(emulate):
    """Google's ID tokens say `iss: accounts.google.com` (no scheme): the google profile accepts
    it, the generic one does not."""
    provider, gw = emulate("google", env={"GATEHOUSE_REQUIRE_CLAIMS": "hd=example.com"})
    provider.config(user={"hd": "example.com"})
    sess, r = browser_login(gw)
    assert r.status_code == 200, r.text
    claims = user(gw, sess).json()["claims"]
    assert claims["iss"] == provider.issuer.split("://", 1)[1] and claims["hd"] == "example.com"
    authorize = provider.stats()["authorize"][-1]
    assert authorize["access_type"] == "offline" and "offline_access" not in authorize["scope"].split()

    _, generic = emulate("google", env={"GATEHOUSE_PROVIDER": "generic", "GATEHOUSE_SCOPES": "openid email",
                                        "GATEHOUSE_AUTH_PARAMS": "access_type=offline"})
    _, r = browser_login(generic)
    assert callback_response(r).status_code == 400
    assert 'reason="invalid_id_token"' in requests.get(generic.url + "/metrics", timeout=5).text


def test_required_claim_missing_fails_with_page_and_metric(emulate):
    provider, gw = emulate("google", env={"GATEHOUSE_REQUIRE_CLAIMS": "hd=example.com"})
    provider.config(user={"hd": "gmail.example"})
    sess, r = browser_login(gw)
    cb = callback_response(r)
    assert cb.status_code == 400 and "text/html" in cb.headers["Content-Type"]
    assert "not one this site admits" in cb.text
    assert 'logins_failed_total{reason="claim"} 1' in requests.get(gw.url + "/metrics", timeout=5).text
    assert user(gw, sess).status_code == 401
    assert "claim is not the required value" in gw.proc.log_text()


def test_entra_issuer_template_and_tenant_restriction(emulate):
    provider, gw = emulate("entra", env={"GATEHOUSE_REQUIRE_CLAIMS": "tid=9188040d-6c67-4c5b-b112-36a304b66dad"})
    assert provider.discovery["issuer"].endswith("/{tenantid}/v2.0")
    sess, r = browser_login(gw)
    assert r.status_code == 200, r.text
    claims = user(gw, sess).json()["claims"]
    assert claims["iss"] == f"{provider.base}/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0"

    provider.config(user={"tid": "72f988bf-86f1-41af-91ab-2d7cd011db47"})  # another tenant
    sess, r = browser_login(gw)
    assert callback_response(r).status_code == 400
    assert 'logins_failed_total{reason="claim"} 1' in requests.get(gw.url + "/metrics", timeout=5).text


def test_entra_template_refused_without_profile(emulate):
    """The `{tenantid}` template is an issuer mismatch unless GATEHOUSE_PROVIDER=entra."""
    _, gw = emulate("entra", env={"GATEHOUSE_PROVIDER": "generic"}, wait_ready=False)
    wait_http_ok(gw.url + "/healthz", gw.proc)
    deadline = time.time() + 20
    r = requests.get(gw.url + "/readyz", timeout=5)
    while time.time() < deadline and "differs from GATEHOUSE_ISSUER" not in r.text:
        time.sleep(0.2)
        r = requests.get(gw.url + "/readyz", timeout=5)
    assert r.status_code == 503 and "{tenantid}" in r.text, r.text


# ---------------------------------------------------------------------------
# Facebook: no token_endpoint, GET exchange, nonce, no refresh token
# ---------------------------------------------------------------------------

def facebook_env(provider: EmulatedProvider, long_lived: bool = False) -> dict:
    # The short-token tests turn the long-lived exchange (the profile's default) off.
    return {"GATEHOUSE_TOKEN_ENDPOINT": provider.base + "/v19.0/oauth/access_token",
            "GATEHOUSE_LONG_LIVED_TOKEN": "true" if long_lived else "false"}


def test_facebook_long_lived_token_is_obtained_and_its_expiry_honoured(emulate):
    # "Long-Lived Access Tokens": after the code exchange the short user token is traded with
    # grant_type=fb_exchange_token (a GET with the app's credentials); the session keeps the new
    # token and its expires_in, so it outlives the short token's hour.
    provider, gw = emulate("facebook", access_ttl=2, start=False)
    gw.env.update(facebook_env(provider, long_lived=True))
    gw.start()
    sess, r = browser_login(gw)
    assert callback_response(r).status_code == 302 and r.status_code == 200, r.text
    exchanges = [t for t in provider.stats()["token"] if t["grant_type"] == "fb_exchange_token"]
    assert len(exchanges) == 1, provider.stats()["token"]
    assert exchanges[0]["method"] == "GET" and exchanges[0]["in_body"] == []
    assert {"fb_exchange_token", "client_id", "client_secret"} <= set(exchanges[0]["in_query"])
    session = user(gw, sess).json()["session"]
    assert session["accessTokenExpiresAt"] > time.time() + 5_000_000, session
    # Past the short token's two seconds the session still works, with the long-lived token.
    time.sleep(3)
    assert api_authorization(gw, sess).endswith("-long")
    assert user(gw, sess).status_code == 200
    log = gw.proc.log_text()
    assert CLIENT_SECRET not in log and "fb_exchange_token=" not in log


def test_facebook_login_get_exchange_nonce_and_session_expiry(emulate):
    provider, gw = emulate("facebook", access_ttl=3, start=False)
    gw.env.update(facebook_env(provider))
    gw.start()
    sess, r = browser_login(gw)
    assert callback_response(r).status_code == 302 and r.status_code == 200, r.text

    authorize = provider.stats()["authorize"][-1]
    assert authorize["scope"] == "openid public_profile email" and len(authorize["nonce"]) >= 22
    exchange = provider.stats()["token"][-1]
    # Graph API: a GET with every parameter in the query, the secret too (the profile's quirk).
    assert exchange["method"] == "GET" and exchange["in_body"] == []
    assert {"code", "code_verifier", "redirect_uri", "client_id", "client_secret"} <= set(exchange["in_query"])
    claims = user(gw, sess).json()
    assert claims["claims"]["nonce"] == authorize["nonce"]
    assert claims["session"]["refreshable"] is False and claims["session"]["accessTokenExpiresAt"] > 0

    assert api_authorization(gw, sess).startswith("Bearer ")
    # The token is never logged, nor the secret that travelled in the URL.
    log = gw.proc.log_text()
    assert CLIENT_SECRET not in log and "code_verifier" not in log

    # No refresh token: when the access token expires the session ends, the same way for both.
    deadline = time.time() + 20
    status = 200
    while time.time() < deadline and status == 200:
        r = gw.get(sess, "/api/hello")
        status = r.status_code
        time.sleep(0.2)
    assert status == 401 and r.json()["error"] == "session_expired", r.text
    assert "error_description" in r.json()
    r = user(gw, sess)
    assert r.status_code == 401
    assert not [t for t in provider.stats()["token"] if t["grant_type"] == "refresh_token"]


def test_facebook_user_sees_session_expired(emulate):
    provider, gw = emulate("facebook", access_ttl=2, start=False)
    gw.env.update(facebook_env(provider))
    gw.start()
    sess, _ = browser_login(gw)
    deadline = time.time() + 20
    r = user(gw, sess)
    while time.time() < deadline and r.status_code == 200:
        time.sleep(0.2)
        r = user(gw, sess)
    assert r.status_code == 401 and r.json()["error"] == "session_expired"
    assert "Max-Age=0" in r.headers.get("Set-Cookie", "") or "Expires" in r.headers.get("Set-Cookie", "")
    assert user(gw, sess).status_code == 401


def test_facebook_without_token_endpoint_stops_startup(emulate):
    """Facebook's document has no token_endpoint: with the generic profile and no override,
    `serve` stops with 64 and both it and `check` name GATEHOUSE_TOKEN_ENDPOINT."""
    _, gw = emulate("facebook", env={"GATEHOUSE_PROVIDER": "generic"}, start=False)
    cp = run_cli(["check"], env=gw.env)
    assert cp.returncode == 64, cp.stdout + cp.stderr
    assert "GATEHOUSE_TOKEN_ENDPOINT" in cp.stdout
    gw.start(wait_ready=False)
    assert gw.proc.wait(timeout=30) == 64
    assert "GATEHOUSE_TOKEN_ENDPOINT" in gw.proc.log_text()


def test_check_reports_profile_and_get_request(emulate):
    provider, gw = emulate("facebook", start=False)
    gw.env.update(facebook_env(provider))
    cp = run_cli(["check"], env=gw.env)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert "GATEHOUSE_PROVIDER=facebook" in cp.stdout and "token request: GET" in cp.stdout
    assert CLIENT_SECRET not in cp.stdout + cp.stderr


def test_get_token_request_refuses_secret_in_url_without_facebook(emulate):
    _, gw = emulate("okta", start=False, env={"GATEHOUSE_TOKEN_REQUEST": "get",
                                             "GATEHOUSE_CLIENT_AUTH_METHOD": "client_secret_post"})
    cp = run_cli(["check"], env=gw.env)
    assert cp.returncode == 64 and "GATEHOUSE_TOKEN_REQUEST" in cp.stderr + cp.stdout
    assert CLIENT_SECRET not in cp.stdout + cp.stderr


# ---------------------------------------------------------------------------
# Auth0: audience, organizations and invitations, /v2/logout
# ---------------------------------------------------------------------------

def test_auth0_audience_gives_a_jwt_access_token_for_the_api(emulate):
    provider, gw = emulate("auth0", env={"GATEHOUSE_AUTH_PARAMS": "audience=https://api.example.com"})
    sess, r = browser_login(gw)
    assert r.status_code == 200, r.text
    token = api_authorization(gw, sess).removeprefix("Bearer ")
    payload = token.split(".")[1]
    claims = json.loads(__import__("base64").urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert "https://api.example.com" in claims["aud"]

    _, plain = emulate("auth0")
    sess, r = browser_login(plain)
    assert api_authorization(plain, sess).startswith("Bearer opaque-")


def test_auth0_organization_and_invitation_passed_other_params_ignored(emulate):
    provider, gw = emulate("auth0", env={"GATEHOUSE_LOGIN_PARAMS": "organization,invitation,screen_hint",
                                         "GATEHOUSE_REQUIRE_CLAIMS": "org_id=org_123"})
    # prompt is not listed: prompt=login is dropped (only prompt=none, the silent sign-in, always passes).
    sess, r = browser_login(gw, "organization=org_123&invitation=inv_9&connection=evil&prompt=login&returnTo=/")
    assert r.status_code == 200, r.text
    authorize = provider.stats()["authorize"][-1]
    assert authorize["organization"] == "org_123" and authorize["invitation"] == "inv_9"
    assert "connection" not in authorize and "prompt" not in authorize
    assert user(gw, sess).json()["claims"]["org_id"] == "org_123"

    # Without the organization the ID token has no org_id: the requirement refuses the login.
    sess, r = browser_login(gw)
    assert callback_response(r).status_code == 400
    # A repeated parameter is refused before anything is sent to the provider.
    before = len(provider.stats()["authorize"])
    r = requests.get(gw.url + "/login?organization=a&organization=b", allow_redirects=False, timeout=10)
    assert r.status_code == 400 and len(provider.stats()["authorize"]) == before


def test_auth0_login_with_organization_must_return_that_org_id(emulate):
    # Auth0, "Work with Tokens and Organizations": a login started with `organization` is checked
    # for the same org_id in the ID token (no GATEHOUSE_REQUIRE_CLAIMS needed: the pending login
    # carries the check), so a token of another organization does not sign the user in.
    provider, gw = emulate("auth0", env={"GATEHOUSE_LOGIN_PARAMS": "organization"})
    sess, r = browser_login(gw, "organization=org_123&returnTo=/")
    assert callback_response(r).status_code == 302
    assert user(gw, sess).json()["claims"]["org_id"] == "org_123"
    provider.config(org_override="org_999")
    sess, r = browser_login(gw, "organization=org_123&returnTo=/")
    assert callback_response(r).status_code == 400
    assert user(gw, sess).status_code == 401
    assert 'gatehouse_logins_failed_total{reason="claim"} 1' in requests.get(gw.url + "/metrics", timeout=5).text
    # Without `organization` nothing is required: the org_id the tenant chose is accepted.
    sess, r = browser_login(gw)
    assert callback_response(r).status_code == 302


def test_login_params_reserved_names_refused_at_startup(emulate):
    _, gw = emulate("auth0", env={"GATEHOUSE_LOGIN_PARAMS": "organization,state"}, start=False)
    cp = run_cli(["check"], env=gw.env)
    assert cp.returncode == 64 and "GATEHOUSE_LOGIN_PARAMS" in cp.stderr + cp.stdout


def test_help_lists_the_provider_variables():
    cp = run_cli(["serve", "--help"], env={"PATH": os.environ.get("PATH", "")})
    text = cp.stdout + cp.stderr
    for name in ("GATEHOUSE_PROVIDER", "GATEHOUSE_TOKEN_ENDPOINT", "GATEHOUSE_TOKEN_REQUEST",
                 "GATEHOUSE_LOGIN_PARAMS", "GATEHOUSE_REQUIRE_CLAIMS", "GATEHOUSE_LOGOUT_URL",
                 "GATEHOUSE_END_SESSION_ENDPOINT"):
        assert name in text, name
