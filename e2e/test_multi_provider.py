"""Several providers at once (SPEC: "Several providers at once (GATEHOUSE_PROVIDERS)").

Two different providers serve one gateway at the same time:

* ``corp-sso``: the third-party provider from PyPI (oidc-provider-mock behind
  provider_server.py, the ``provider`` fixture), generic profile, a real login form;
  its name has a dash, so its variables are ``GATEHOUSE_IDP_CORP_SSO_*``;
* ``google``: provider_emulator.py with the google profile (short ``iss``, no
  end-session endpoint, ``access_type=offline``), signing the user in at once.

Each provider's redirect URI is ``{PUBLIC_URL}/callback/NAME`` and is registered at that
provider only. Covered: /providers and the chooser page, a full login at each provider,
the mix-up defence (a response on the other provider's callback), per-provider
back-channel logout, a provider that is down or hangs, the route option ``providers=``,
per-provider refresh and logout, the ``sessions`` CLI, configuration refusals and the
metrics labels.
"""

from __future__ import annotations

import html
import json
import os
import re
import socket
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from harness import (CLIENT_ID, CLIENT_SECRET, Gateway, free_port, gatehouse_bin, jwt_claims,
                     provider_authorize, run_cli, safe_name, set_cookie_headers, wait_http_ok)
from test_providers import EmulatedProvider

CORP = "corp-sso"
GOOGLE = "google"


# ---------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def google(tmp_path_factory):
    emu = EmulatedProvider(tmp_path_factory.mktemp("emu-google"), "google")
    yield emu
    emu.stop()


@pytest.fixture(autouse=True)
def _reset_google_after_test(request):
    yield
    if "google" in request.fixturenames:
        emu = request.getfixturevalue("google")
        if emu.proc.alive():
            try:
                requests.post(emu.base + "/_test/reset", timeout=5)
            except requests.RequestException:
                pass


def provider_env(provider, google) -> dict:
    """The settings of both providers, none of the single-provider variables."""
    return {
        "GATEHOUSE_ISSUER": None,
        "GATEHOUSE_CLIENT_ID": None,
        "GATEHOUSE_CLIENT_SECRET": None,
        "GATEHOUSE_IDP_CORP_SSO_ISSUER": provider.issuer,
        "GATEHOUSE_IDP_CORP_SSO_CLIENT_ID": provider.client_id,
        "GATEHOUSE_IDP_CORP_SSO_CLIENT_SECRET": provider.client_secret,
        "GATEHOUSE_IDP_CORP_SSO_DISPLAY_NAME": "Corp SSO",
        "GATEHOUSE_IDP_GOOGLE_ISSUER": google.issuer,
        "GATEHOUSE_IDP_GOOGLE_CLIENT_ID": CLIENT_ID,
        "GATEHOUSE_IDP_GOOGLE_CLIENT_SECRET": CLIENT_SECRET,
        "GATEHOUSE_IDP_GOOGLE_PROFILE": "google",
    }


@pytest.fixture
def multi(provider, google, upstream, tmp_path, request):
    """make(providers="corp-sso,google", env=None, start=True, wait_ready=True) -> Gateway
    with both providers configured and /callback/NAME registered at each."""
    b = gatehouse_bin()
    if not b.exists():
        msg = f"gatehouse binary not found at {b} (set GATEHOUSE_BIN or run `swift build`)"
        if os.environ.get("E2E_REQUIRE_GATEWAY") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    made: list[Gateway] = []

    def make(providers: str = f"{CORP},{GOOGLE}", env: dict | None = None, start=True,
             wait_ready=True) -> Gateway:
        e = provider_env(provider, google)
        e["GATEHOUSE_PROVIDERS"] = providers
        e.update(env or {})
        n = len(made) + 1
        gw = Gateway(provider, upstream, tmp_path / f"mgw{n}", env=e,
                     name=safe_name(f"gateway-{request.node.name}-{n}"), register=False,
                     start=False)
        made.append(gw)
        provider.register_redirect(gw.public_url + f"/callback/{CORP}")
        google.register_redirect(gw.public_url + f"/callback/{GOOGLE}")
        if start:
            gw.start(wait_ready=wait_ready)
        return gw

    yield make
    for gw in made:
        gw.stop()


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def login_url(gw: Gateway, name: str, return_to: str | None = None) -> str:
    q = {"provider": name}
    if return_to is not None:
        q["returnTo"] = return_to
    return gw.url + "/login?" + requests.models.RequestEncodingMixin._encode_params(q)


def begin(gw: Gateway, name: str, sess: requests.Session, username="alice",
          return_to: str | None = None) -> str:
    """/login?provider=NAME, then the provider's side; returns the callback URL it gives
    (not yet delivered to the gateway)."""
    r = sess.get(login_url(gw, name, return_to), allow_redirects=False, timeout=30)
    assert r.status_code == 302, f"/login?provider={name} answered {r.status_code}: {r.text[:500]}"
    authorize = r.headers["Location"]
    if name == GOOGLE:
        # The emulator signs the user in at once and redirects back.
        back = sess.get(authorize, allow_redirects=False, timeout=30)
        assert back.status_code == 302, f"emulator authorize {back.status_code}: {back.text[:500]}"
        callback = back.headers["Location"]
    else:
        callback = provider_authorize(sess, authorize, username)
    assert callback.startswith(gw.public_url + f"/callback/{name}?"), callback
    return callback


def login_at(gw: Gateway, name: str, username="alice", return_to: str | None = None,
             sess: requests.Session | None = None) -> requests.Session:
    sess = sess or requests.Session()
    callback = begin(gw, name, sess, username, return_to)
    cb = sess.get(callback, allow_redirects=False, timeout=30)
    assert cb.status_code == 302, f"/callback/{name} answered {cb.status_code}: {cb.text[:800]}"
    want = return_to or "/"
    assert cb.headers["Location"] in (want, gw.public_url + want), cb.headers["Location"]
    assert any(h.startswith(gw.cookie_name + "=") for h in set_cookie_headers(cb))
    return sess


def me(gw: Gateway, sess: requests.Session) -> requests.Response:
    return gw.get(sess, "/user")


def bearer(gw: Gateway, sess: requests.Session, path="/api/hello") -> str:
    r = gw.get(sess, path)
    assert r.status_code == 200, (path, r.status_code, r.text[:300])
    return r.json()["authorization"]


def issued_access_tokens(provider) -> set[str]:
    return {t["token"] for t in provider.tokens() if t["kind"] == "access_token"}


def code_exchanges_at_corp(provider) -> int:
    return provider.stats()["token_requests"].get("authorization_code", 0)


def google_token_requests(google, grant: str | None = None) -> list[dict]:
    return [t for t in google.stats()["token"] if grant is None or t["grant_type"] == grant]


def assert_html(r: requests.Response, status: int):
    assert r.status_code == status, (r.status_code, r.text[:400])
    assert r.headers.get("Content-Type", "").startswith("text/html"), r.headers


def until(pred, limit_s=5.0, step=0.1):
    deadline = time.time() + limit_s
    while True:
        v = pred()
        if v or time.time() > deadline:
            return v
        time.sleep(step)


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def metric_samples(gw: Gateway, name: str) -> list[tuple[dict, float]]:
    text = requests.get(gw.url + "/metrics", timeout=10).text
    out = []
    for line in text.splitlines():
        m = _SAMPLE.match(line.strip())
        if m and m.group(1) == name:
            out.append((dict(_LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return out


def metric_value(gw: Gateway, name: str, **labels) -> float | None:
    """Sum of the samples of `name` whose labels include `labels` (None: no such sample)."""
    hits = [v for lab, v in metric_samples(gw, name)
            if all(lab.get(k) == val for k, val in labels.items())]
    return sum(hits) if hits else None


# ---------------------------------------------------------------------------
# 1. /providers, the chooser page, unknown names
# ---------------------------------------------------------------------------


def test_providers_list_chooser_and_unknown_provider(multi, provider, google):
    # Configured order (not alphabetical): google first.
    gw = multi(providers=f"{GOOGLE},{CORP}")
    r = requests.get(gw.url + "/providers", timeout=10)  # no session, no CSRF header
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    assert r.json() == {"providers": [{"name": GOOGLE, "displayName": "Google"},
                                      {"name": CORP, "displayName": "Corp SSO"}]}

    # /login without provider: a chooser page linking each provider, returnTo kept.
    r = requests.get(gw.url + "/login?returnTo=/reports/q3", allow_redirects=False, timeout=10)
    assert_html(r, 200)
    links = [html.unescape(h) for h in re.findall(r'href="([^"]*)"', r.text)]
    logins = [urlsplit(h) for h in links if urlsplit(h).path == "/login"]
    assert [parse_qs(u.query) for u in logins] == [
        {"provider": [GOOGLE], "returnTo": ["/reports/q3"]},
        {"provider": [CORP], "returnTo": ["/reports/q3"]},
    ], links
    assert "Google" in r.text and "Corp SSO" in r.text
    # Following a chooser link starts the login at that provider.
    corp_link = next(h for h in links if f"provider={CORP}" in h)
    first = requests.get(gw.url + corp_link, allow_redirects=False, timeout=10)
    assert first.status_code == 302
    assert first.headers["Location"].startswith(provider.discovery["authorization_endpoint"] + "?")

    # A route's step-up link (SPEC: "/login?acr_values=…&max_age=…", no provider) reaches the
    # chooser: its links carry the step-up on, and the login started there asks for it.
    r = requests.get(gw.url + "/login?returnTo=/r&acr_values=urn:gold%20urn:silver&max_age=60",
                     allow_redirects=False, timeout=10)
    assert_html(r, 200)
    links = [html.unescape(h) for h in re.findall(r'href="([^"]*)"', r.text)]
    logins = [parse_qs(urlsplit(h).query) for h in links if urlsplit(h).path == "/login"]
    assert logins == [
        {"provider": [name], "returnTo": ["/r"], "acr_values": ["urn:gold urn:silver"], "max_age": ["60"]}
        for name in (GOOGLE, CORP)], links
    corp_link = next(h for h in links if f"provider={CORP}" in h)
    first = requests.get(gw.url + corp_link, allow_redirects=False, timeout=10)
    assert first.status_code == 302
    sent = parse_qs(urlsplit(first.headers["Location"]).query)
    assert sent.get("acr_values") == ["urn:gold urn:silver"] and sent.get("max_age") == ["60"], sent

    # The chooser validates returnTo as always.
    for bad in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
        r = requests.get(gw.url + "/login", params={"returnTo": bad}, allow_redirects=False,
                         timeout=10)
        assert r.status_code == 400, (bad, r.status_code, r.headers.get("Location"))
        r = requests.get(gw.url + "/login", params={"provider": GOOGLE, "returnTo": bad},
                         allow_redirects=False, timeout=10)
        assert r.status_code == 400, (bad, r.status_code, r.headers.get("Location"))

    # Unknown provider: 400 HTML, nothing sent anywhere.
    before = len(google.stats()["authorize"])
    r = requests.get(gw.url + "/login?provider=nope&returnTo=/", allow_redirects=False, timeout=10)
    assert_html(r, 400)
    assert "Location" not in r.headers
    assert len(google.stats()["authorize"]) == before
    assert provider.stats()["authorize_requests"] == []

    # Each provider's own redirect URI; an unknown callback path is 404.
    r = requests.get(login_url(gw, GOOGLE), allow_redirects=False, timeout=10)
    assert r.status_code == 302
    q = parse_qs(urlsplit(r.headers["Location"]).query)
    assert r.headers["Location"].startswith(google.discovery["authorization_endpoint"] + "?")
    assert q["redirect_uri"] == [gw.url + "/callback/google"]
    r = requests.get(login_url(gw, CORP), allow_redirects=False, timeout=10)
    assert parse_qs(urlsplit(r.headers["Location"]).query)["redirect_uri"] == [
        gw.url + "/callback/corp-sso"]
    r = requests.get(gw.url + "/callback/unknown?code=x&state=y", allow_redirects=False,
                     timeout=10)
    assert r.status_code == 404, r.status_code


# ---------------------------------------------------------------------------
# 2. a full login at each provider; /user; the API gets that provider's token
# ---------------------------------------------------------------------------


def test_login_at_each_provider_user_and_api_token(multi, provider, google):
    gw = multi()
    corp = login_at(gw, CORP, "alice", return_to="/dash")
    goog = login_at(gw, GOOGLE, return_to="/inbox?tab=1")

    u = me(gw, corp)
    assert u.status_code == 200, u.text
    j = u.json()
    assert j["provider"] == CORP and j["sub"] == "alice"
    assert j["claims"]["iss"] == provider.issuer

    u = me(gw, goog)
    assert u.status_code == 200, u.text
    j = u.json()
    assert j["provider"] == GOOGLE and j["sub"] == "user-1"
    # Google's short issuer form (the google profile of this provider only).
    assert j["claims"]["iss"] == google.issuer.split("://", 1)[1]

    # The authorization requests: each provider got exactly one, with its own client settings.
    authz = provider.stats()["authorize_requests"]
    assert len(authz) == 1 and authz[0]["redirect_uri"] == gw.url + "/callback/corp-sso"
    g_authz = google.stats()["authorize"]
    assert len(g_authz) == 1 and g_authz[0]["redirect_uri"] == gw.url + "/callback/google"
    assert g_authz[0].get("access_type") == "offline"  # google profile, for google only
    assert "access_type" not in authz[0]
    assert code_exchanges_at_corp(provider) == 1
    assert len(google_token_requests(google, "authorization_code")) == 1

    # API calls carry the session's own provider's access token.
    corp_bearer = bearer(gw, corp)
    goog_bearer = bearer(gw, goog)
    corp_tokens = issued_access_tokens(provider)
    assert corp_bearer.startswith("Bearer ") and corp_bearer[7:] in corp_tokens
    assert goog_bearer.startswith("Bearer at-"), goog_bearer  # the emulator's token format
    assert goog_bearer[7:] not in corp_tokens


def test_pending_logins_at_both_providers_in_one_browser(multi, provider, google):
    """Two tabs: a login started at each provider, completed in the reverse order. Both
    callbacks succeed; the last one's session is the browser's."""
    gw = multi()
    sess = requests.Session()
    corp_cb = begin(gw, CORP, sess)
    goog_cb = begin(gw, GOOGLE, sess)
    r = sess.get(goog_cb, allow_redirects=False, timeout=30)
    assert r.status_code == 302, r.text[:300]
    assert me(gw, sess).json()["provider"] == GOOGLE
    r = sess.get(corp_cb, allow_redirects=False, timeout=30)
    assert r.status_code == 302, r.text[:300]
    u = me(gw, sess).json()
    assert u["provider"] == CORP and u["sub"] == "alice"
    assert bearer(gw, sess)[7:] in issued_access_tokens(provider)


def test_per_provider_settings_and_unprefixed_defaults(multi, provider, google):
    """An unprefixed provider variable is the default for every provider that does not set
    its own; per-provider settings apply to that provider only."""
    gw = multi(env={"GATEHOUSE_AUTH_PARAMS": "ui_locales=de",
                    "GATEHOUSE_IDP_CORP_SSO_AUTH_PARAMS": "ui_locales=fr",
                    "GATEHOUSE_IDP_GOOGLE_REQUIRE_CLAIMS": "hd=example.com"})
    login_at(gw, CORP)
    assert provider.stats()["authorize_requests"][-1].get("ui_locales") == "fr"

    # google: the unprefixed default, and its own required claim (the emulated user has no hd).
    sess = requests.Session()
    callback = begin(gw, GOOGLE, sess)
    assert google.stats()["authorize"][-1].get("ui_locales") == "de"
    r = sess.get(callback, allow_redirects=False, timeout=30)
    assert_html(r, 400)
    assert me(gw, sess).status_code == 401
    google.config(user={"hd": "example.com"})
    s = login_at(gw, GOOGLE)
    assert me(gw, s).json()["claims"]["hd"] == "example.com"


# ---------------------------------------------------------------------------
# 3. mix-up: a response delivered on the other provider's callback
# ---------------------------------------------------------------------------


def test_mixup_response_on_other_providers_callback(multi, provider, google):
    # Without RFC 9207 `iss` at corp, the callback path is the only thing that tells the
    # providers' responses apart: this checks that defence on its own.
    provider.config(iss_param=False)
    gw = multi()

    # corp-sso's response delivered to /callback/google.
    sess = requests.Session()
    callback = begin(gw, CORP, sess, "alice")
    assert "iss=" not in callback
    wrong = callback.replace("/callback/corp-sso?", "/callback/google?", 1)
    r = sess.get(wrong, allow_redirects=False, timeout=30)
    assert_html(r, 400)
    assert code_exchanges_at_corp(provider) == 0, provider.stats()["token_requests"]
    assert google_token_requests(google) == []
    assert me(gw, sess).status_code == 401
    # The pending login was consumed: its own callback fails now too, still no token request.
    r = sess.get(callback, allow_redirects=False, timeout=30)
    assert_html(r, 400)
    assert code_exchanges_at_corp(provider) == 0, provider.stats()["token_requests"]
    assert google_token_requests(google) == []
    assert me(gw, sess).status_code == 401

    # google's response delivered to /callback/corp-sso.
    sess = requests.Session()
    callback = begin(gw, GOOGLE, sess)
    wrong = callback.replace("/callback/google?", "/callback/corp-sso?", 1)
    r = sess.get(wrong, allow_redirects=False, timeout=30)
    assert_html(r, 400)
    assert google_token_requests(google) == []
    assert code_exchanges_at_corp(provider) == 0
    r = sess.get(callback, allow_redirects=False, timeout=30)
    assert_html(r, 400)
    assert google_token_requests(google) == []
    assert code_exchanges_at_corp(provider) == 0
    assert me(gw, sess).status_code == 401

    # `iss`, when present, must be that provider's issuer: google's response claiming corp's.
    sess = requests.Session()
    callback = begin(gw, GOOGLE, sess)
    r = sess.get(callback + "&" + requests.models.RequestEncodingMixin._encode_params(
        {"iss": provider.issuer}), allow_redirects=False, timeout=30)
    assert_html(r, 400)
    assert google_token_requests(google) == []

    # And the right delivery still works for both, in the same gateway.
    assert me(gw, login_at(gw, CORP)).json()["provider"] == CORP
    assert me(gw, login_at(gw, GOOGLE)).json()["provider"] == GOOGLE


# ---------------------------------------------------------------------------
# 4. back-channel logout per provider
# ---------------------------------------------------------------------------


def test_backchannel_logout_ends_only_that_providers_sessions(multi, provider, google):
    # The same subject at both providers: a sub-only logout token of corp-sso must not end
    # google's "alice".
    google.config(user={"sub": "alice"})
    gw = multi()
    corp = login_at(gw, CORP, "alice")
    goog = login_at(gw, GOOGLE)
    assert me(gw, corp).json()["sub"] == me(gw, goog).json()["sub"] == "alice"

    # corp's token at google's endpoint: other keys and issuer, refused; nothing ends.
    token = provider.logout_token(sub="alice")
    r = requests.post(gw.url + "/backchannel-logout/google", data={"logout_token": token},
                      timeout=10)
    assert r.status_code == 400, (r.status_code, r.text[:300])
    assert me(gw, corp).status_code == 200 and me(gw, goog).status_code == 200

    token = provider.logout_token(sub="alice")
    r = requests.post(gw.url + "/backchannel-logout/corp-sso", data={"logout_token": token},
                      timeout=10)
    assert r.status_code == 200, (r.status_code, r.text[:300])
    assert me(gw, corp).status_code == 401
    assert me(gw, goog).status_code == 200, "google's session ended by corp-sso's logout token"
    assert gw.get(goog, "/api/hello").status_code == 200
    # Replay refused.
    r = requests.post(gw.url + "/backchannel-logout/corp-sso", data={"logout_token": token},
                      timeout=10)
    assert r.status_code == 400

    # By sid as well: a new corp session ends, google's stays.
    corp = login_at(gw, CORP, "alice")
    sid = me(gw, corp).json()["claims"]["sid"]
    r = requests.post(gw.url + "/backchannel-logout/corp-sso",
                      data={"logout_token": provider.logout_token(sid=sid)}, timeout=10)
    assert r.status_code == 200, r.text[:300]
    assert me(gw, corp).status_code == 401
    assert me(gw, goog).status_code == 200


# ---------------------------------------------------------------------------
# 5. a provider that is down, or hangs
# ---------------------------------------------------------------------------


def test_one_provider_down_others_work(multi, provider, google):
    closed = free_port()  # nothing listens there
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(1)  # accepts TCP connections (backlog) and never answers
    try:
        gw = multi(providers=f"{CORP},down,{GOOGLE},hang", env={
            "GATEHOUSE_IDP_DOWN_ISSUER": f"http://127.0.0.1:{closed}",
            "GATEHOUSE_IDP_DOWN_CLIENT_ID": CLIENT_ID,
            "GATEHOUSE_IDP_HANG_ISSUER": f"http://127.0.0.1:{hang.getsockname()[1]}",
            "GATEHOUSE_IDP_HANG_CLIENT_ID": CLIENT_ID,
            "GATEHOUSE_PROVIDER_TIMEOUT": "2s",
        })  # waits for /readyz 200
        r = requests.get(gw.url + "/readyz", timeout=10)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["status"] == "ready"
        states = {p["name"]: p for p in body["providers"]}
        assert [p["name"] for p in body["providers"]] == [CORP, "down", GOOGLE, "hang"]
        assert states[CORP]["state"] == "loaded" and states[GOOGLE]["state"] == "loaded"
        assert states["down"]["state"] in ("failed", "loading"), states["down"]
        assert states["hang"]["state"] in ("failed", "loading"), states["hang"]
        # "failed" within a few provider timeouts, with a reason.
        assert until(lambda: {p["name"]: p for p in requests.get(
            gw.url + "/readyz", timeout=10).json()["providers"]}["down"]["state"] == "failed",
            limit_s=15)
        down = {p["name"]: p for p in requests.get(gw.url + "/readyz", timeout=10)
                .json()["providers"]}["down"]
        assert down.get("reason"), down

        r = requests.get(gw.url + "/providers", timeout=10)
        assert [p["name"] for p in r.json()["providers"]] == [CORP, "down", GOOGLE, "hang"]
        assert r.json()["providers"][1]["displayName"] == "down"  # default: the name

        # /login at an unavailable provider: the usual error page, quickly (never hangs).
        for name in ("down", "hang"):
            t0 = time.monotonic()
            r = requests.get(gw.url + f"/login?provider={name}&returnTo=/", allow_redirects=False,
                             timeout=30)
            took = time.monotonic() - t0
            assert r.status_code in (502, 503), (name, r.status_code, r.text[:300])
            assert r.headers.get("Content-Type", "").startswith("text/html")
            assert took < 15, f"/login?provider={name} took {took:.1f}s"

        # The others still sign in, and their API calls work.
        corp = login_at(gw, CORP)
        goog = login_at(gw, GOOGLE)
        assert me(gw, corp).json()["provider"] == CORP
        assert me(gw, goog).json()["provider"] == GOOGLE
        assert bearer(gw, corp).startswith("Bearer ")
        assert bearer(gw, goog).startswith("Bearer at-")
    finally:
        hang.close()


def test_readyz_503_when_no_provider_is_loaded(multi):
    gw = multi(providers="down-a,down-b", env={
        "GATEHOUSE_IDP_DOWN_A_ISSUER": f"http://127.0.0.1:{free_port()}",
        "GATEHOUSE_IDP_DOWN_A_CLIENT_ID": CLIENT_ID,
        "GATEHOUSE_IDP_DOWN_B_ISSUER": f"http://127.0.0.1:{free_port()}",
        "GATEHOUSE_IDP_DOWN_B_CLIENT_ID": CLIENT_ID,
    }, wait_ready=False)
    wait_http_ok(gw.url + "/healthz", gw.proc)

    def failed_both():
        r = requests.get(gw.url + "/readyz", timeout=10)
        try:
            states = [p["state"] for p in r.json()["providers"]]
        except (ValueError, KeyError, TypeError):
            return None
        return [r] if states == ["failed", "failed"] else None  # (a 503 Response is falsy)

    got = until(failed_both, limit_s=20)
    assert got, requests.get(gw.url + "/readyz", timeout=10).text
    r = got[0]
    assert r.status_code == 503, r.text
    assert [p["name"] for p in r.json()["providers"]] == ["down-a", "down-b"]
    assert all(p.get("reason") for p in r.json()["providers"])
    r = requests.get(gw.url + "/login?provider=down-a", allow_redirects=False, timeout=30)
    assert r.status_code in (502, 503), r.status_code


def test_unreachable_provider_reason_names_its_own_variable(multi):
    """With GATEHOUSE_PROVIDERS the operator cannot set GATEHOUSE_ISSUER (it is refused):
    the reason of a provider that cannot be reached must point at that provider's variable."""
    gw = multi(providers=f"{CORP},down", env={
        "GATEHOUSE_IDP_DOWN_ISSUER": f"http://127.0.0.1:{free_port()}",
        "GATEHOUSE_IDP_DOWN_CLIENT_ID": CLIENT_ID,
    })
    assert until(lambda: requests.get(gw.url + "/readyz", timeout=10).json()["providers"][1]
                 ["state"] == "failed", limit_s=15)
    reason = requests.get(gw.url + "/readyz", timeout=10).json()["providers"][1]["reason"]
    assert not re.search(r"\bGATEHOUSE_ISSUER\b", reason), reason
    assert "GATEHOUSE_IDP_DOWN_ISSUER" in reason or "down" in reason, reason


# ---------------------------------------------------------------------------
# 6. route option providers=
# ---------------------------------------------------------------------------


def test_route_option_providers(multi, upstream, provider, google):
    gw = multi(env={"GATEHOUSE_ROUTES": f"/api={upstream.url},"
                                        f"/corp={upstream.url}/api;providers={CORP},"
                                        f"/both={upstream.url}/api;providers={GOOGLE}|{CORP}"})
    corp = login_at(gw, CORP)
    goog = login_at(gw, GOOGLE)

    upstream.clear_log()
    r = gw.get(goog, "/corp/hello")
    assert r.status_code == 403, (r.status_code, r.text[:300])
    assert r.json()["error"] == "provider_not_allowed" and r.json().get("error_description")
    assert not [e for e in upstream.log() if e["path"].startswith("/api/hello")], \
        "a refused request reached the upstream"

    r = gw.get(corp, "/corp/hello")
    assert r.status_code == 200, r.text[:300]
    assert r.json()["authorization"][7:] in issued_access_tokens(provider)
    for sess in (corp, goog):
        assert gw.get(sess, "/both/hello").status_code == 200
        assert gw.get(sess, "/api/hello").status_code == 200
    # Without a session it is still 401, not 403.
    r = gw.get(requests.Session(), "/corp/hello")
    assert r.status_code == 401, r.status_code


def test_assertion_names_the_sessions_provider(multi, upstream, provider, google):
    """With several providers the assertion says which one signed the user in (`idp`, `idp_iss`):
    a `sub` is unique only within its provider."""
    import base64
    gw = multi(env={"GATEHOUSE_ROUTES": f"/api={upstream.url},/who={upstream.url}/api;identity=both;audience=who"})
    seen = {}
    for name in (CORP, GOOGLE):
        sess = login_at(gw, name)
        r = gw.get(sess, "/who/echo")
        assert r.status_code == 200, r.text[:300]
        headers = {k.lower(): v for k, v in r.json()["headers"]}
        part = headers["gatehouse-assertion"].split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
        assert claims["aud"] == "who" and claims["iss"] == gw.url
        seen[name] = claims
        assert headers["x-forwarded-user"] == claims["sub"]
    assert seen[CORP]["idp"] == CORP and seen[CORP]["idp_iss"] == provider.issuer
    assert seen[GOOGLE]["idp"] == GOOGLE and seen[GOOGLE]["idp_iss"] == google.issuer


# ---------------------------------------------------------------------------
# refresh and logout at the session's own provider
# ---------------------------------------------------------------------------


def await_new_bearer(gw, sess, old, limit_s=20.0) -> str:
    deadline = time.time() + limit_s
    while time.time() < deadline:
        cur = bearer(gw, sess)
        if cur != old:
            return cur
        time.sleep(0.2)
    raise AssertionError("the access token was never refreshed")


def test_refresh_and_logout_go_to_the_sessions_provider(multi, provider, google):
    gw = multi()
    provider.config(access_ttl=3)  # the first access token of corp-sso is short-lived
    corp = login_at(gw, CORP)
    goog = login_at(gw, GOOGLE)  # google's token lives an hour for now

    first = bearer(gw, corp)
    await_new_bearer(gw, corp, first)
    assert provider.refresh_count() >= 1
    assert google_token_requests(google, "refresh_token") == []
    corp_refreshes = provider.refresh_count()

    google.config(access_ttl=3)
    goog2 = login_at(gw, GOOGLE)
    first = bearer(gw, goog2)
    await_new_bearer(gw, goog2, first)
    refreshes = google_token_requests(google, "refresh_token")
    assert refreshes and all(t["method"] == "POST" for t in refreshes)
    assert provider.refresh_count() == corp_refreshes

    # Logout: corp-sso's revocation and end-session; google has no end-session endpoint.
    r = gw.post(corp, "/logout")
    assert r.status_code == 302, r.text
    loc = r.headers["Location"]
    assert loc.startswith(provider.discovery["end_session_endpoint"] + "?"), loc
    q = parse_qs(urlsplit(loc).query)
    assert q["post_logout_redirect_uri"] == [gw.url + "/"] and q["client_id"] == [CLIENT_ID]
    assert len(q["state"]) == 1 and len(q["state"][0]) >= 16
    assert jwt_claims(q["id_token_hint"][0])["iss"] == provider.issuer
    # The access token is revoked as well as the refresh token (RFC 7009 token_type_hint).
    assert sorted(x["token_type_hint"] for x in provider.stats()["revocations"]) == ["access_token", "refresh_token"]
    assert google.stats()["revocations"] == []
    assert me(gw, corp).status_code == 401

    r = gw.post(goog, "/logout")
    assert r.status_code == 302, r.text
    assert r.headers["Location"] in ("/", gw.url + "/"), r.headers["Location"]
    assert sorted(x.get("token_type_hint") for x in google.stats()["revocations"]) == ["access_token", "refresh_token"]
    assert len(provider.stats()["revocations"]) == 2
    assert me(gw, goog).status_code == 401
    assert me(gw, goog2).status_code == 200

    # Refreshes are labelled by provider in the metrics (SPEC: "metrics label logins and
    # refreshes by provider").
    assert (metric_value(gw, "gatehouse_token_refreshes_total", provider=CORP) or 0) >= 1, \
        metric_samples(gw, "gatehouse_token_refreshes_total")
    assert (metric_value(gw, "gatehouse_token_refreshes_total", provider=GOOGLE) or 0) >= 1, \
        metric_samples(gw, "gatehouse_token_refreshes_total")


# ---------------------------------------------------------------------------
# 7. the sessions CLI
# ---------------------------------------------------------------------------


def test_sessions_cli_provider_column_and_revoke(multi, provider, google):
    google.config(user={"sub": "alice"})
    gw = multi()
    corp = login_at(gw, CORP, "alice")
    goog = login_at(gw, GOOGLE)
    bob = login_at(gw, CORP, "bob")

    cp = gw.cli("sessions", "list")
    assert cp.returncode == 0, cp
    lines = [l for l in cp.stdout.splitlines() if l.strip()]
    assert lines[0].split()[-1] == "PROVIDER", lines[0]
    rows = sorted((l.split()[1], l.split()[-1]) for l in lines[1:])
    assert rows == [("alice", CORP), ("alice", GOOGLE), ("bob", CORP)], cp.stdout

    cp = gw.cli("sessions", "list", "--json")
    assert cp.returncode == 0, cp
    listed = json.loads(cp.stdout)
    assert sorted((s["sub"], s["provider"]) for s in listed) == rows

    # A subject is one provider's: --sub alone, for a subject with sessions at two providers, is a
    # usage error naming both, and nothing is revoked.
    cp = gw.cli("sessions", "revoke", "--sub", "alice")
    assert cp.returncode == 64, cp
    assert "--provider" in cp.stdout + cp.stderr
    assert CORP in cp.stderr and GOOGLE in cp.stderr, cp.stderr
    assert me(gw, corp).status_code == 200 and me(gw, goog).status_code == 200

    # Sessions at one provider only: --sub alone (SPEC's `revoke --sub SUB`) ends them there.
    cp = gw.cli("sessions", "revoke", "--sub", "bob")
    assert cp.returncode == 0, cp
    assert until(lambda: me(gw, bob).status_code == 401, limit_s=5)
    assert me(gw, corp).status_code == 200 and me(gw, goog).status_code == 200

    cp = gw.cli("sessions", "revoke", "--sub", "alice", "--provider", CORP)
    assert cp.returncode == 0, cp
    assert until(lambda: me(gw, corp).status_code == 401, limit_s=5)
    assert me(gw, goog).status_code == 200, "google's alice revoked with --provider corp-sso"
    listed = json.loads(gw.cli("sessions", "list", "--json").stdout)
    assert sorted((s["sub"], s["provider"]) for s in listed) == [("alice", GOOGLE)]

    cp = gw.cli("sessions", "revoke", "--sub", "alice", "--provider", GOOGLE)
    assert cp.returncode == 0, cp
    assert until(lambda: me(gw, goog).status_code == 401, limit_s=5)


def test_sessions_revoke_unknown_provider_is_usage_error(multi, provider, google):
    """`--provider` names one of GATEHOUSE_PROVIDERS; a typo is bad usage (64), not a
    silent "nothing to revoke"."""
    gw = multi()
    corp = login_at(gw, CORP, "alice")
    cp = gw.cli("sessions", "revoke", "--sub", "alice", "--provider", "corp_sso")
    assert me(gw, corp).status_code == 200
    assert cp.returncode == 64, (cp.returncode, cp.stdout, cp.stderr)
    assert "corp_sso" in cp.stdout + cp.stderr


def test_sessions_keep_their_provider_across_restart_and_end_with_it(multi, provider, google,
                                                                    upstream):
    """Sessions remember their provider across a restart. A session of a provider that is no
    longer configured is refused: nothing can refresh or revoke its tokens any more, and its
    provider's back-channel logout (/backchannel-logout/NAME) no longer reaches the gateway."""
    gw = multi()
    corp = login_at(gw, CORP)
    goog = login_at(gw, GOOGLE)
    gw.restart()
    assert me(gw, corp).json()["provider"] == CORP
    assert me(gw, goog).json()["provider"] == GOOGLE
    assert bearer(gw, goog).startswith("Bearer at-")

    gw.stop()
    gw.env["GATEHOUSE_PROVIDERS"] = CORP
    gw.start()
    assert me(gw, corp).status_code == 200
    r = requests.post(gw.url + "/backchannel-logout/google", data={"logout_token": "x.y.z"},
                      timeout=10)
    assert r.status_code == 404, r.status_code
    upstream.clear_log()
    r = gw.get(goog, "/api/hello")
    assert r.status_code == 401, (r.status_code, r.text[:300])
    assert not [e for e in upstream.log() if e["path"] == "/api/hello"]
    r = me(gw, goog)
    assert r.status_code == 401, (r.status_code, r.text[:300])


# ---------------------------------------------------------------------------
# 8. configuration refusals
# ---------------------------------------------------------------------------


def cli_env(provider, google, **changes) -> dict:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
           "LANG": "C.UTF-8", "GATEHOUSE_PROVIDERS": f"{CORP},{GOOGLE}",
           "GATEHOUSE_PUBLIC_URL": "http://127.0.0.1:8080",
           "GATEHOUSE_LISTEN": f"127.0.0.1:{free_port()}",
           "GATEHOUSE_DATABASE": "/nonexistent-dir/never-used.sqlite",
           "GATEHOUSE_SECRET_KEY": "A" * 43 + "=",
           "GATEHOUSE_PUBLIC_DIR": "Public"}
    for k, v in provider_env(provider, google).items():
        if v is not None:
            env[k] = v
    for k, v in changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


@pytest.fixture
def need_binary():
    if not gatehouse_bin().exists():
        if os.environ.get("E2E_REQUIRE_GATEWAY") == "1":
            pytest.fail(f"gatehouse binary not found at {gatehouse_bin()}")
        pytest.skip("no gatehouse binary")


def test_check_accepts_two_providers(need_binary, provider, google, tmp_path):
    cp = run_cli(["check"], env=cli_env(provider, google,
                                        GATEHOUSE_DATABASE=str(tmp_path / "c.sqlite")))
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert CORP in cp.stdout and GOOGLE in cp.stdout
    assert CLIENT_SECRET not in cp.stdout + cp.stderr


REFUSALS = [
    # (changes, the variable the message must name)
    ({"GATEHOUSE_ISSUER": "http://127.0.0.1:1"}, "GATEHOUSE_ISSUER"),
    ({"GATEHOUSE_CLIENT_ID": CLIENT_ID}, "GATEHOUSE_CLIENT_ID"),
    ({"GATEHOUSE_CLIENT_SECRET": CLIENT_SECRET}, "GATEHOUSE_CLIENT_SECRET"),
    ({"GATEHOUSE_IDP_CORP_SSO_ISSUER": None}, "GATEHOUSE_IDP_CORP_SSO_ISSUER"),
    ({"GATEHOUSE_IDP_GOOGLE_CLIENT_ID": None}, "GATEHOUSE_IDP_GOOGLE_CLIENT_ID"),
    ({"GATEHOUSE_PROVIDERS": "Corp,google"}, "GATEHOUSE_PROVIDERS"),
    ({"GATEHOUSE_PROVIDERS": "corp_sso,google"}, "GATEHOUSE_PROVIDERS"),
    ({"GATEHOUSE_PROVIDERS": "a" * 33 + ",google"}, "GATEHOUSE_PROVIDERS"),
    ({"GATEHOUSE_PROVIDERS": "corp sso,google"}, "GATEHOUSE_PROVIDERS"),
    ({"GATEHOUSE_PROVIDERS": "corp-sso,google,corp-sso"}, "GATEHOUSE_PROVIDERS"),
    ({"GATEHOUSE_IDP_CORP_SSO_PROFILE": "nope"}, "GATEHOUSE_IDP_CORP_SSO_PROFILE"),
    ({"GATEHOUSE_ROUTES": "/x=http://127.0.0.1:9;providers=nope"}, "GATEHOUSE_ROUTES"),
]


@pytest.mark.parametrize("changes,variable", REFUSALS,
                         ids=[f"{v}-{i}" for i, (_, v) in enumerate(REFUSALS)])
def test_configuration_refused_with_64(need_binary, provider, google, tmp_path, changes,
                                      variable):
    env = cli_env(provider, google, GATEHOUSE_DATABASE=str(tmp_path / "c.sqlite"), **changes)
    cp = run_cli(["check"], env=env)
    out = cp.stdout + cp.stderr
    assert cp.returncode == 64, (cp.returncode, out)
    assert re.search(r"\b" + re.escape(variable) + r"\b", out), out
    assert CLIENT_SECRET not in out


def test_serve_refuses_single_provider_variables_with_providers(need_binary, provider, google,
                                                                tmp_path):
    db = str(tmp_path / "s.sqlite")
    for var, value in (("GATEHOUSE_ISSUER", provider.issuer), ("GATEHOUSE_CLIENT_ID", CLIENT_ID)):
        cp = run_cli(["serve"], env=cli_env(provider, google, GATEHOUSE_DATABASE=db, **{var: value}), timeout=30)
        out = cp.stdout + cp.stderr
        assert cp.returncode == 64, (var, cp.returncode, out)
        assert re.search(r"\b" + var + r"\b", out), out
    cp = run_cli(["serve"], env=cli_env(provider, google, GATEHOUSE_DATABASE=db,
                                             GATEHOUSE_IDP_CORP_SSO_ISSUER=None),
                 timeout=30)
    assert cp.returncode == 64 and "GATEHOUSE_IDP_CORP_SSO_ISSUER" in cp.stdout + cp.stderr, cp


# ---------------------------------------------------------------------------
# 9. metrics by provider
# ---------------------------------------------------------------------------


def test_metrics_label_logins_by_provider(multi, provider, google):
    gw = multi()
    login_at(gw, CORP)
    login_at(gw, CORP, "bob")
    login_at(gw, GOOGLE)
    # A login started at google and never completed.
    requests.get(login_url(gw, GOOGLE), allow_redirects=False, timeout=10)

    text = requests.get(gw.url + "/metrics", timeout=10).text
    assert re.search(r'^gatehouse_logins_completed_total\{provider="corp-sso"\} 2$', text, re.M), \
        metric_samples(gw, "gatehouse_logins_completed_total")
    assert re.search(r'^gatehouse_logins_completed_total\{provider="google"\} 1$', text, re.M), \
        metric_samples(gw, "gatehouse_logins_completed_total")
    assert metric_value(gw, "gatehouse_logins_started_total", provider=CORP) == 2
    assert metric_value(gw, "gatehouse_logins_started_total", provider=GOOGLE) == 2
