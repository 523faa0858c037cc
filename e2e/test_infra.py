"""Self-tests of the suite's own infrastructure (no gateway needed): the provider does
what the gateway will rely on, the upstream answers as documented, Chromium drives.

The flow here is what Gatehouse does: authorization request with PKCE S256, the
provider's login form, code exchange with client_secret_basic, ID-token checks,
refresh (with rotation), revocation (RFC 7009)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import shutil
import socket
import threading
import time
from urllib.parse import urlencode

import pytest
import requests
from authlib.jose import JsonWebKey, jwt

from harness import (CLIENT_ID, CLIENT_SECRET, RawConn, b64url_sha256, parse_forms,
                     provider_authorize, q1)

REDIRECT = "http://127.0.0.1:9/callback"  # never contacted: we only read the Location


@pytest.fixture(scope="module")
def registered(provider):
    provider.register_redirect(REDIRECT)
    provider.register_redirect(REDIRECT, client_id=CLIENT_ID + "-post")
    return provider


def authorize_url(provider, *, client_id=CLIENT_ID, state=None, nonce=None, verifier=None,
                  method="S256", challenge=True, extra=None):
    verifier = verifier or base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
              "scope": "openid profile email offline_access",
              "state": state or secrets.token_urlsafe(16), "nonce": nonce or secrets.token_urlsafe(16)}
    if challenge:
        params["code_challenge"] = b64url_sha256(verifier)
        params["code_challenge_method"] = method
    params.update(extra or {})
    return provider.discovery["authorization_endpoint"] + "?" + urlencode(params), params, verifier


def get_code(provider, sess=None, **kw):
    sess = sess or requests.Session()
    url, params, verifier = authorize_url(provider, **kw)
    cb = provider_authorize(sess, url, "alice")
    assert cb.startswith(REDIRECT + "?"), cb
    assert q1(cb, "state") == params["state"]
    return q1(cb, "code"), params, verifier, cb


def token(provider, data, auth=(CLIENT_ID, CLIENT_SECRET)):
    return requests.post(provider.discovery["token_endpoint"], data=data, auth=auth, timeout=10)


def test_discovery_document(registered):
    d = registered.discovery
    assert d["issuer"] == registered.issuer
    for k in ("authorization_endpoint", "token_endpoint", "jwks_uri", "end_session_endpoint",
              "revocation_endpoint", "userinfo_endpoint"):
        assert d[k].startswith(registered.issuer + "/"), k
    assert d["code_challenge_methods_supported"] == ["S256"]
    assert d["authorization_response_iss_parameter_supported"] is True
    assert d["id_token_signing_alg_values_supported"] == ["RS256"]


def test_code_flow_with_pkce_refresh_rotation_and_revocation(registered):
    p = registered
    code, params, verifier, cb = get_code(p)
    assert q1(cb, "iss") == p.issuer  # RFC 9207
    r = token(p, {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                  "code_verifier": verifier})
    assert r.status_code == 200, r.text
    t = r.json()
    assert t["token_type"] == "Bearer" and t["expires_in"] == 3600
    assert {"access_token", "refresh_token", "id_token"} <= set(t)
    # ID token: RS256, signed by a key of the JWKS, standard claims
    jwks = requests.get(p.discovery["jwks_uri"], timeout=5).json()
    header = json.loads(base64.urlsafe_b64decode(t["id_token"].split(".")[0] + "=="))
    assert header["alg"] == "RS256" and header.get("kid")
    assert header["kid"] in {k["kid"] for k in jwks["keys"]}
    claims = jwt.decode(t["id_token"], JsonWebKey.import_key_set(jwks))
    claims.validate()
    assert claims["iss"] == p.issuer
    assert claims["aud"] == [CLIENT_ID]  # quirk: aud is always an array
    assert claims["sub"] == "alice" and claims["nonce"] == params["nonce"]
    assert claims["email"] == "alice@example.com" and claims["sid"].startswith("sid-")
    assert "kid" not in claims
    # the code is single-use
    again = token(p, {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                      "code_verifier": verifier})
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"

    before = p.refresh_count()
    r2 = token(p, {"grant_type": "refresh_token", "refresh_token": t["refresh_token"]})
    assert r2.status_code == 200, r2.text
    t2 = r2.json()
    assert "id_token" not in t2  # refresh answers carry no ID token
    assert t2["access_token"] != t["access_token"]
    assert t2["refresh_token"] != t["refresh_token"]  # rotation (default)
    assert p.refresh_count() == before + 1
    assert p.introspect(t["access_token"])["active"] is False
    assert p.introspect(t2["access_token"])["active"] is True
    # the rotated-out refresh token is dead
    old = token(p, {"grant_type": "refresh_token", "refresh_token": t["refresh_token"]})
    assert old.status_code == 400 and old.json()["error"] == "invalid_grant"

    # RFC 7009 revocation
    rv = requests.post(p.discovery["revocation_endpoint"], auth=(CLIENT_ID, CLIENT_SECRET),
                       data={"token": t2["refresh_token"], "token_type_hint": "refresh_token"},
                       timeout=5)
    assert rv.status_code == 200, rv.text
    assert p.introspect(t2["refresh_token"])["active"] is False
    assert p.introspect(t2["access_token"])["active"] is False
    dead = token(p, {"grant_type": "refresh_token", "refresh_token": t2["refresh_token"]})
    assert dead.status_code == 400 and dead.json()["error"] == "invalid_grant"
    st = p.stats()
    assert st["revocations"][-1]["token"] == t2["refresh_token"]
    recorded = {x["token"] for x in p.tokens()}
    assert {t["access_token"], t["refresh_token"], t["id_token"], t2["access_token"]} <= recorded


def test_pkce_is_enforced(registered):
    p = registered
    # no code_challenge at all: the provider refuses the authorization request
    url, params, _ = authorize_url(p, challenge=False)
    s = requests.Session()
    page = s.get(url, allow_redirects=False, timeout=5)
    if page.status_code == 200:
        form = next(f for f in parse_forms(page.text)
                    if any(i.get("name") == "sub" for i in f["inputs"]))
        page = s.post(url, data={"sub": "alice"}, allow_redirects=False, timeout=5)
    assert page.status_code in (302, 400)
    if page.status_code == 302:
        assert q1(page.headers["Location"], "error") == "invalid_request"
    # plain is refused
    url, params, _ = authorize_url(p, method="plain")
    page = s.get(url, allow_redirects=False, timeout=5)
    assert page.status_code in (302, 400)
    # wrong verifier
    code, params, verifier, _ = get_code(p)
    bad = token(p, {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                    "code_verifier": "x" * 43})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_grant"


def test_client_authentication(registered):
    p = registered
    code, _, verifier, _ = get_code(p)
    bad = token(p, {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                    "code_verifier": verifier}, auth=(CLIENT_ID, "wrong"))
    assert bad.status_code == 401 and bad.json()["error"] == "invalid_client"
    # the -post client accepts client_secret_post only
    code, _, verifier, _ = get_code(p, client_id=CLIENT_ID + "-post")
    basic = token(p, {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                      "code_verifier": verifier}, auth=(CLIENT_ID + "-post", CLIENT_SECRET))
    assert basic.status_code in (400, 401)
    code, _, verifier, _ = get_code(p, client_id=CLIENT_ID + "-post")
    post = token(p, {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                     "code_verifier": verifier, "client_id": CLIENT_ID + "-post",
                     "client_secret": CLIENT_SECRET}, auth=None)
    assert post.status_code == 200, post.text


def test_unregistered_redirect_uri_refused(registered):
    url, _, _ = authorize_url(registered, extra={"redirect_uri": "http://127.0.0.1:9/evil"})
    r = requests.get(url, allow_redirects=False, timeout=5)
    assert r.status_code == 400


def test_deny_gives_access_denied(registered):
    url, params, _ = authorize_url(registered)
    cb = provider_authorize(requests.Session(), url, deny=True)
    assert q1(cb, "error") == "access_denied"
    assert q1(cb, "state") == params["state"]


def test_token_lifetimes_and_failure_injection(registered):
    p = registered
    p.config(access_ttl=2, refresh_access_ttl=50)
    code, _, verifier, _ = get_code(p)
    t = token(p, {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                  "code_verifier": verifier}).json()
    assert t["expires_in"] == 2
    time.sleep(2.2)
    assert p.introspect(t["access_token"])["active"] is False
    t2 = token(p, {"grant_type": "refresh_token", "refresh_token": t["refresh_token"]}).json()
    assert t2["expires_in"] == 50
    p.config(fail_refresh="invalid_grant")
    r = token(p, {"grant_type": "refresh_token", "refresh_token": t2["refresh_token"]})
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"


def test_end_session_and_logout_token(registered):
    p = registered
    r = requests.get(p.discovery["end_session_endpoint"],
                     params={"id_token_hint": "x", "post_logout_redirect_uri": "http://127.0.0.1:9/",
                             "client_id": CLIENT_ID}, timeout=5)
    assert r.status_code == 200 and "End session" in r.text
    assert p.stats()["end_session"][-1]["client_id"] == CLIENT_ID
    lt = p.logout_token(sub="alice", sid="sid-1")
    jwks = requests.get(p.discovery["jwks_uri"], timeout=5).json()
    c = jwt.decode(lt, JsonWebKey.import_key_set(jwks))
    assert c["aud"] == CLIENT_ID and c["iss"] == p.issuer and "nonce" not in c
    assert "http://schemas.openid.net/event/backchannel-logout" in c["events"]


# --------------------------------------------------------------------------- upstream


def test_upstream_echo_is_raw(upstream):
    with RawConn(upstream.port) as c:
        c.send(b"POST /api/echo?a=1&a=2&b=%2F&c HTTP/1.1\r\nHost: x\r\nX-Two: 1\r\nX-Two: 2\r\n"
               b"Content-Length: 5\r\n\r\nhello")
        r = c.read_response()
        e = json.loads(r.body)
        assert e["query"] == "a=1&a=2&b=%2F&c" and e["method"] == "POST"
        assert e["body_length"] == 5 and e["body_sha256"] == hashlib.sha256(b"hello").hexdigest()
        assert [h for h in e["headers"] if h[0] == "X-Two"] == [["X-Two", "1"], ["X-Two", "2"]]
        # keep-alive: a second request on the same socket
        c.send(b"GET /api/hello HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer abc\r\n\r\n")
        assert json.loads(c.read_response().body) == {"hello": "world", "authorization": "Bearer abc"}


def test_upstream_sse_streams(upstream):
    t0 = time.time()
    times = []
    with requests.get(upstream.url + "/api/sse", stream=True, timeout=10) as r:
        assert r.headers["Content-Type"] == "text/event-stream"
        buf = b""
        for chunk in r.iter_content(chunk_size=None):
            buf += chunk
            while b"\n\n" in buf:
                _, buf = buf.split(b"\n\n", 1)
                times.append(time.time() - t0)
    assert len(times) == 5 and times[0] < 0.5 and times[-1] - times[0] > 1.0


def test_upstream_upload_and_big(upstream):
    data = secrets.token_bytes(3 * 1024 * 1024 + 7)

    def gen():
        for i in range(0, len(data), 65536):
            yield data[i:i + 65536]

    r = requests.post(upstream.url + "/api/upload", data=gen(), timeout=30).json()
    assert r["bytes"] == len(data) and r["sha256"] == hashlib.sha256(data).hexdigest()
    assert r["transfer_encoding"] == "chunked"
    h = hashlib.sha256()
    n = 0
    with requests.get(upstream.url + "/api/big?mb=3", stream=True, timeout=30) as resp:
        for chunk in resp.iter_content(1 << 20):
            n += len(chunk)
            h.update(chunk)
    assert n == 3 << 20
    assert h.hexdigest() == requests.get(upstream.url + "/__big_sha256?mb=3", timeout=30).json()["sha256"]


def test_upstream_setcookie_status_slow(upstream):
    r = requests.get(upstream.url + "/api/setcookie", timeout=5)
    assert r.headers["X-Hop"] == "1" and "upstream=1" in r.headers["Set-Cookie"]
    assert requests.get(upstream.url + "/api/status/418", timeout=5).status_code == 418
    t0 = time.time()
    assert requests.get(upstream.url + "/api/slow?ms=300", timeout=5).json() == {"slept_ms": 300}
    assert time.time() - t0 >= 0.3


# --------------------------------------------------------------------------- browser


@pytest.mark.browser
def test_chromium_drives_the_provider_form(registered, upstream):
    from browser import make_driver, By, WebDriverWait
    redirect = upstream.url + "/echo/callback"
    registered.register_redirect(redirect)
    url, params, _ = authorize_url(registered, extra={"redirect_uri": redirect})
    d = make_driver()
    try:
        d.get(url)
        box = d.find_element(By.CSS_SELECTOR, "input[name=sub]")
        box.send_keys("alice")
        box.find_element(By.XPATH, "./ancestor::form//button[@type='submit']").click()
        WebDriverWait(d, 10).until(lambda d: d.current_url.startswith(redirect))
        assert q1(d.current_url, "state") == params["state"]
        assert q1(d.current_url, "code")
    finally:
        d.quit()


@pytest.mark.parametrize("how", ["aud", "nonce", "iss", "exp", "sig", "alg_none", "other_key"])
def test_id_token_tampering_switch(registered, how):
    p = registered
    p.config(id_token_tamper=how)
    code, params, verifier, _ = get_code(p)
    t = token(p, {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                  "code_verifier": verifier}).json()
    jwks = JsonWebKey.import_key_set(requests.get(p.discovery["jwks_uri"], timeout=5).json())
    try:
        c = jwt.decode(t["id_token"], jwks)
        c.validate()
        bad = (c["aud"] != [CLIENT_ID] or c["nonce"] != params["nonce"] or c["iss"] != p.issuer)
    except Exception:
        bad = True
    assert bad, f"tampering {how} left a valid ID token"
