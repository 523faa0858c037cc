"""Login, session, /user and logout, against the real provider (SPEC: HTTP endpoints)."""

from __future__ import annotations

import re
import secrets
import time
from urllib.parse import urlencode, urlsplit, urlunsplit, parse_qsl

import pytest
import requests

from harness import (CSRF, finish_callback, jwt_claims, login, parse_cookie, provider_authorize,
                     q1, query_of, set_cookie_headers, start_login)

B64URL = re.compile(r"^[A-Za-z0-9_-]+$")


def tokens_since(provider, n_before):
    return provider.tokens()[n_before:]


def session_cookie_header(resp, name="gatehouse"):
    for h in set_cookie_headers(resp):
        if h.startswith(name + "="):
            return h
    return None


def cookie_is_cleared(header: str) -> bool:
    name, value, attrs = parse_cookie(header)
    if attrs.get("max-age") is not None and int(attrs["max-age"]) <= 0:
        return True
    if "expires" in attrs:
        from email.utils import parsedate_to_datetime
        try:
            return parsedate_to_datetime(attrs["expires"]).timestamp() < time.time()
        except (TypeError, ValueError):
            return False
    return False


def with_query(url: str, **changes) -> str:
    parts = urlsplit(url)
    q = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in changes]
    q += [(k, v) for k, v in changes.items() if v is not None]
    return urlunsplit(parts._replace(query=urlencode(q)))


def assert_html_400(r):
    assert r.status_code == 400, (r.status_code, r.text[:300])
    assert r.headers.get("Content-Type", "").startswith("text/html"), r.headers


def assert_no_session_set(r, name="gatehouse"):
    h = session_cookie_header(r, name)
    assert h is None or cookie_is_cleared(h) or parse_cookie(h)[1] == "", h


# --------------------------------------------------------------------------- login


def test_full_login_then_user_shape(gateway, provider):
    # SPEC: `200` with {"sub", "claims": {…ID token claims…}, "session": {"expiresAt",
    # "idleExpiresAt"}, "logoutUrl": "/logout?sid=<sid>"} ... Tokens are never returned.
    n = len(provider.tokens())
    s = login(gateway, provider, "alice")
    r = gateway.get(s, "/user")
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    j = r.json()
    assert j["sub"] == "alice"
    assert j["claims"]["sub"] == "alice"
    assert j["claims"]["email"] == "alice@example.com"
    assert j["claims"]["iss"] == provider.issuer
    now = time.time()
    exp, idle = j["session"]["expiresAt"], j["session"]["idleExpiresAt"]
    assert isinstance(exp, (int, float)) and isinstance(idle, (int, float))
    assert now < idle <= exp + 1
    assert exp <= now + 24 * 3600 + 60  # default lifetime 24h
    assert re.fullmatch(r"/logout\?sid=[^&\s]+", j["logoutUrl"]), j["logoutUrl"]
    issued = tokens_since(provider, n)
    assert {t["kind"] for t in issued} >= {"access_token", "refresh_token", "id_token"}
    for t in issued:
        assert t["token"] not in r.text, f"{t['kind']} leaked in /user"
        assert t["token"].split(".")[-1] not in r.text
    assert s.login_result.cookie not in r.text


def test_login_uses_client_secret_basic_by_default(gateway, provider):
    # SPEC: GATEHOUSE_CLIENT_AUTH_METHOD default `client_secret_basic` if a secret is set
    before = provider.stats()["token_auth_methods"].get("client_secret_basic", 0)
    login(gateway, provider)
    assert provider.stats()["token_auth_methods"].get("client_secret_basic", 0) == before + 1


def test_user_requires_csrf_header(gateway, provider):
    # SPEC: Without it: `401` {"error":"csrf_header_missing"}, and nothing changes.
    s = login(gateway, provider)
    r = gateway.get(s, "/user", csrf=False)
    assert r.status_code == 401
    assert r.json()["error"] == "csrf_header_missing"
    assert "error_description" in r.json()
    assert gateway.get(s, "/user", headers={"X-CSRF": "0"}, csrf=False).status_code == 401
    assert gateway.get(s, "/user").status_code == 200


def test_user_without_session_is_unauthenticated(gateway):
    # SPEC: `401` {"error":"unauthenticated"} without a valid session.
    r = gateway.get(requests.Session(), "/user")
    assert r.status_code == 401 and r.json()["error"] == "unauthenticated"
    s = requests.Session()
    s.cookies.set("gatehouse", "A" * 43)
    r = gateway.get(s, "/user")
    assert r.status_code == 401 and r.json()["error"] == "unauthenticated"


def test_authorization_request_parameters(gateway, provider):
    # SPEC: 302 to the authorization endpoint with response_type=code, client_id, redirect_uri,
    # scope, state, nonce, code_challenge, code_challenge_method=S256; state and nonce each at
    # least 128 random bits; code_challenge = BASE64URL(SHA256(verifier)) (43 chars).
    s = requests.Session()
    r, url = start_login(s, gateway)
    assert url.startswith(provider.discovery["authorization_endpoint"] + "?")
    q = query_of(url)
    for k in ("response_type", "client_id", "redirect_uri", "scope", "state", "nonce",
              "code_challenge", "code_challenge_method"):
        assert len(q.get(k, [])) == 1, f"{k} missing or repeated in {url}"
    assert q["response_type"] == ["code"]
    assert q["client_id"] == [provider.client_id]
    assert q["redirect_uri"] == [gateway.url + "/callback"]
    assert "openid" in q["scope"][0].split(" ")
    assert set(q["scope"][0].split(" ")) >= {"openid", "profile", "email", "offline_access"}
    assert q["code_challenge_method"] == ["S256"]
    cc = q["code_challenge"][0]
    assert len(cc) == 43 and B64URL.match(cc)
    state, nonce = q["state"][0], q["nonce"][0]
    assert len(state) >= 22 and len(nonce) >= 22 and state != nonce
    # a second login gets fresh values
    _, url2 = start_login(requests.Session(), gateway)
    q2 = query_of(url2)
    assert q2["state"] != q["state"] and q2["nonce"] != q["nonce"]
    assert q2["code_challenge"] != q["code_challenge"]
    # and the provider (which enforces PKCE S256) accepts the verifier: login completes
    cb = provider_authorize(s, url, "alice")
    assert finish_callback(s, cb).status_code == 302


def test_auth_params_are_added(gateway_factory, provider):
    # SPEC: GATEHOUSE_AUTH_PARAMS extra authorization-request parameters, URL-query syntax
    gw = gateway_factory({"GATEHOUSE_AUTH_PARAMS": "audience=https://api.example.com&prompt=login"})
    _, url = start_login(requests.Session(), gw)
    q = query_of(url)
    assert q["audience"] == ["https://api.example.com"] and q["prompt"] == ["login"]


def test_login_binding_cookie_attributes(gateway):
    # SPEC: binds it to this browser with a short-lived HttpOnly cookie ... always `Lax`
    r, _ = start_login(requests.Session(), gateway)
    cookies = [c for c in (parse_cookie(h) for h in set_cookie_headers(r))
               if c[1] and not cookie_is_cleared("; ".join([c[0] + "=" + c[1]] + [
                   k + ("=" + v if v else "") for k, v in c[2].items()]))]
    assert cookies, "GET /login set no binding cookie"
    for name, value, attrs in cookies:
        assert "httponly" in attrs, (name, attrs)
        assert attrs.get("samesite", "").lower() == "lax", (name, attrs)
        assert "domain" not in attrs, (name, attrs)
        assert "secure" not in attrs  # http PUBLIC_URL
        assert len(value) >= 16


def test_session_cookie_attributes(gateway, provider):
    # SPEC: Set-Cookie: <name>=<opaque random id, ≥256 bits>; Path=/; HttpOnly;
    # SameSite=<Strict|Lax>, plus Secure when PUBLIC_URL is https; never a Domain attribute.
    s = login(gateway, provider)
    h = session_cookie_header(s.login_result.callback_response)
    name, value, attrs = parse_cookie(h)
    assert name == "gatehouse"
    assert attrs.get("path") == "/"
    assert "httponly" in attrs
    assert attrs.get("samesite", "").lower() == "strict"
    assert "domain" not in attrs
    assert "secure" not in attrs
    assert len(value) >= 43, "session id shorter than 256 bits of base64"


def test_cookie_samesite_lax_option(gateway_factory, provider):
    # SPEC: GATEHOUSE_COOKIE_SAMESITE `Strict` or `Lax` for the session cookie
    gw = gateway_factory({"GATEHOUSE_COOKIE_SAMESITE": "Lax", "GATEHOUSE_COOKIE_NAME": "sid_e2e"})
    s = login(gw, provider)
    name, _, attrs = parse_cookie(session_cookie_header(s.login_result.callback_response, "sid_e2e"))
    assert name == "sid_e2e" and attrs.get("samesite", "").lower() == "lax"


def test_session_id_rotates_at_each_login(gateway, provider):
    # SPEC: Then a **new** session is created (any session the browser had is deleted)
    s = login(gateway, provider)
    first = s.login_result.cookie
    s = login(gateway, provider, sess=s)
    second = s.login_result.cookie
    assert first != second
    assert gateway.get(s, "/user").status_code == 200
    old = requests.Session()
    old.cookies.set("gatehouse", first)
    r = gateway.get(old, "/user")
    assert r.status_code == 401, "the browser's previous session survived a new login"


def test_replayed_state_is_refused(gateway, provider):
    # SPEC: the pending login ... is consumed whatever happens next; replayed state -> 400 HTML
    s = requests.Session()
    _, url = start_login(s, gateway)
    cb = provider_authorize(s, url)
    before_callback = s.cookies.copy()  # the browser as it was when the provider sent it back
    assert finish_callback(s, cb).status_code == 302
    replay = requests.Session()
    replay.cookies.update(before_callback)
    r = finish_callback(replay, cb)
    assert_html_400(r)
    assert_no_session_set(r)
    assert gateway.get(replay, "/user").status_code == 401


def test_forged_state_is_refused(gateway, provider):
    s = requests.Session()
    _, url = start_login(s, gateway)
    cb = provider_authorize(s, url)
    r = finish_callback(s, with_query(cb, state=secrets.token_urlsafe(32)))
    assert_html_400(r)
    assert_no_session_set(r)


def test_callback_in_another_browser_is_refused(gateway, provider):
    # SPEC: the pending login must ... belong to this browser's binding cookie
    s = requests.Session()
    _, url = start_login(s, gateway)
    cb = provider_authorize(s, url)
    other = requests.Session()
    r = finish_callback(other, cb)
    assert_html_400(r)
    assert_no_session_set(r)
    assert gateway.get(other, "/user").status_code == 401


def test_provider_error_is_refused(gateway, provider):
    # SPEC: Failures (`error` from the provider, ...) answer an HTML error page with status 400
    s = requests.Session()
    _, url = start_login(s, gateway)
    cb = provider_authorize(s, url, deny=True)
    assert q1(cb, "error") == "access_denied"
    r = finish_callback(s, cb)
    assert_html_400(r)
    assert_no_session_set(r)


def test_wrong_iss_is_refused_without_code_exchange(gateway, provider):
    # SPEC: If `iss` is present it must equal the issuer (RFC 9207)
    s = requests.Session()
    _, url = start_login(s, gateway)
    cb = provider_authorize(s, url)
    assert q1(cb, "iss") == provider.issuer
    before = provider.stats()["token_requests"].get("authorization_code", 0)
    r = finish_callback(s, with_query(cb, iss="http://127.0.0.1:1"))
    assert_html_400(r)
    assert_no_session_set(r)
    assert provider.stats()["token_requests"].get("authorization_code", 0) == before


def test_missing_iss_refused_when_advertised(gateway, provider):
    # SPEC: it is required when the provider advertises authorization_response_iss_parameter_supported
    assert provider.discovery.get("authorization_response_iss_parameter_supported") is True
    s = requests.Session()
    _, url = start_login(s, gateway)
    cb = provider_authorize(s, url)
    r = finish_callback(s, with_query(cb, iss=None))
    assert_html_400(r)


@pytest.mark.parametrize("how", ["aud", "nonce", "iss", "exp", "iat_future", "sig", "alg_none",
                                 "other_key", "azp"])
def test_invalid_id_token_is_refused(gateway, provider, how):
    # SPEC: The ID token is validated: signature against the provider's JWKS, alg never none,
    # iss, aud contains the client id (and azp when there are several audiences), exp, iat,
    # and nonce equal to the stored nonce. ... invalid ID token -> 400, never a session.
    provider.config(id_token_tamper=how)
    s = requests.Session()
    _, url = start_login(s, gateway)
    cb = provider_authorize(s, url)
    r = finish_callback(s, cb)
    assert_html_400(r)
    assert_no_session_set(r)
    assert gateway.get(s, "/user").status_code == 401


def test_client_secret_post(gateway_factory, provider):
    # SPEC: GATEHOUSE_CLIENT_AUTH_METHOD `client_secret_basic`, `client_secret_post` or `none`
    gw = gateway_factory({"GATEHOUSE_CLIENT_ID": provider.client_id + "-post",
                          "GATEHOUSE_CLIENT_AUTH_METHOD": "client_secret_post"})
    before = provider.stats()["token_auth_methods"].get("client_secret_post", 0)
    s = login(gw, provider)
    assert gw.get(s, "/user").status_code == 200
    assert provider.stats()["token_auth_methods"].get("client_secret_post", 0) == before + 1


def test_public_client_without_secret(gateway_factory, provider):
    # SPEC: GATEHOUSE_CLIENT_SECRET none -> auth method `none` (PKCE alone)
    gw = gateway_factory({"GATEHOUSE_CLIENT_ID": provider.client_id + "-public",
                          "GATEHOUSE_CLIENT_SECRET": None})
    s = login(gw, provider)
    assert gw.get(s, "/user").json()["sub"] == "alice"


def test_provider_unreachable_at_callback_gives_502(gateway_factory, tmp_path):
    # SPEC: Failures ... answer an HTML error page with status 400 (502 when the provider is
    # unreachable) ... and never create a session.
    from harness import Provider
    own = Provider(tmp_path / "own-provider", name="provider-doomed")
    try:
        gw = gateway_factory({"GATEHOUSE_ISSUER": own.issuer, "GATEHOUSE_PROVIDER_TIMEOUT": "2s"},
                             upstream_=None, register=False)
        own.register_redirect(gw.url + "/callback")
        s = requests.Session()
        _, url = start_login(s, gw)
        cb = provider_authorize(s, url)
        own.stop()
        r = finish_callback(s, cb)
        assert r.status_code == 502
        assert r.headers.get("Content-Type", "").startswith("text/html")
        assert_no_session_set(r)
    finally:
        own.stop()


@pytest.mark.parametrize("raw", [
    "returnTo=//evil.com", "returnTo=/%5Cevil.com", "returnTo=https://evil.com",
    "returnTo=/%5cevil", "returnTo=evil", "returnTo=%2F%2Fevil.com", "returnTo=http:/evil.com",
    "returnTo=/\\evil.com",
])
def test_return_to_open_redirect_refused(gateway, raw):
    # SPEC: returnTo must be a local absolute path (`/` followed by anything but `/` or `\`);
    # anything else is refused with 400 (never redirected to).
    r = requests.get(gateway.url + "/login?" + raw, allow_redirects=False, timeout=10)
    assert r.status_code == 400, (raw, r.status_code, r.headers.get("Location"))
    assert "evil" not in r.headers.get("Location", "")


def test_valid_return_to_is_honoured(gateway, provider):
    # SPEC: the answer is `302` to `returnTo` (default `/`)
    s = login(gateway, provider, return_to="/deep/path?x=1")
    assert s.login_result.callback_response.headers["Location"] in (
        "/deep/path?x=1", gateway.url + "/deep/path?x=1")


def test_two_pending_logins_in_one_browser(gateway, provider):
    # SPEC: Several logins may be pending in one browser (tabs).
    s = requests.Session()
    _, url_a = start_login(s, gateway, return_to="/tab-a")
    _, url_b = start_login(s, gateway, return_to="/tab-b")
    cb_a = provider_authorize(s, url_a)
    cb_b = provider_authorize(s, url_b)
    rb = finish_callback(s, cb_b)
    assert rb.status_code == 302 and rb.headers["Location"].endswith("/tab-b"), rb.text[:300]
    ra = finish_callback(s, cb_a)
    assert ra.status_code == 302 and ra.headers["Location"].endswith("/tab-a"), ra.text[:300]
    assert gateway.get(s, "/user").status_code == 200


def test_pending_login_binding_is_per_browser_not_global(gateway, provider):
    # two browsers logging in at the same time do not disturb each other
    s1, s2 = requests.Session(), requests.Session()
    _, u1 = start_login(s1, gateway)
    _, u2 = start_login(s2, gateway)
    c1, c2 = provider_authorize(s1, u1, "alice"), provider_authorize(s2, u2, "bob")
    assert finish_callback(s2, c2).status_code == 302
    assert finish_callback(s1, c1).status_code == 302
    assert gateway.get(s1, "/user").json()["sub"] == "alice"
    assert gateway.get(s2, "/user").json()["sub"] == "bob"


def test_session_survives_restart(gateway_factory, provider):
    # SPEC: SQLite-backed sessions
    gw = gateway_factory()
    s = login(gw, provider)
    assert gw.restart() == 0
    r = gw.get(s, "/user")
    assert r.status_code == 200 and r.json()["sub"] == "alice"


def test_database_holds_no_cookie_or_token(gateway_factory, provider):
    # SPEC: The database stores only a hash of the id, never the id itself. Tokens are stored
    # encrypted (AES-GCM under GATEHOUSE_SECRET_KEY), never in plaintext.
    gw = gateway_factory()
    n = len(provider.tokens())
    s = login(gw, provider)
    assert gw.get(s, "/api/hello").status_code == 200
    issued = tokens_since(provider, n)
    assert {t["kind"] for t in issued} >= {"access_token", "refresh_token", "id_token"}
    cookie = s.login_result.cookie
    needles = {"session cookie": cookie.encode()}
    try:
        import base64
        raw = base64.urlsafe_b64decode(cookie + "=" * (-len(cookie) % 4))
        if len(raw) >= 16:
            needles["session cookie (decoded bytes)"] = raw
    except Exception:
        pass
    for t in issued:
        needles[t["kind"]] = t["token"].encode()
        if t["kind"] == "id_token":
            needles["id_token signature"] = t["token"].split(".")[2].encode()

    def scan(phase):
        files = gw.db_files()
        assert files, "no database file found at GATEHOUSE_DATABASE"
        for f in files:
            data = f.read_bytes()
            for what, needle in needles.items():
                assert needle not in data, f"{what} found in plaintext in {f.name} ({phase})"

    scan("while running")
    gw.stop()
    scan("after shutdown")


# --------------------------------------------------------------------------- logout


def test_post_logout(gateway, provider):
    # SPEC: Deletes the session, revokes the refresh token at the provider's revocation_endpoint,
    # expires the cookie, and answers 302 to the end_session_endpoint with id_token_hint,
    # post_logout_redirect_uri and client_id.
    n = len(provider.tokens())
    s = login(gateway, provider)
    issued = tokens_since(provider, n)
    id_token = next(t["token"] for t in issued if t["kind"] == "id_token")
    refresh = [t["token"] for t in issued if t["kind"] == "refresh_token"]
    cookie = s.login_result.cookie
    r = gateway.post(s, "/logout")
    assert r.status_code == 302, r.text[:300]
    loc = r.headers["Location"]
    assert loc.startswith(provider.discovery["end_session_endpoint"] + "?"), loc
    assert q1(loc, "id_token_hint") == id_token
    assert q1(loc, "post_logout_redirect_uri") == gateway.url + "/"
    assert q1(loc, "client_id") == provider.client_id
    # A fresh random state (some providers redirect back to post_logout_redirect_uri only with one).
    assert len(q1(loc, "state") or "") >= 16
    h = session_cookie_header(r)
    assert h is not None and cookie_is_cleared(h), f"cookie not expired: {h}"
    again = requests.Session()
    again.cookies.set("gatehouse", cookie)
    assert gateway.get(again, "/user").status_code == 401
    # the refresh token is revoked at the provider (RFC 7009)
    deadline = time.time() + 5
    while time.time() < deadline and any(provider.introspect(t)["active"] for t in refresh):
        time.sleep(0.2)
    for t in refresh:
        assert provider.introspect(t)["active"] is False, "refresh token still active after logout"
    revs = provider.stats()["revocations"]
    assert any(rv["token"] in refresh and rv["status"] == 200 for rv in revs)


def test_post_logout_requires_csrf(gateway, provider):
    # SPEC: Without it: 401 {"error":"csrf_header_missing"}, and nothing changes.
    s = login(gateway, provider)
    r = gateway.post(s, "/logout", csrf=False)
    assert r.status_code == 401 and r.json()["error"] == "csrf_header_missing"
    assert gateway.get(s, "/user").status_code == 200


def test_get_logout_needs_the_right_sid(gateway, provider):
    # SPEC: A GET without the right `sid` is refused with 400 (no cross-site logout).
    s = login(gateway, provider)
    assert gateway.get(s, "/logout", csrf=False).status_code == 400
    assert gateway.get(s, "/logout?sid=" + secrets.token_urlsafe(16), csrf=False).status_code == 400
    other = login(gateway, provider, "bob")
    other_sid = gateway.get(other, "/user").json()["logoutUrl"]
    assert gateway.get(s, other_sid, csrf=False).status_code == 400, "another session's sid accepted"
    assert gateway.get(s, "/user").status_code == 200
    assert gateway.get(other, "/user").status_code == 200
    url = gateway.get(s, "/user").json()["logoutUrl"]
    r = gateway.get(s, url, csrf=False)
    assert r.status_code == 302
    assert r.headers["Location"].startswith(provider.discovery["end_session_endpoint"])
    assert gateway.get(s, "/user").status_code == 401


def test_backchannel_logout(gateway, provider):
    # SPEC: POST /backchannel-logout: form field logout_token ... Deletes the matching sessions;
    # 200 on success, 400 on an invalid token; a replayed jti is refused.
    n = len(provider.tokens())
    s = login(gateway, provider)
    idt = next(t for t in tokens_since(provider, n) if t["kind"] == "id_token")
    sid = jwt_claims(idt["token"])["sid"]
    bad = provider.logout_token(sub="alice", sid=sid, nonce="n")  # nonce is forbidden
    assert requests.post(gateway.url + "/backchannel-logout", data={"logout_token": bad},
                         timeout=10).status_code == 400
    forged = provider.logout_token(sub="alice", sid=sid)
    head, body, sig = forged.split(".")
    forged = ".".join([head, body, sig[:-4] + ("AAAA" if sig[-4:] != "AAAA" else "BBBB")])
    assert requests.post(gateway.url + "/backchannel-logout", data={"logout_token": forged},
                         timeout=10).status_code == 400
    assert gateway.get(s, "/user").status_code == 200
    token = provider.logout_token(sub="alice", sid=sid)
    r = requests.post(gateway.url + "/backchannel-logout", data={"logout_token": token}, timeout=10)
    assert r.status_code == 200, r.text[:300]
    assert gateway.get(s, "/user").status_code == 401
    replay = requests.post(gateway.url + "/backchannel-logout", data={"logout_token": token},
                           timeout=10)
    assert replay.status_code == 400


# --------------------------------------------------------------------------- timeouts


def test_idle_timeout(gateway_factory, provider):
    # SPEC: GATEHOUSE_SESSION_IDLE sliding idle timeout; GET /user?slide=false does not slide.
    gw = gateway_factory({"GATEHOUSE_SESSION_IDLE": "3s"})
    s = login(gw, provider)
    j = gw.get(s, "/user?slide=false").json()
    assert j["session"]["idleExpiresAt"] <= time.time() + 3.5
    time.sleep(1.5)
    assert gw.get(s, "/user?slide=false").status_code == 200
    time.sleep(3.0)  # 4.5 s after the last sliding request (the login)
    r = gw.get(s, "/user?slide=false")
    assert r.status_code == 401 and r.json()["error"] == "unauthenticated"


def test_activity_slides_idle_timeout(gateway_factory, provider):
    # SPEC: Every authenticated request slides the idle timeout
    gw = gateway_factory({"GATEHOUSE_SESSION_IDLE": "3s"})
    s = login(gw, provider)
    for _ in range(3):  # 4.5 s in all, never 3 s idle
        time.sleep(1.5)
        assert gw.get(s, "/api/hello").status_code == 200
    assert gw.get(s, "/user").status_code == 200
    time.sleep(4.5)
    assert gw.get(s, "/user").status_code == 401


def test_absolute_lifetime(gateway_factory, provider):
    # SPEC: GATEHOUSE_SESSION_LIFETIME absolute session lifetime
    gw = gateway_factory({"GATEHOUSE_SESSION_LIFETIME": "4s", "GATEHOUSE_SESSION_IDLE": "1h"})
    t0 = time.time()
    s = login(gw, provider)
    j = gw.get(s, "/user").json()
    assert t0 + 2 <= j["session"]["expiresAt"] <= time.time() + 5
    while time.time() < t0 + 3:
        assert gw.get(s, "/user").status_code == 200
        time.sleep(0.5)
    time.sleep(max(0.0, t0 + 5.5 - time.time()))
    assert gw.get(s, "/user").status_code == 401


# --------------------------------------------------------------------------- keys, https, logs


def test_secret_key_rotation_with_previous_key(gateway_factory, provider):
    # SPEC: GATEHOUSE_SECRET_KEY_PREVIOUS (optional) still decrypts sessions written under the
    # previous key
    from harness import random_secret_key
    gw = gateway_factory()
    s = login(gw, provider)
    assert gw.get(s, "/api/hello").status_code == 200
    old_key = gw.env["GATEHOUSE_SECRET_KEY"]
    gw.stop()
    gw.env["GATEHOUSE_SECRET_KEY"] = random_secret_key()
    gw.env["GATEHOUSE_SECRET_KEY_PREVIOUS"] = old_key
    gw.start()
    r = gw.get(s, "/api/hello")
    assert r.status_code == 200, "session written under the previous key is lost"
    assert provider.introspect(r.json()["authorization"].split(" ", 1)[1])["active"]


def test_session_unusable_under_a_different_key(gateway_factory, provider):
    # SPEC: tokens encrypted under GATEHOUSE_SECRET_KEY: another key cannot use them
    from harness import random_secret_key
    gw = gateway_factory()
    s = login(gw, provider)
    gw.stop()
    gw.env["GATEHOUSE_SECRET_KEY"] = random_secret_key()
    gw.start()
    r = gw.get(s, "/api/hello")
    assert r.status_code == 401


def test_https_public_url_cookie_name_and_secure(gateway_factory, provider):
    # SPEC: GATEHOUSE_COOKIE_NAME default `__Host-Http-gatehouse` when PUBLIC_URL is https;
    # plus `Secure` when PUBLIC_URL is https. (Served over http here, as behind a TLS proxy.)
    gw = gateway_factory({"GATEHOUSE_PUBLIC_URL": "https://127.0.0.1:{port}"})
    s = requests.Session()
    r, url = start_login(s, gw)
    assert q1(url, "redirect_uri") == f"https://127.0.0.1:{gw.port}/callback"
    binding = [parse_cookie(h) for h in set_cookie_headers(r)]
    assert binding and all("secure" in a for _, v, a in binding if v)
    cb = provider_authorize(s, url)
    assert cb.startswith(f"https://127.0.0.1:{gw.port}/callback?")
    cookie_header = "; ".join(f"{n}={v}" for n, v, _ in binding if v)
    r = requests.get(cb.replace("https://", "http://", 1), headers={"Cookie": cookie_header},
                     allow_redirects=False, timeout=30)
    assert r.status_code == 302, r.text[:300]
    h = next((h for h in set_cookie_headers(r) if h.startswith("__Host-Http-gatehouse=")), None)
    assert h, set_cookie_headers(r)
    name, value, attrs = parse_cookie(h)
    assert "secure" in attrs and attrs.get("path") == "/" and "domain" not in attrs
    u = requests.get(gw.url + "/api/echo", timeout=10,
                     headers={"Cookie": f"{name}={value}", **CSRF})
    assert u.status_code == 200
    fwd = {k.lower(): v for k, v in u.json()["headers"]}
    assert fwd["x-forwarded-proto"] == "https"


def test_logs_hold_no_secrets(gateway_factory, provider):
    # SPEC: Logs never contain tokens, codes, verifiers, cookies or secrets.
    gw = gateway_factory({"GATEHOUSE_LOG_LEVEL": "debug"})
    n = len(provider.tokens())
    s = login(gw, provider)
    code = q1(s.login_result.callback_url, "code")
    gw.get(s, "/api/hello")
    gw.get(s, "/user")
    gw.post(s, "/logout")
    gw.stop()
    log = gw.proc.log_text()
    secrets_ = {"session cookie": s.login_result.cookie, "authorization code": code,
                "client secret": gw.env["GATEHOUSE_CLIENT_SECRET"],
                "secret key": gw.env["GATEHOUSE_SECRET_KEY"]}
    for t in tokens_since(provider, n):
        secrets_[t["kind"]] = t["token"]
        if t["kind"] == "id_token":
            secrets_["id_token signature"] = t["token"].split(".")[2]
    for what, value in secrets_.items():
        assert value not in log, f"{what} appears in the gateway's log"


def test_default_log_format_is_json_lines(gateway_factory, provider):
    # SPEC: GATEHOUSE_LOG_FORMAT default `json` (one object a line)
    import json as _json
    gw = gateway_factory({"GATEHOUSE_LOG_LEVEL": "info"})
    login(gw, provider)
    gw.stop()
    lines = [l for l in gw.proc.log_text().splitlines() if l.strip() and not l.startswith("=== ")]
    assert lines, "the gateway logged nothing at info level"
    for l in lines:
        assert isinstance(_json.loads(l), dict), l
