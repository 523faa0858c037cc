"""`GATEHOUSE_PROVIDER=github` (SPEC "More providers and protocols") against github_emulator.py.

GitHub is OAuth 2.0 without OpenID Connect: no discovery document, no ID token, no JWKS. The
gateway authorizes at `{GATEHOUSE_ISSUER}/login/oauth/authorize` (PKCE S256 and state), exchanges
the code at `{GATEHOUSE_ISSUER}/login/oauth/access_token` (GitHub answers errors with status 200,
a lower-case `bearer`, a comma-separated `scope`), and reads the identity from the REST API at
`GATEHOUSE_API_URL` (`/user`, `/user/emails`, and with `read:org` `/user/orgs`, `/user/teams`):
`sub` the numeric id as a string, `preferred_username` the login, `name`, `picture`, `email` only
when the primary address is verified, `groups` = org logins and `org/team-slug` only with `read:org`.

The emulator runs GitHub Enterprise Server's layout on one port (`/login/oauth/…` and the API at
`/api/v3`). Each test gets its own emulator; logins are driven with `requests` following redirects
(the emulator signs the configured user in at once). The first tests check the emulator alone
(no gateway needed).
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit, urlunsplit

import pytest
import requests
import urllib3

from harness import (CLIENT_ID, CLIENT_SECRET, E2E_DIR, PYTHON, Gateway, Proc, b64url_sha256, gatehouse_bin,
                     run_cli, set_cookie_headers, wait_for_port_file, wait_http_ok)

DEFAULT_SCOPES = {"read:user", "user:email"}
ORG_SCOPES = "read:user user:email read:org"
OCTOCAT_ID = "583231"


class GitHubEmulator:
    """github_emulator.py; quacks like harness.Provider for harness.Gateway."""

    def __init__(self, work: Path, api_prefix: str = "/api/v3", name: str = "github"):
        self.client_id = CLIENT_ID
        self.client_secret = CLIENT_SECRET
        work.mkdir(parents=True, exist_ok=True)
        port_file = work / f"{name}.port"
        port_file.unlink(missing_ok=True)
        self.proc = Proc(f"emulator-{name}", [PYTHON, str(E2E_DIR / "github_emulator.py"), "--port", "0",
                                              "--port-file", str(port_file), "--client-id", CLIENT_ID,
                                              "--client-secret", CLIENT_SECRET, "--api-prefix", api_prefix],
                         env={**os.environ, "PYTHONUNBUFFERED": "1"}).start()
        self.port = wait_for_port_file(port_file, self.proc)
        self.base = f"http://127.0.0.1:{self.port}"
        self.issuer = self.base  # GATEHOUSE_ISSUER: the GitHub web host
        self.api_url = self.base + api_prefix  # GATEHOUSE_API_URL
        self.authorize_endpoint = self.base + "/login/oauth/authorize"
        self.token_endpoint = self.base + "/login/oauth/access_token"
        wait_http_ok(self.base + "/_test/stats", self.proc)

    def register_redirect(self, redirect_uri: str, client_id: str | None = None):
        requests.post(self.base + "/_test/clients", json={"client_id": client_id or self.client_id,
                                                          "redirect_uris": [redirect_uri]},
                      timeout=5).raise_for_status()

    def config(self, **kw) -> dict:
        r = requests.post(self.base + "/_test/config", json=kw, timeout=5)
        r.raise_for_status()
        return r.json()

    def stats(self) -> dict:
        return requests.get(self.base + "/_test/stats", timeout=5).json()

    def tokens(self) -> list[dict]:
        return requests.get(self.base + "/_test/tokens", timeout=5).json()

    def api_calls(self, endpoint: str | None = None) -> list[dict]:
        return [c for c in self.stats()["api"] if endpoint is None or c["endpoint"] == endpoint]

    def code_exchanges(self) -> list[dict]:
        return [t for t in self.stats()["token"] if t["grant_type"] in (None, "authorization_code")]

    def stop(self):
        self.proc.stop()


def require_binary():
    if not gatehouse_bin().exists():
        msg = f"gatehouse binary not found at {gatehouse_bin()} (set GATEHOUSE_BIN or run `swift build`)"
        if os.environ.get("E2E_REQUIRE_GATEWAY") == "1":
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture
def github(tmp_path):
    emulator = GitHubEmulator(tmp_path / "github")
    # The User-Agent requirement has a test of its own (test_api_calls_send_a_user_agent); the other
    # tests check the rest of the contract whatever the gateway sends there.
    emulator.config(require_user_agent=False)
    yield emulator
    emulator.stop()


@pytest.fixture
def github_gateway(github, upstream, tmp_path, request):
    """make(env=None, scopes=None, emulator=github, start=True) -> Gateway with GATEHOUSE_PROVIDER=github."""
    require_binary()
    made: list[Gateway] = []

    def make(env: dict | None = None, scopes: str | None = None, emulator: GitHubEmulator | None = None,
             start=True) -> Gateway:
        emu = emulator or github
        gw_env = {"GATEHOUSE_PROVIDER": "github", "GATEHOUSE_API_URL": emu.api_url}
        if scopes is not None:
            gw_env["GATEHOUSE_SCOPES"] = scopes
        gw_env.update(env or {})
        gw = Gateway(emu, upstream, tmp_path / f"gw{len(made)}", env=gw_env,
                     name=f"gateway-{request.node.name}-{len(made)}", start=start)
        made.append(gw)
        return gw

    yield make
    for gw in made:
        gw.stop()


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def browser_login(gw: Gateway, query: str = "", sess: requests.Session | None = None):
    """GET /login and follow every redirect (gateway → emulator → /callback → returnTo)."""
    sess = sess or requests.Session()
    r = sess.get(gw.url + "/login" + (("?" + query) if query else ""), allow_redirects=True, timeout=30)
    return sess, r


def callback_response(r: requests.Response) -> requests.Response:
    for step in list(r.history) + [r]:
        if urlsplit(step.url).path == "/callback":
            return step
    raise AssertionError(f"no /callback in {[s.url for s in r.history]} -> {r.url}")


def signed_in(gw: Gateway, sess: requests.Session) -> requests.Session:
    sess, r = browser_login(gw, sess=sess)
    cb = callback_response(r)
    assert cb.status_code == 302, f"/callback answered {cb.status_code}: {cb.text[:600]}"
    assert r.status_code == 200, r.text[:300]
    assert sess.cookies.get(gw.cookie_name), "no session cookie"
    return sess


def login_ok(gw: Gateway) -> requests.Session:
    return signed_in(gw, requests.Session())


def me(gw: Gateway, sess: requests.Session) -> dict:
    r = gw.get(sess, "/user")
    assert r.status_code == 200, f"/user answered {r.status_code}: {r.text[:300]}"
    return r.json()


def api_authorization(gw: Gateway, sess: requests.Session) -> str:
    r = gw.get(sess, "/api/hello")
    assert r.status_code == 200, f"/api/hello answered {r.status_code}: {r.text[:300]}"
    return r.json()["authorization"]


def no_session_cookie(gw: Gateway, sess: requests.Session, *responses: requests.Response) -> bool:
    """No live session cookie in the jar nor set by any of the responses."""
    if sess.cookies.get(gw.cookie_name):
        return False
    for resp in responses:
        for step in list(resp.history) + [resp]:
            for header in set_cookie_headers(step):
                name, _, rest = header.partition("=")
                value = rest.split(";", 1)[0]
                if name.strip() == gw.cookie_name and value and "max-age=0" not in header.lower():
                    return False
    return True


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def start_authorization(gw: Gateway, sess: requests.Session) -> str:
    """GET /login without following; the emulator's authorize URL."""
    r = sess.get(gw.url + "/login", allow_redirects=False, timeout=30)
    assert r.status_code == 302, f"/login answered {r.status_code}: {r.text[:300]}"
    return urljoin(gw.url + "/", r.headers["Location"])


def emulator_callback(sess: requests.Session, authorize_url: str) -> str:
    r = sess.get(authorize_url, allow_redirects=False, timeout=30)
    assert r.status_code == 302, f"authorize answered {r.status_code}: {r.text[:300]}"
    return r.headers["Location"]


def with_query(url: str, **changes) -> str:
    parts = urlsplit(url)
    q = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
    q.update(changes)
    return urlunsplit(parts._replace(query=urlencode(q)))


# ---------------------------------------------------------------------------
# The emulator alone (no gateway): GitHub's documented answers
# ---------------------------------------------------------------------------

def emulator_code(emu: GitHubEmulator, scope: str, verifier: str = "v" * 43, redirect: str | None = None) -> str:
    redirect = redirect or "http://127.0.0.1:1/callback"
    emu.register_redirect(redirect)
    r = requests.get(emu.authorize_endpoint, allow_redirects=False, timeout=5, params={
        "client_id": CLIENT_ID, "redirect_uri": redirect, "scope": scope, "state": "st-1",
        "code_challenge": b64url_sha256(verifier), "code_challenge_method": "S256"})
    assert r.status_code == 302, r.text
    q = parse_qs(urlsplit(r.headers["Location"]).query)
    assert q["state"] == ["st-1"] and "iss" not in q
    assert r.headers["Location"].startswith(redirect + "?")
    return q["code"][0]


def emulator_exchange(emu: GitHubEmulator, code: str, verifier: str = "v" * 43, accept: str | None = "application/json",
                      **extra) -> requests.Response:
    data = {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "code": code,
            "redirect_uri": "http://127.0.0.1:1/callback", "code_verifier": verifier, **extra}
    headers = {"Accept": accept} if accept else {"Accept": "*/*"}
    return requests.post(emu.token_endpoint, data=data, headers=headers, timeout=5)


def test_emulator_oauth_endpoints(github):
    # OAuth only: no discovery document, JWKS or UserInfo.
    assert requests.get(github.base + "/.well-known/openid-configuration", timeout=5).status_code == 404
    # An unregistered redirect_uri: an error page, no redirect.
    r = requests.get(github.authorize_endpoint, allow_redirects=False, timeout=5,
                     params={"client_id": CLIENT_ID, "redirect_uri": "http://evil.example/cb", "state": "s"})
    assert r.status_code == 400 and "redirect_uri" in r.text
    # The default answer is form-encoded, token_type lower-case, scope comma-separated.
    code = emulator_code(github, "read:user user:email read:org")
    r = emulator_exchange(github, code, accept=None)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/x-www-form-urlencoded")
    body = {k: v[0] for k, v in parse_qs(r.text).items()}
    assert body["access_token"].startswith("gho_") and body["token_type"] == "bearer"
    assert body["scope"] == "read:user,user:email,read:org" and "refresh_token" not in body
    # The code is single-use; errors come with status 200.
    r = emulator_exchange(github, code)
    assert r.status_code == 200 and r.json()["error"] == "bad_verification_code"
    assert r.json()["error_description"] == "The code passed is incorrect or expired."
    # PKCE: a wrong verifier fails; a right one gives JSON with Accept: application/json.
    code = emulator_code(github, "read:user")
    assert emulator_exchange(github, code, verifier="w" * 43).json()["error"] == "bad_verification_code"
    code = emulator_code(github, "read:user")
    assert emulator_exchange(github, code, client_secret="nope").json()["error"] == "incorrect_client_credentials"
    code = emulator_code(github, "read:user")
    ok = emulator_exchange(github, code)
    assert ok.headers["Content-Type"].startswith("application/json") and ok.json()["token_type"] == "bearer"
    # Client credentials in HTTP Basic work too.
    code = emulator_code(github, "read:user")
    r = requests.post(github.token_endpoint, auth=(CLIENT_ID, CLIENT_SECRET), headers={"Accept": "application/json"},
                      data={"code": code, "code_verifier": "v" * 43}, timeout=5)
    assert r.json()["access_token"].startswith("gho_")
    stats = github.stats()
    assert stats["token_requests"] == 6 and stats["refreshes"] == 0


def test_emulator_rest_api(github):
    github.config(require_user_agent=True)
    api = github.api_url
    full = emulator_exchange(github, emulator_code(github, ORG_SCOPES)).json()["access_token"]
    narrow = emulator_exchange(github, emulator_code(github, "read:user")).json()["access_token"]
    r = requests.get(api + "/user", timeout=5)
    assert r.status_code == 401 and r.json()["message"] == "Requires authentication"
    r = requests.get(api + "/user", headers={"Authorization": "Bearer gho_unknown"}, timeout=5)
    assert r.status_code == 401 and r.json()["message"] == "Bad credentials"
    r = requests.get(api + "/user", headers={"Authorization": f"token {full}"}, timeout=5)
    assert r.status_code == 200 and r.json()["id"] == 583231 and r.json()["login"] == "octocat"
    assert r.headers["X-OAuth-Scopes"] == "read:user, user:email, read:org"
    r = requests.get(api + "/user", headers={"Authorization": f"Bearer {full}",
                                            "User-Agent": urllib3.util.SKIP_HEADER}, timeout=5)
    assert r.status_code == 403 and "User-Agent" in r.text
    r = requests.get(api + "/user", headers={"Authorization": f"Bearer {full}", "X-GitHub-Api-Version": "1999-01-01"},
                     timeout=5)
    assert r.status_code == 400
    bearer_full, bearer_narrow = {"Authorization": f"Bearer {full}"}, {"Authorization": f"Bearer {narrow}"}
    emails = requests.get(api + "/user/emails", headers=bearer_full, timeout=5).json()
    assert [e for e in emails if e["primary"]] == [{"email": "octocat@github.example", "primary": True,
                                                    "verified": True, "visibility": "private"}]
    r = requests.get(api + "/user/emails", headers=bearer_narrow, timeout=5)
    assert r.status_code == 404 and r.json()["message"] == "Not Found"
    github.config(orgs=[{"login": "octo-org", "public": True}, {"login": "hidden-org", "public": False}])
    assert [o["login"] for o in requests.get(api + "/user/orgs", headers=bearer_full, timeout=5).json()] == \
        ["octo-org", "hidden-org"]
    assert [o["login"] for o in requests.get(api + "/user/orgs", headers=bearer_narrow, timeout=5).json()] == \
        ["octo-org"]
    teams = requests.get(api + "/user/teams", headers=bearer_full, timeout=5).json()
    assert [(t["organization"]["login"], t["slug"]) for t in teams] == [("octo-org", "platform")]
    assert requests.get(api + "/user/teams", headers=bearer_narrow, timeout=5).status_code == 403
    # Pagination: 30 a page unless per_page says otherwise, a Link header to the next page.
    github.config(orgs=[{"login": f"org-{i:02d}", "public": True} for i in range(40)])
    r = requests.get(api + "/user/orgs", headers=bearer_full, timeout=5)
    assert len(r.json()) == 30 and 'rel="next"' in r.headers["Link"]
    nxt = r.headers["Link"].split(";")[0].strip("<>")
    assert len(requests.get(nxt, headers=bearer_full, timeout=5).json()) == 10
    assert len(requests.get(api + "/user/orgs?per_page=100", headers=bearer_full, timeout=5).json()) == 40
    calls = github.api_calls()
    assert all(full not in str(c) and narrow not in str(c) for c in calls), "a token in the recorded calls"
    assert calls[2]["token_sha256"] == sha256(full)


def test_emulator_expiring_tokens_rotate(github):
    github.config(expiring=True, expires_in=2)
    body = emulator_exchange(github, emulator_code(github, ORG_SCOPES)).json()
    assert body["access_token"].startswith("ghu_") and body["refresh_token"].startswith("ghr_")
    assert body["expires_in"] == 2 and body["refresh_token_expires_in"] == 15897600
    refresh = {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "grant_type": "refresh_token",
               "refresh_token": body["refresh_token"]}
    accept = {"Accept": "application/json"}
    new = requests.post(github.token_endpoint, data=refresh, headers=accept, timeout=5).json()
    assert new["access_token"] != body["access_token"] and new["refresh_token"] != body["refresh_token"]
    again = requests.post(github.token_endpoint, data=refresh, headers=accept, timeout=5)
    assert again.status_code == 200 and again.json()["error"] == "bad_refresh_token"
    time.sleep(2.2)
    r = requests.get(github.api_url + "/user", headers={"Authorization": f"Bearer {body['access_token']}"}, timeout=5)
    assert r.status_code == 401 and r.json()["message"] == "Bad credentials"
    stats = github.stats()
    assert stats["refreshes"] == 1 and stats["refresh_failures"] == 1


# ---------------------------------------------------------------------------
# The gateway against the emulator
# ---------------------------------------------------------------------------

def test_login_identity_api_call_and_local_logout(github, github_gateway, upstream):
    """Default scopes (`read:user user:email`): the identity from /user and /user/emails, no groups
    (the octo-org membership is public, so /user/orgs would show it even without read:org)."""
    gw = github_gateway()
    sess = login_ok(gw)

    authorize = github.stats()["authorize"]
    assert len(authorize) == 1
    q = authorize[0]
    assert q["client_id"] == CLIENT_ID and q["redirect_uri"] == gw.url + "/callback", q
    requested_scopes = set(q["scope"].replace(",", " ").split())  # checked last, after the rest
    assert q["code_challenge_method"] == "S256" and len(q["code_challenge"]) == 43, q
    assert len(q.get("state", "")) >= 16, q
    exchanges = github.code_exchanges()
    assert len(exchanges) == 1 and exchanges[0]["result"] == "ok", exchanges
    assert exchanges[0]["code_verifier"] and exchanges[0]["client_auth"] in ("post", "basic"), exchanges[0]

    who = me(gw, sess)
    claims = who["claims"]
    assert who["sub"] == OCTOCAT_ID and claims["sub"] == OCTOCAT_ID, who
    assert claims["preferred_username"] == "octocat" and claims["name"] == "The Octocat", claims
    assert claims["picture"] == "https://avatars.example/u/583231", claims
    assert claims["email"] == "octocat@github.example" and claims["email_verified"] is True, claims
    assert "groups" not in claims, claims

    authorization = api_authorization(gw, sess)
    assert authorization.startswith("Bearer gho_"), authorization
    token = authorization.removeprefix("Bearer ")
    assert {c["token_sha256"] for c in github.api_calls("user")} == {sha256(token)}
    assert token not in gw.proc.log_text()

    r = gw.post(sess, "/logout")
    assert r.status_code == 302, r.text[:300]
    location = r.headers["Location"]
    # GitHub has no end-session endpoint: the browser stays on the gateway's origin.
    assert (location.startswith("/") and not location.startswith("//")) or location.startswith(gw.url + "/"), location
    assert gw.get(sess, "/user").status_code == 401
    assert gw.get(sess, "/api/hello").status_code == 401
    # GATEHOUSE_SCOPES' default is `read:user user:email`: no OpenID Connect scope.
    assert requested_scopes == DEFAULT_SCOPES, q["scope"]


def test_groups_from_orgs_and_teams_with_read_org(github, github_gateway):
    gw = github_gateway(scopes=ORG_SCOPES)
    sess = login_ok(gw)
    requested_scopes = set(github.stats()["authorize"][-1]["scope"].split())  # checked last
    claims = me(gw, sess)["claims"]
    assert sorted(claims.get("groups", [])) == ["octo-org", "octo-org/platform"], claims
    assert len(claims["groups"]) == 2
    # A private membership counts too: read:org lists it.
    github.config(orgs=[{"login": "octo-org", "public": True}, {"login": "hidden-org", "public": False}],
                  teams=[{"slug": "platform", "org": "octo-org"}, {"slug": "core", "org": "hidden-org"}])
    claims = me(gw, login_ok(gw))["claims"]
    assert sorted(claims["groups"]) == ["hidden-org", "hidden-org/core", "octo-org", "octo-org/platform"], claims
    # Exactly the configured GATEHOUSE_SCOPES are asked for.
    assert requested_scopes == set(ORG_SCOPES.split()), requested_scopes


def test_unverified_primary_email_gives_no_email_claim(github, github_gateway):
    """The primary address unverified, a secondary one verified, and the unverified one shown as the
    profile's public email: no `email` claim at all."""
    github.config(user={"email": "octo@private.example"},
                  emails=[{"email": "octo@private.example", "primary": True, "verified": False, "visibility": "public"},
                          {"email": "octo@work.example", "primary": False, "verified": True, "visibility": None}])
    gw = github_gateway()
    claims = me(gw, login_ok(gw))["claims"]
    assert "email" not in claims, claims
    assert claims.get("email_verified") is not True, claims
    assert claims["sub"] == OCTOCAT_ID


def test_allowed_groups_admit_a_member_and_refuse_an_outsider(github, github_gateway):
    gw = github_gateway({"GATEHOUSE_ALLOWED_GROUPS": "octo-org"}, scopes=ORG_SCOPES)
    assert me(gw, login_ok(gw))["claims"]["sub"] == OCTOCAT_ID
    github.config(user={"login": "outsider", "id": 1000001}, orgs=[{"login": "other-org", "public": True}],
                  teams=[{"slug": "platform", "org": "other-org"}])
    sess, r = browser_login(gw)
    cb = callback_response(r)
    assert cb.status_code == 403, f"{cb.status_code}: {cb.text[:400]}"
    assert "text/html" in cb.headers.get("Content-Type", "")
    assert no_session_cookie(gw, sess, r)
    assert gw.get(sess, "/user").status_code == 401


def test_route_allow_rule_on_a_team(github, github_gateway, upstream):
    u = upstream.url
    gw = github_gateway({"GATEHOUSE_ROUTES": f"/api={u}/api,/api/platform={u}/api/platform;allow=groups:octo-org/platform"},
                        scopes=ORG_SCOPES)
    member = login_ok(gw)
    r = gw.get(member, "/api/platform/echo")
    assert r.status_code == 200 and r.json()["path"] == "/api/platform/echo", r.text[:300]
    # Same org, another team: signed in, the outer API answers, the team's route does not.
    github.config(user={"login": "hubot", "id": 4242}, teams=[{"slug": "mobile", "org": "octo-org"}])
    other = login_ok(gw)
    assert sorted(me(gw, other)["claims"]["groups"]) == ["octo-org", "octo-org/mobile"]
    assert gw.get(other, "/api/platform/echo").status_code == 403
    assert gw.get(other, "/api/echo").status_code == 200
    assert gw.get(member, "/api/platform/echo").status_code == 200


def test_expiring_tokens_are_refreshed(github, github_gateway, upstream):
    """GitHub Apps with token expiration: `expires_in`, `refresh_token`; past the lifetime an API call
    refreshes once and the upstream sees the new token; the old refresh token is spent."""
    github.config(expiring=True, expires_in=3)
    gw = github_gateway(scopes=ORG_SCOPES)
    sess = login_ok(gw)
    session = me(gw, sess)["session"]
    assert session["refreshable"] is True, session
    first = api_authorization(gw, sess)
    assert first.startswith("Bearer ghu_"), first
    assert github.stats()["refreshes"] == 0
    deadline = time.time() + 20
    current = first
    while time.time() < deadline and current == first:
        time.sleep(0.2)
        current = api_authorization(gw, sess)
    assert current != first, "the access token was never refreshed"
    stats = github.stats()
    assert stats["refreshes"] == 1 and stats["refresh_failures"] == 0, stats["token"]
    refresh = [t for t in stats["token"] if t["grant_type"] == "refresh_token"]
    assert refresh[0]["result"] == "ok" and refresh[0]["method"] == "POST"
    assert current.startswith("Bearer ghu_")
    tokens = {t["token"]: t for t in github.tokens()}
    new = tokens[current.removeprefix("Bearer ")]
    assert new["active"] and new["kind"] == "access"
    spent = [t for t in tokens.values() if t["kind"] == "refresh" and not t["active"]]
    assert len(spent) == 1
    # The identity survives the refresh.
    claims = me(gw, sess)["claims"]
    assert claims["sub"] == OCTOCAT_ID and sorted(claims["groups"]) == ["octo-org", "octo-org/platform"]


def test_github_app_answer_with_empty_scope(github, github_gateway):
    """Beyond the listed contract: a GitHub App's token answer carries `scope: ""` ("Generating a user
    access token for a GitHub App"); the sign-in and the refresh still work."""
    github.config(expiring=True, expires_in=3, app_scope_empty=True)
    gw = github_gateway()
    sess = login_ok(gw)
    assert me(gw, sess)["claims"]["sub"] == OCTOCAT_ID
    first = api_authorization(gw, sess)
    deadline = time.time() + 20
    current = first
    while time.time() < deadline and current == first:
        time.sleep(0.2)
        current = api_authorization(gw, sess)
    assert current != first and github.stats()["refreshes"] >= 1


@pytest.mark.parametrize("error", ["bad_verification_code", "incorrect_client_credentials"])
def test_token_error_with_status_200_fails_the_login(github, github_gateway, error):
    github.config(fail_token=error)
    gw = github_gateway()
    sess, r = browser_login(gw)
    cb = callback_response(r)
    assert 400 <= cb.status_code < 600, f"/callback answered {cb.status_code}: {cb.text[:400]}"
    assert "text/html" in cb.headers.get("Content-Type", ""), cb.headers
    assert no_session_cookie(gw, sess, r)
    assert gw.get(sess, "/user").status_code == 401
    assert [t["result"] for t in github.code_exchanges()] == [error]
    assert github.api_calls() == [], "no API call with no token"


def test_user_cancel_at_github(github, github_gateway):
    github.config(deny=True)
    gw = github_gateway()
    sess, r = browser_login(gw)
    cb = callback_response(r)
    assert 400 <= cb.status_code < 600, f"/callback answered {cb.status_code}: {cb.text[:400]}"
    assert no_session_cookie(gw, sess, r)
    assert github.code_exchanges() == []


def test_wrong_state_and_replayed_callback(github, github_gateway):
    gw = github_gateway()
    # A callback whose state is not the one sent.
    sess = requests.Session()
    callback = emulator_callback(sess, start_authorization(gw, sess))
    state = parse_qs(urlsplit(callback).query)["state"][0]
    forged = with_query(callback, state=state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB"))
    r = sess.get(forged, allow_redirects=False, timeout=30)
    assert 400 <= r.status_code < 600, f"forged state answered {r.status_code}: {r.text[:300]}"
    assert no_session_cookie(gw, sess, r)
    assert github.code_exchanges() == []

    # A genuine callback signs in; replayed, in the same browser or another, it does not.
    sess = requests.Session()
    callback = emulator_callback(sess, start_authorization(gw, sess))
    r = sess.get(callback, allow_redirects=False, timeout=30)
    assert r.status_code == 302 and sess.cookies.get(gw.cookie_name), r.text[:300]
    replay_same = sess.get(callback, allow_redirects=False, timeout=30)
    assert 400 <= replay_same.status_code < 600, f"replay answered {replay_same.status_code}"
    stranger = requests.Session()
    replay_other = stranger.get(callback, allow_redirects=False, timeout=30)
    assert 400 <= replay_other.status_code < 600, f"replay answered {replay_other.status_code}"
    assert no_session_cookie(gw, stranger, replay_other)
    assert len(github.code_exchanges()) <= 3
    assert [t["result"] for t in github.code_exchanges()].count("ok") == 1


def test_check_succeeds_against_the_emulator(github, github_gateway):
    gw = github_gateway(scopes=ORG_SCOPES, start=False)
    cp = run_cli(["check"], env=gw.env)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert CLIENT_SECRET not in cp.stdout + cp.stderr


def test_api_url_at_the_root_like_api_github_com(tmp_path, github_gateway):
    """api.github.com serves the REST API at its root (no /api/v3): GATEHOUSE_API_URL without a path."""
    emulator = GitHubEmulator(tmp_path / "root-api", api_prefix="", name="github-root-api")
    try:
        emulator.config(require_user_agent=False)
        gw = github_gateway(emulator=emulator)
        assert gw.env["GATEHOUSE_API_URL"] == emulator.base
        claims = me(gw, login_ok(gw))["claims"]
        assert claims["sub"] == OCTOCAT_ID and claims["email"] == "octocat@github.example"
        assert {c["path"] for c in emulator.api_calls()} >= {"/user", "/user/emails"}
    finally:
        emulator.stop()  # the factory stops the gateway


def test_api_calls_send_a_user_agent(github, github_gateway):
    """GitHub refuses REST calls without a User-Agent ("Getting started with the REST API", "User
    agent"): 403 in plain text. Not in the listed contract, but a sign-in at the real GitHub needs it."""
    github.config(require_user_agent=True)
    gw = github_gateway()
    sess, r = browser_login(gw)
    calls = github.api_calls()
    agents = [dict((k.lower(), v) for k, v in c["headers"]).get("user-agent") for c in calls]
    assert calls and all(agents), f"API calls without User-Agent: {[c['path'] for c in calls]}"
    assert callback_response(r).status_code == 302
    assert me(gw, sess)["claims"]["sub"] == OCTOCAT_ID


def test_more_orgs_than_one_page(github, github_gateway):
    """Beyond the listed contract: GitHub pages lists 30 at a time ("Using pagination in the REST API");
    a member of 40 organizations gets all 40 as groups (by per_page=100 or by following Link)."""
    orgs = [{"login": f"org-{i:02d}", "public": False} for i in range(40)]
    github.config(orgs=orgs, teams=[])
    gw = github_gateway(scopes=ORG_SCOPES)
    claims = me(gw, login_ok(gw))["claims"]
    assert sorted(claims["groups"]) == [o["login"] for o in orgs], claims.get("groups")


def test_more_orgs_and_teams_than_a_page_of_100(github, github_gateway):
    """Beyond the listed contract: `per_page` stops at 100 ("Using pagination in the REST API"), so a
    member of 130 organizations and 120 teams is only fully known by following the `Link: rel="next"`
    header; a group left out silently could make GATEHOUSE_ALLOWED_GROUPS or an `allow=` rule refuse
    a member."""
    orgs = [{"login": f"org-{i:03d}", "public": False} for i in range(130)]
    teams = [{"slug": f"team-{i:03d}", "org": "org-000"} for i in range(120)]
    github.config(orgs=orgs, teams=teams)
    gw = github_gateway(scopes=ORG_SCOPES)
    groups = me(gw, login_ok(gw))["claims"]["groups"]
    assert len([g for g in groups if "/" not in g]) == 130, f"{len(groups)} groups: orgs cut at a page?"
    assert len([g for g in groups if "/" in g]) == 120, f"{len(groups)} groups: teams cut at a page?"
    pages = [c["query"] for c in github.api_calls("user/orgs")]
    assert len(pages) >= 2, pages
