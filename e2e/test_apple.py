"""`GATEHOUSE_PROVIDER=apple` (Sign in with Apple; SPEC "More providers and protocols") against the
`apple` profile of provider_emulator.py.

Apple differs from every other profile: the authorization response is always an auto-posting
HTML form (`response_mode=form_post`, required once `name` or `email` is asked for), the user's
name comes only in that form's unsigned `user` field and only on the user's first authorization
of the client, the ID token carries `email_verified`/`is_private_email` as strings, and the client
secret is an ES256 JWT the gateway signs with the developer's .p8 key (team id as `iss`, key id as
`kid`, at most six months of life). The emulator checks each client secret against the public key
and records it; these tests drive the form themselves, as test_form_post.py does.
"""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path
from urllib.parse import urljoin

import pytest
import requests
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from joserfc import jwt as jose_jwt
from joserfc.jwk import ECKey

import harness
from harness import (E2E_DIR, PYTHON, Gateway, Proc, jwt_claims, parse_forms, q1, query_of,
                     set_cookie_headers, wait_for_port_file, wait_http_ok)

SERVICES_ID = "com.example.gatehouse.web"  # Apple's client_id for the web is a Services ID
TEAM_ID = "ABCDE12345"
KEY_ID = "KEY1234567"
APPLE_AUDIENCE = "https://appleid.apple.com"
SIX_MONTHS = 15_777_000
NAME_CLAIMS = ("name", "given_name", "family_name")


# ---------------------------------------------------------------------------
# keys, the emulator and the gateway
# ---------------------------------------------------------------------------

class AppleKeys:
    """A Sign in with Apple private key as Apple hands it out (a .p8 file: PKCS#8 PEM, P-256) and
    its public half for the emulator."""

    def __init__(self, work: Path):
        work.mkdir(parents=True, exist_ok=True)
        self.private = ec.generate_private_key(ec.SECP256R1())
        self.p8 = work / f"AuthKey_{KEY_ID}.p8"
        self.p8.write_bytes(self.private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
        self.public_pem = work / "apple-public.pem"
        self.public_pem.write_bytes(self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))

    def client_secret(self, header: dict | None = None, key=None, **claims) -> str:
        """A client secret signed as "Creating a client secret" says (for the emulator's own tests)."""
        now = int(time.time())
        body = {"iss": TEAM_ID, "iat": now, "exp": now + 600, "aud": APPLE_AUDIENCE, "sub": SERVICES_ID}
        body.update(claims)
        body = {k: v for k, v in body.items() if v is not None}
        jose_key = key or ECKey.import_key(self.p8.read_bytes())
        return jose_jwt.encode({"alg": "ES256", "kid": KEY_ID, **(header or {})}, body, jose_key)

    def verify(self, token: str) -> bool:
        """ES256 over header.payload, checked with `cryptography` alone (independent of the emulator)."""
        head, payload, sig = token.split(".")
        raw = base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
        if len(raw) != 64:  # JWS wants r||s, never DER
            return False
        der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        try:
            self.private.public_key().verify(der, f"{head}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
            return True
        except InvalidSignature:
            return False


class AppleEmulator:
    """provider_emulator.py --profile apple; quacks like harness.Provider for Gateway."""

    def __init__(self, work: Path, keys: AppleKeys):
        self.client_id = SERVICES_ID
        self.client_secret = ""  # Apple has none: the gateway signs one per request window
        work.mkdir(parents=True, exist_ok=True)
        port_file = work / "apple.port"
        port_file.unlink(missing_ok=True)
        self.proc = Proc("emulator-apple", [PYTHON, str(E2E_DIR / "provider_emulator.py"), "--profile", "apple",
                                            "--port", "0", "--port-file", str(port_file),
                                            "--client-id", SERVICES_ID, "--apple-team-id", TEAM_ID,
                                            "--apple-key-id", KEY_ID, "--apple-public-key", str(keys.public_pem)],
                         env={**os.environ, "PYTHONUNBUFFERED": "1"}).start()
        self.port = wait_for_port_file(port_file, self.proc)
        self.base = self.issuer = f"http://127.0.0.1:{self.port}"
        self.discovery = wait_http_ok(self.issuer + "/.well-known/openid-configuration", self.proc).json()

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


def apple_env(keys: AppleKeys) -> dict:
    return {"GATEHOUSE_PROVIDER": "apple", "GATEHOUSE_APPLE_TEAM_ID": TEAM_ID, "GATEHOUSE_APPLE_KEY_ID": KEY_ID,
            "GATEHOUSE_CLIENT_PRIVATE_KEY": str(keys.p8), "GATEHOUSE_CLIENT_SECRET": None}


@pytest.fixture
def keys(tmp_path) -> AppleKeys:
    return AppleKeys(tmp_path / "keys")


@pytest.fixture
def emulator(tmp_path, keys):
    emu = AppleEmulator(tmp_path / "emu-apple", keys)
    yield emu
    emu.stop()


@pytest.fixture
def apple(emulator, keys, upstream, tmp_path, request):
    """apple(env={...}, access_ttl=None, start=True, wait_ready=True) -> Gateway on the emulator."""
    harness_require_binary()
    made = []

    def make(env: dict | None = None, access_ttl: int | None = None, start=True, wait_ready=True) -> Gateway:
        if access_ttl is not None:
            emulator.config(access_ttl=access_ttl)
        gw_env = apple_env(keys)
        gw_env.update(env or {})
        gw = Gateway(emulator, upstream, tmp_path / f"gw-apple-{len(made)}", env=gw_env,
                     name=harness.safe_name(f"gateway-{request.node.name}-{len(made)}"),
                     start=start, wait_ready=wait_ready)
        made.append(gw)
        return gw

    yield make
    for gw in reversed(made):
        gw.stop()


def harness_require_binary():
    # as conftest.py's gateway fixtures do
    binary = harness.gatehouse_bin()
    if not binary.exists():
        msg = f"gatehouse binary not found at {binary} (set GATEHOUSE_BIN or run `swift build`)"
        if os.environ.get("E2E_REQUIRE_GATEWAY") == "1":
            pytest.fail(msg)
        pytest.skip(msg)


# ---------------------------------------------------------------------------
# the browser's part: /login, Apple's auto-posting form, the POST to /callback
# ---------------------------------------------------------------------------

def authorize(sess: requests.Session, gw: Gateway) -> tuple[str, str, dict]:
    """/login, then Apple's answer: returns (authorize URL, the posted form's action, its fields)."""
    _, url = harness.start_login(sess, gw)
    page = sess.get(url, allow_redirects=False, timeout=30)
    assert page.status_code == 200 and "text/html" in page.headers["Content-Type"], (page.status_code, page.text[:500])
    form = next(f for f in parse_forms(page.text) if f["method"] == "post")
    fields = {i["name"]: i.get("value", "") for i in form["inputs"] if i.get("name")}
    return url, urljoin(page.url, form["action"]), fields


def apple_login(gw: Gateway, sess: requests.Session | None = None):
    """A whole sign-in. Returns (session, authorize URL, posted fields, the callback's answer)."""
    sess = sess or requests.Session()
    url, action, fields = authorize(sess, gw)
    assert action == gw.public_url + "/callback", action
    cb = sess.post(action, data=fields, allow_redirects=False, timeout=30)
    return sess, url, fields, cb


def signed_in(gw: Gateway, cb: requests.Response, sess: requests.Session) -> dict:
    """Asserts the callback signed the user in; returns GET /user."""
    assert cb.status_code == 302, (cb.status_code, cb.text[:800])
    assert any(c.startswith(gw.cookie_name + "=") for c in set_cookie_headers(cb)), set_cookie_headers(cb)
    r = gw.get(sess, "/user")
    assert r.status_code == 200, r.text
    return r.json()


def api_authorization(gw: Gateway, sess: requests.Session) -> str:
    r = gw.get(sess, "/api/hello")
    assert r.status_code == 200, r.text
    return r.json()["authorization"]


# ---------------------------------------------------------------------------
# the emulator on its own (no gateway): it behaves as Apple documents
# ---------------------------------------------------------------------------

def test_emulator_behaves_as_apple_documents(emulator, keys):
    base = emulator.base
    d = emulator.discovery
    assert d["issuer"] == base
    assert {k: d[k] for k in ("authorization_endpoint", "token_endpoint", "revocation_endpoint", "jwks_uri")} == {
        "authorization_endpoint": base + "/auth/authorize", "token_endpoint": base + "/auth/token",
        "revocation_endpoint": base + "/auth/revoke", "jwks_uri": base + "/auth/keys"}
    assert "userinfo_endpoint" not in d and "end_session_endpoint" not in d
    assert d["response_modes_supported"] == ["query", "fragment", "form_post"]
    assert d["scopes_supported"] == ["openid", "email", "name"]
    assert d["subject_types_supported"] == ["pairwise"]
    assert d["token_endpoint_auth_methods_supported"] == ["client_secret_post"]
    assert d["id_token_signing_alg_values_supported"] == ["RS256"]

    redirect = "https://rp.example.test/callback"
    emulator.register_redirect(redirect)
    params = {"client_id": SERVICES_ID, "redirect_uri": redirect, "response_type": "code",
              "scope": "openid name email", "state": "st-1", "nonce": "n-1"}
    # name/email scopes without form_post: Apple's invalid_request page, no redirect
    r = requests.get(base + "/auth/authorize", params={**params, "response_mode": "query"}, allow_redirects=False)
    assert r.status_code == 400 and "invalid_request" in r.text and "form_post" in r.text
    r = requests.get(base + "/auth/authorize", params=params, allow_redirects=False)  # query is the default
    assert r.status_code == 400 and "invalid_request" in r.text

    def post_form(p):
        page = requests.get(base + "/auth/authorize", params={**p, "response_mode": "form_post"}, allow_redirects=False)
        assert page.status_code == 200 and "text/html" in page.headers["Content-Type"], page.text
        form = next(f for f in parse_forms(page.text) if f["method"] == "post")
        assert form["action"] == redirect
        return {i["name"]: i.get("value", "") for i in form["inputs"] if i.get("name")}

    verifier = "v" * 50
    first = post_form({**params, "code_challenge": harness.b64url_sha256(verifier), "code_challenge_method": "S256"})
    assert first["state"] == "st-1" and first["code"] and "id_token" not in first
    assert json.loads(first["user"]) == {"name": {"firstName": "Ada", "lastName": "Lovelace"},
                                        "email": "ada@privaterelay.appleid.com"}
    again = post_form(params)
    assert "user" not in again and again["code"] != first["code"]

    token_url = base + "/auth/token"
    good = {"client_id": SERVICES_ID, "grant_type": "authorization_code", "redirect_uri": redirect}
    other_key = ECKey.generate_key("P-256")
    now = int(time.time())
    bad_secrets = {
        "kid": keys.client_secret(header={"kid": "OTHERKEY01"}),
        "iss": keys.client_secret(iss="ZZZZZ99999"),
        "sub": keys.client_secret(sub="com.example.other"),
        "aud": keys.client_secret(aud="https://appleid.apple.com/"),
        "aud list": keys.client_secret(aud=[APPLE_AUDIENCE]),
        "expired": keys.client_secret(iat=now - 100, exp=now - 1),
        "iat future": keys.client_secret(iat=now + 120, exp=now + 600),
        "too long": keys.client_secret(iat=now, exp=now + SIX_MONTHS + 1),
        "other key": keys.client_secret(key=other_key),
        "not a jwt": "e2e-secret-ssssssssssssssssssss",
    }
    for why, secret in bad_secrets.items():
        r = requests.post(token_url, data={**good, "code": first["code"], "code_verifier": verifier,
                                           "client_secret": secret}, timeout=5)
        assert r.status_code == 400 and r.json() == {"error": "invalid_client"}, (why, r.status_code, r.text)
    # the secret in a Basic header: Apple takes client_secret_post only
    r = requests.post(token_url, data={**good, "code": first["code"], "code_verifier": verifier},
                      auth=(SERVICES_ID, keys.client_secret()), timeout=5)
    assert r.status_code == 400 and r.json() == {"error": "invalid_client"}
    # PKCE: a wrong verifier is invalid_grant (and spends the code)
    r = requests.post(token_url, data={**good, "code": again["code"], "code_verifier": "w" * 50,
                                       "client_secret": keys.client_secret()}, timeout=5)
    assert r.status_code == 200, r.text  # no challenge was sent with `again`: nothing to verify
    r = requests.post(token_url, data={**good, "code": first["code"], "code_verifier": "w" * 50,
                                       "client_secret": keys.client_secret()}, timeout=5)
    assert r.status_code == 400 and r.json() == {"error": "invalid_grant"}

    third = post_form({**params, "code_challenge": harness.b64url_sha256(verifier), "code_challenge_method": "S256"})
    secret = keys.client_secret(iat=now, exp=now + SIX_MONTHS)  # exactly six months is allowed
    r = requests.post(token_url, data={**good, "code": third["code"], "code_verifier": verifier,
                                       "client_secret": secret}, timeout=5)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == 3600 and body["refresh_token"]
    assert "scope" not in body
    claims = jwt_claims(body["id_token"])
    assert claims["iss"] == base and claims["aud"] == SERVICES_ID and claims["nonce"] == "n-1"
    assert claims["sub"].startswith("001234.") and claims["nonce_supported"] is True
    assert claims["email_verified"] == "true" and claims["is_private_email"] == "true"
    assert not set(NAME_CLAIMS) & set(claims)

    r = requests.post(token_url, data={"client_id": SERVICES_ID, "grant_type": "refresh_token",
                                       "refresh_token": body["refresh_token"], "client_secret": secret}, timeout=5)
    assert r.status_code == 200, r.text
    refreshed = r.json()
    assert "refresh_token" not in refreshed and refreshed["access_token"] != body["access_token"]
    assert jwt_claims(refreshed["id_token"])["sub"] == claims["sub"]

    revoke = {"client_id": SERVICES_ID, "token": body["refresh_token"], "token_type_hint": "refresh_token"}
    r = requests.post(base + "/auth/revoke", data={**revoke, "client_secret": bad_secrets["aud"]}, timeout=5)
    assert r.status_code == 400 and r.json() == {"error": "invalid_client"}
    r = requests.post(base + "/auth/revoke", data={**revoke, "client_secret": secret}, timeout=5)
    assert r.status_code == 200
    r = requests.post(token_url, data={"client_id": SERVICES_ID, "grant_type": "refresh_token",
                                       "refresh_token": body["refresh_token"], "client_secret": secret}, timeout=5)
    assert r.status_code == 400 and r.json() == {"error": "invalid_grant"}

    stats = emulator.stats()
    assert [s["client_secret_valid"] for s in stats["revocations"]] == [False, True]
    recorded = stats["client_secrets"]
    assert recorded[-1]["valid"] and recorded[-1]["header"]["kid"] == KEY_ID and recorded[-1]["claims"]["iss"] == TEAM_ID
    assert keys.verify(recorded[-1]["jwt"]) and not keys.verify(bad_secrets["other key"])

    # a later /_test/config can make the next authorization a first one again, or a user's data differ
    emulator.config(first_authorization=True, user={"email": "ada@example.com", "is_private_email": False})
    fourth = post_form(params)
    assert json.loads(fourth["user"])["email"] == "ada@example.com"
    emulator.config(first_authorization=True, user_override="{not json")
    assert post_form(params)["user"] == "{not json"
    emulator.config(cancel=True)
    assert post_form(params) == {"error": "user_cancelled_authorize", "state": "st-1"}


# ---------------------------------------------------------------------------
# the gateway
# ---------------------------------------------------------------------------

def test_first_login_has_the_name_a_later_login_does_not(apple, emulator):
    gw = apple()
    sess = requests.Session()
    url, action, fields = authorize(sess, gw)
    # the profile's request: form_post, the scopes `openid name email`, the Services ID, no secret
    assert q1(url, "response_mode") == "form_post" and q1(url, "response_type") == "code"
    assert sorted(q1(url, "scope").split()) == ["email", "name", "openid"]
    assert q1(url, "client_id") == SERVICES_ID and q1(url, "redirect_uri") == gw.public_url + "/callback"
    assert "client_secret" not in query_of(url)
    assert url.startswith(emulator.discovery["authorization_endpoint"] + "?")
    assert action == gw.public_url + "/callback"
    assert set(fields) == {"state", "code", "user"}, fields
    # the form's answer as a GET: refused (a form_post login is answered only by a POST)
    r = sess.get(gw.url + "/callback", params=fields, allow_redirects=False, timeout=30)
    assert r.status_code == 400
    cb = sess.post(action, data=fields, allow_redirects=False, timeout=30)
    me = signed_in(gw, cb, sess)
    claims = me["claims"]
    assert me["sub"] == claims["sub"] and claims["sub"].startswith("001234.")
    assert claims["name"] == "Ada Lovelace" and claims["given_name"] == "Ada" and claims["family_name"] == "Lovelace"
    assert claims["email"] == "ada@privaterelay.appleid.com"
    assert claims["email_verified"] is True, claims  # Apple's "true", as a boolean
    assert claims["is_private_email"] is True, claims
    assert me["session"]["refreshable"] is True
    # replayed: the state is spent
    assert sess.post(action, data=fields, allow_redirects=False, timeout=30).status_code == 400

    # the token request: client_secret_post, the secret in the body, nothing in a header or the URL
    exchange = next(t for t in emulator.stats()["token"] if t["grant_type"] == "authorization_code")
    assert exchange["method"] == "POST" and exchange["authorization_header"] is False and exchange["in_query"] == []
    assert {"client_id", "client_secret", "code", "grant_type", "redirect_uri"} <= set(exchange["in_body"])
    assert "application/x-www-form-urlencoded" in exchange["content_type"]

    # a later login of the same user (a new browser): Apple posts no `user`, so no name
    later, _, later_fields, cb = apple_login(gw)
    assert "user" not in later_fields and set(later_fields) == {"state", "code"}
    claims = signed_in(gw, cb, later)["claims"]
    assert not set(NAME_CLAIMS) & set(claims), claims
    assert claims["email"] == "ada@privaterelay.appleid.com" and claims["email_verified"] is True
    assert claims["is_private_email"] is True
    # the gateway's log never holds the client secret it signed, nor the key
    log = gw.proc.log_text()
    for secret in (s["jwt"] for s in emulator.stats()["client_secrets"]):
        assert secret not in log
    assert "PRIVATE KEY" not in log


def test_api_refresh_and_logout_with_revocation(apple, emulator, keys, upstream):
    gw = apple(access_ttl=3)
    sess, _, _, cb = apple_login(gw)
    signed_in(gw, cb, sess)
    first = api_authorization(gw, sess)
    assert first.startswith("Bearer a"), first  # the upstream saw Apple's access token

    # Apple's refresh answers no refresh token: the gateway keeps the first one, twice over
    seen = [first]
    deadline = time.time() + 30
    while len(seen) < 3 and time.time() < deadline:
        current = api_authorization(gw, sess)
        if current != seen[-1]:
            seen.append(current)
        time.sleep(0.2)
    assert len(seen) == 3, f"refreshed {len(seen) - 1} time(s) in 30 s"
    refreshes = [t for t in emulator.stats()["token"] if t["grant_type"] == "refresh_token"]
    assert len(refreshes) >= 2 and all(t["method"] == "POST" and not t["authorization_header"] for t in refreshes)
    assert all({"client_id", "client_secret", "refresh_token"} <= set(t["in_body"]) for t in refreshes)
    me = gw.get(sess, "/user").json()
    # the refreshed ID token has no name (Apple never puts one there): the session keeps the first one
    assert me["session"]["refreshable"] is True and me["claims"].get("name") == "Ada Lovelace", me["claims"]
    assert me["claims"]["email_verified"] is True and me["claims"]["is_private_email"] is True, me["claims"]

    r = gw.post(sess, "/logout")
    assert r.status_code == 302 and r.headers["Location"] in ("/", gw.url + "/"), (r.status_code, r.headers)
    assert gw.get(sess, "/user").status_code == 401
    # logout revoked at Apple with a valid client secret; nothing was refused
    deadline = time.time() + 5
    while time.time() < deadline and "refresh_token" not in [x["token_type_hint"] for x in emulator.stats()["revocations"]]:
        time.sleep(0.1)
    revocations = emulator.stats()["revocations"]
    assert "refresh_token" in [x["token_type_hint"] for x in revocations], revocations
    assert all(x["client_secret_valid"] and x["client_id"] == SERVICES_ID for x in revocations), revocations

    # every client secret the emulator received: valid, and as "Creating a client secret" says
    now = time.time()
    secrets_seen = emulator.stats()["client_secrets"]
    endpoints = {s["endpoint"] for s in secrets_seen}
    assert endpoints == {"token", "revoke"}, endpoints
    for s in secrets_seen:
        assert s["valid"], s
        header, claims = s["header"], s["claims"]
        assert header["alg"] == "ES256" and header["kid"] == KEY_ID, header
        assert claims["iss"] == TEAM_ID and claims["sub"] == SERVICES_ID and claims["aud"] == APPLE_AUDIENCE, claims
        assert isinstance(claims["iat"], int) and isinstance(claims["exp"], int)
        assert claims["iat"] <= now + 1 and claims["exp"] > now and 0 < claims["exp"] - claims["iat"] <= SIX_MONTHS, claims
        assert keys.verify(s["jwt"]), "the ES256 signature does not verify with cryptography"
    # the upstream saw Apple's bearer, and neither the session cookie nor a client secret
    entries = [e for e in upstream.log() if dict((k.lower(), v) for k, v in e["headers"]).get("authorization") in seen]
    assert entries, "the upstream never saw the bearer"
    for entry in entries:
        text = json.dumps(entry)
        assert all(s["jwt"] not in text for s in secrets_seen)
        assert (gw.cookie_name + "=") not in dict((k.lower(), v) for k, v in entry["headers"]).get("cookie", "")


def test_ordinary_address_and_names_beyond_ascii(apple, emulator):
    emulator.config(user={"email": "ada.lovelace@example.com", "is_private_email": False,
                          "first_name": "Zoë", "last_name": "Ångström-O'Neil"})
    gw = apple()
    sess, _, fields, cb = apple_login(gw)
    assert json.loads(fields["user"])["name"]["firstName"] == "Zoë"
    claims = signed_in(gw, cb, sess)["claims"]
    assert claims["given_name"] == "Zoë" and claims["family_name"] == "Ångström-O'Neil"
    assert claims["name"] == "Zoë Ångström-O'Neil"
    assert claims["email"] == "ada.lovelace@example.com" and claims["email_verified"] is True
    assert claims["is_private_email"] is False, claims


MALFORMED_USER = {
    "not json": '{"name":{"firstName":"Ada","lastName":"Lovelace"',
    "names not strings": json.dumps({"name": {"firstName": 1, "lastName": ["Lovelace"]},
                                     "email": "ada@privaterelay.appleid.com"}),
    "name not an object": json.dumps({"name": "Ada Lovelace", "email": "ada@privaterelay.appleid.com"}),
    "not an object": json.dumps(["Ada", "Lovelace"]),
    "larger than 4 KiB": json.dumps({"name": {"firstName": "Ada", "lastName": "Lovelace"},
                                     "email": "ada@privaterelay.appleid.com", "padding": "x" * 4200}),
}


@pytest.mark.parametrize("case", sorted(MALFORMED_USER))
def test_a_malformed_user_field_is_ignored(apple, emulator, case):
    emulator.config(user_override=MALFORMED_USER[case])
    gw = apple()
    sess, _, fields, cb = apple_login(gw)
    assert fields["user"] == MALFORMED_USER[case]
    claims = signed_in(gw, cb, sess)["claims"]  # the login still succeeds...
    assert not set(NAME_CLAIMS) & set(claims), claims  # ...without a name
    assert claims["email"] == "ada@privaterelay.appleid.com" and claims["email_verified"] is True


def test_the_unsigned_user_field_never_overrides_signed_claims(apple, emulator):
    # `user` is posted by the browser, unsigned: it may give a name, never the identity or the email.
    emulator.config(user_override=json.dumps({"name": {"firstName": "Ada", "lastName": "Lovelace"},
                                              "email": "mallory@evil.example", "sub": "001234.mallory.0001",
                                              "email_verified": True, "is_private_email": False}))
    gw = apple()
    sess, _, _, cb = apple_login(gw)
    me = signed_in(gw, cb, sess)
    claims = me["claims"]
    assert claims["name"] == "Ada Lovelace"
    assert claims["email"] == "ada@privaterelay.appleid.com" and claims["is_private_email"] is True, claims
    assert claims["sub"] != "001234.mallory.0001" and me["sub"] == claims["sub"]


def test_a_cancelled_authorization_signs_nobody_in(apple, emulator):
    # "Handle the response": error=user_cancelled_authorize is posted when the user cancels.
    emulator.config(cancel=True)
    gw = apple()
    sess, _, fields, cb = apple_login(gw)
    assert fields["error"] == "user_cancelled_authorize"
    assert cb.status_code == 400 and "text/html" in cb.headers["Content-Type"], (cb.status_code, cb.text[:300])
    assert not any(c.startswith(gw.cookie_name + "=") and "Max-Age=0" not in c for c in set_cookie_headers(cb))
    assert gw.get(sess, "/user").status_code == 401
    assert not [t for t in emulator.stats()["token"] if t["grant_type"] == "authorization_code"]


# ---------------------------------------------------------------------------
# startup refusals
# ---------------------------------------------------------------------------

def refused_at_start(gw: Gateway, variable: str):
    gw.start(wait_ready=False)
    try:
        rc = gw.proc.wait(timeout=30)
    except Exception:
        pytest.fail(f"serve kept running; wanted exit 64 naming {variable}")
    log = gw.proc.log_text()
    assert rc == 64, (rc, log[-2000:])
    assert variable in log, log[-2000:]
    assert "PRIVATE KEY" not in log


@pytest.mark.parametrize("missing", ["GATEHOUSE_APPLE_TEAM_ID", "GATEHOUSE_APPLE_KEY_ID",
                                     "GATEHOUSE_CLIENT_PRIVATE_KEY"])
def test_apple_without_its_settings_stops_startup(apple, missing):
    gw = apple(env={missing: None}, start=False)
    refused_at_start(gw, missing)


@pytest.mark.parametrize("kind", ["rsa", "p384"])
def test_a_key_that_is_not_p256_stops_startup(apple, tmp_path, kind):
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048) if kind == "rsa" \
        else ec.generate_private_key(ec.SECP384R1())
    path = tmp_path / f"{kind}.p8"
    path.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    gw = apple(env={"GATEHOUSE_CLIENT_PRIVATE_KEY": str(path)}, start=False)
    refused_at_start(gw, "GATEHOUSE_CLIENT_PRIVATE_KEY")


def test_apple_team_id_without_the_apple_profile_stops_startup(apple):
    gw = apple(env={"GATEHOUSE_PROVIDER": "generic", "GATEHOUSE_CLIENT_SECRET": harness.CLIENT_SECRET,
                    "GATEHOUSE_APPLE_KEY_ID": None, "GATEHOUSE_CLIENT_PRIVATE_KEY": None}, start=False)
    refused_at_start(gw, "GATEHOUSE_APPLE_TEAM_ID")
