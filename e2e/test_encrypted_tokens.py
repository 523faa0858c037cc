"""Encrypted ID tokens and UserInfo (JWE, OIDC Core §10.2) against an independent JOSE implementation.

SPEC "More providers and protocols": `GATEHOUSE_CLIENT_ENCRYPTION_KEY` = an RSA (>= 2048 bits) or
P-256 private key, PEM text or the path of a PEM file; `..._PREVIOUS` the previous one during a
rotation (still decrypts, also published). The public halves are published at
`/.well-known/jwks.json` with `"use":"enc"` and `kid` = the RFC 7638 thumbprint. The gateway opens
RSA-OAEP, RSA-OAEP-256, ECDH-ES, ECDH-ES+A128KW, ECDH-ES+A256KW with A128CBC-HS256 or A256GCM in
the token endpoint's `id_token` (a signed JWT inside, validated as usual, stored and sent as
`id_token_hint`) and in a UserInfo answer `application/jwt` (JSON claims or a signed JWT inside).

The provider is provider_server.py started with `--encrypt-id-token ALG:ENC` / `--encrypt-userinfo
ALG:ENC` [`--sign-userinfo`]: it makes its JWEs with joserfc (PyPI), to the `use: enc` key it
fetches from the gateway's own `/.well-known/jwks.json` (or to a JWK the test gives it), and records
each one at `GET /_test/encryption`. cryptojwt (PyPI) is a second, separate check of the JWKS
thumbprints and of the provider's JWEs.
"""

from __future__ import annotations

import base64
import json
import os
import time

import pytest
import requests
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from joserfc import jwk as jose_jwk

import harness
from harness import (Gateway, Provider, finish_callback, jwt_claims, login, parse_cookie, provider_authorize,
                     q1, run_cli, set_cookie_headers, start_login)

PRIVATE_MEMBERS = {"d", "p", "q", "dp", "dq", "qi", "oth", "k"}


# --------------------------------------------------------------------------- keys


def rsa_pem(bits=2048, fmt=ser.PrivateFormat.PKCS8) -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    return key.private_bytes(ser.Encoding.PEM, fmt, ser.NoEncryption()).decode()


def ec_pem(fmt=ser.PrivateFormat.PKCS8) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(ser.Encoding.PEM, fmt, ser.NoEncryption()).decode()


def public_jwk(pem: str) -> dict:
    """joserfc's public JWK of a private PEM, `kid` its RFC 7638 thumbprint."""
    kty = "RSA" if "RSA" in pem or isinstance(ser.load_pem_private_key(pem.encode(), None), rsa.RSAPrivateKey) else "EC"
    key = jose_jwk.import_key(pem, kty)
    return {**key.as_dict(private=False), "kid": key.thumbprint()}


def cryptojwt_thumbprint(pem: str) -> str:
    from cryptojwt.jwk.ec import ECKey
    from cryptojwt.jwk.rsa import RSAKey

    priv = ser.load_pem_private_key(pem.encode(), password=None)
    key = RSAKey(priv_key=priv) if isinstance(priv, rsa.RSAPrivateKey) else ECKey(priv_key=priv)
    return key.thumbprint("SHA-256").decode()


def cryptojwt_decrypt(token: str, pem: str) -> bytes:
    from cryptojwt.jwe.jwe import JWE
    from cryptojwt.jwk.ec import ECKey
    from cryptojwt.jwk.rsa import RSAKey

    priv = ser.load_pem_private_key(pem.encode(), password=None)
    key = RSAKey(priv_key=priv) if isinstance(priv, rsa.RSAPrivateKey) else ECKey(priv_key=priv)
    return JWE().decrypt(token, keys=[key])


def b64d(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def jwe_header(token: str) -> dict:
    return json.loads(b64d(token.split(".")[0]))


# --------------------------------------------------------------------------- processes


@pytest.fixture(scope="module")
def enc_providers(tmp_path_factory):
    """get(*args) -> a provider_server.py started with those extra arguments (one per argument
    list for the module; its test configuration is reset after each test)."""
    started: dict[tuple, Provider] = {}

    def get(*args: str) -> Provider:
        if args not in started:
            name = harness.safe_name("provider-enc-" + "-".join(a.strip("-") for a in args))
            started[args] = Provider(tmp_path_factory.mktemp("provider-enc"), list(args), name=name)
        return started[args]

    yield get
    for p in started.values():
        p.stop()


@pytest.fixture
def make_gateway(upstream, tmp_path, request, enc_providers):
    """make(provider, env) -> a running gateway on `provider`, whose encryption recipient is set to
    the gateway's own JWKS; everything is stopped and the providers reset afterwards."""
    made_here: list[Gateway] = []
    used: list[Provider] = []
    b = harness.gatehouse_bin()
    if not b.exists():  # as conftest's gateway fixtures do
        msg = f"gatehouse binary not found at {b} (set GATEHOUSE_BIN or run `swift build`)"
        if os.environ.get("E2E_REQUIRE_GATEWAY") == "1":
            pytest.fail(msg)
        pytest.skip(msg)

    def make(provider: Provider, env: dict | None = None, start=True, jwks=True) -> Gateway:
        n = len(made_here) + 1
        gw = Gateway(provider, upstream, tmp_path / f"gw{n}", env=env, start=start,
                     name=harness.safe_name(f"gateway-{request.node.name}-{n}"))
        made_here.append(gw)
        if provider not in used and any(a.startswith("--encrypt-") for a in provider.proc.argv):
            used.append(provider)
        if jwks:
            set_recipient(provider, jwks_url=gw.url + "/.well-known/jwks.json", kid=None, jwk=None)
        return gw

    yield make
    for gw in made_here:
        gw.stop()
    for p in used:
        if p.proc.alive():
            p.reset()
            set_recipient(p, jwks_url=None, kid=None, jwk=None)


def set_recipient(provider: Provider, **kw) -> dict:
    r = requests.post(provider.issuer + "/_test/encryption", json=kw, timeout=5)
    r.raise_for_status()
    return r.json()


def encrypted(provider: Provider, what: str | None = None) -> list[dict]:
    rows = requests.get(provider.issuer + "/_test/encryption", timeout=5).json()["encrypted"]
    return [r for r in rows if what is None or r["what"] == what]


def gateway_jwks(gw: Gateway) -> list[dict]:
    r = requests.get(gw.url + "/.well-known/jwks.json", timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["keys"]


def enc_keys(gw: Gateway) -> list[dict]:
    return [k for k in gateway_jwks(gw) if k.get("use") == "enc"]


def api_until_refreshed(gw, provider, sess, before: int):
    """Calls the API until the gateway has made a refresh grant; returns that call's answer."""
    for _ in range(100):
        r = gw.get(sess, "/api/hello")
        if provider.refresh_count() > before:
            return r
        time.sleep(0.1)
    raise AssertionError("no refresh grant")


def assert_login_fails(gw: Gateway, provider: Provider, log_has: str | None = None):
    """The whole login up to the callback: an error page, never a session; the gateway serves on."""
    s = requests.Session()
    _, url = start_login(s, gw)
    r = finish_callback(s, provider_authorize(s, url, "alice"))
    assert 400 <= r.status_code < 600, (r.status_code, r.headers.get("Location"), r.text[:300])
    assert r.headers.get("Content-Type", "").startswith("text/html"), r.headers
    for h in set_cookie_headers(r):
        name, value, attrs = parse_cookie(h)
        assert not (name == gw.cookie_name and value), f"a session cookie was set: {h}"
    assert gw.get(s, "/user").status_code == 401
    assert requests.get(gw.url + "/healthz", timeout=5).status_code == 200
    assert gw.proc.alive()
    if log_has:
        deadline = time.time() + 3
        while log_has not in gw.proc.log_text() and time.time() < deadline:
            time.sleep(0.1)
        assert log_has in gw.proc.log_text(), f"{log_has!r} not in the gateway's log"
    return r


# --------------------------------------------------------------------------- the JWKS


def test_jwks_publishes_the_encryption_keys_with_thumbprint_kids(make_gateway, provider, tmp_path):
    # SPEC: the public halves are published at /.well-known/jwks.json with "use":"enc" and kid = the
    # RFC 7638 thumbprint (beside the gateway's own signing keys); _PREVIOUS is published too.
    current, previous = rsa_pem(), ec_pem(ser.PrivateFormat.TraditionalOpenSSL)
    key_file = tmp_path / "previous.pem"
    key_file.write_text(previous)
    gw = make_gateway(provider, {"GATEHOUSE_CLIENT_ENCRYPTION_KEY": current,
                                 "GATEHOUSE_CLIENT_ENCRYPTION_KEY_PREVIOUS": str(key_file)}, jwks=False)
    keys = gateway_jwks(gw)
    enc = [k for k in keys if k.get("use") == "enc"]
    assert len(enc) == 2, keys
    assert [k for k in keys if k.get("use") != "enc"], "the gateway's own signing key is missing"
    by_kid = {k["kid"]: k for k in enc}
    for pem, members in ((current, {"kty", "n", "e", "use", "kid"}),
                         (previous, {"kty", "crv", "x", "y", "use", "kid"})):
        want = public_jwk(pem)
        assert want["kid"] == cryptojwt_thumbprint(pem)  # the two libraries agree on the thumbprint
        got = by_kid.get(want["kid"])
        assert got is not None, f"no key with kid {want['kid']} in {enc}"
        assert not PRIVATE_MEMBERS & set(got), f"private members published: {got}"
        assert members <= set(got), got
        for m in members - {"use"}:
            assert got[m] == want[m], (m, got[m], want[m])
        # the kid is the thumbprint of what is published
        assert jose_jwk.import_key({k: v for k, v in got.items() if k not in ("use", "kid")}).thumbprint() == got["kid"]
    # the signing keys are not marked for encryption
    assert all(k.get("use") in (None, "sig") for k in keys if k not in enc)
    # without the variables, no encryption key is published
    plain = make_gateway(provider, jwks=False)
    assert not enc_keys(plain), gateway_jwks(plain)


# --------------------------------------------------------------------------- logins


COMBOS = [
    ("RSA-OAEP", "A256GCM", "rsa"),
    ("RSA-OAEP-256", "A128CBC-HS256", "rsa"),
    ("ECDH-ES", "A256GCM", "ec"),
    ("ECDH-ES+A128KW", "A128CBC-HS256", "ec"),
    ("ECDH-ES+A256KW", "A256GCM", "ec"),
]


@pytest.mark.parametrize("alg, enc, kind", COMBOS, ids=[f"{a}+{e}" for a, e, _ in COMBOS])
def test_login_refresh_and_logout_with_an_encrypted_id_token(make_gateway, enc_providers, alg, enc, kind):
    # SPEC: the gateway decrypts the id_token of the token endpoint's answer (at login and at
    # refresh); the inner signed token is validated as usual and is what is stored (and sent as
    # id_token_hint at logout).
    provider = enc_providers("--encrypt-id-token", f"{alg}:{enc}")
    pem = rsa_pem() if kind == "rsa" else ec_pem()
    gw = make_gateway(provider, {"GATEHOUSE_CLIENT_ENCRYPTION_KEY": pem})
    kid = public_jwk(pem)["kid"]
    provider.config(access_ttl=1, refresh_access_ttl=3600, refresh_id_token="valid")
    before = len(encrypted(provider, "id_token"))

    s = login(gw, provider, "alice")
    made = encrypted(provider, "id_token")[before:]
    assert len(made) == 1, made
    jwe = made[0]["jwe"]
    assert jwe.count(".") == 4
    assert jwe_header(jwe) == {"alg": alg, "enc": enc, "kid": kid, "cty": "JWT", **(
        {"epk": jwe_header(jwe)["epk"]} if kind == "ec" else {})}
    # a second implementation opens the provider's JWE too (cryptojwt 1.11's ECDH-ES+A*KW derives
    # its key with "A128KW"/"A256KW" as AlgorithmID instead of the full alg of RFC 7518 §4.6.2 and
    # cannot: those two are checked with joserfc only, by the provider making them)
    if not alg.endswith("KW"):
        assert cryptojwt_decrypt(jwe, pem).decode() == made[0]["inner"]
    r = gw.get(s, "/user")
    assert r.status_code == 200, r.text
    claims = r.json()["claims"]
    assert claims["sub"] == "alice" and claims["email"] == "alice@example.com"
    assert claims["iss"] == provider.issuer and "refreshed" not in claims
    assert jwt_claims(made[0]["inner"])["nonce"] == claims["nonce"]

    # a refresh whose answer carries an encrypted ID token
    r = api_until_refreshed(gw, provider, s, provider.refresh_count())
    assert r.status_code == 200, r.text
    refreshed = encrypted(provider, "id_token")[before:]
    assert len(refreshed) == 2 and jwe_header(refreshed[1]["jwe"])["kid"] == kid, refreshed
    claims = gw.get(s, "/user").json()["claims"]
    assert claims["refreshed"] is True and claims["sub"] == "alice"
    assert gw.get(s, "/api/hello").status_code == 200

    # logout: the id_token_hint is a signed token (three parts), one the provider signed
    out = gw.post(s, "/logout")
    assert out.status_code == 302, out.text[:300]
    hint = q1(out.headers["Location"], "id_token_hint")
    assert hint and hint.count(".") == 2, hint
    assert hint in {m["inner"] for m in refreshed}
    assert hint not in {m["jwe"] for m in refreshed}
    # and the provider's end-session endpoint receives it so
    n = len(provider.stats()["end_session"])
    assert requests.get(out.headers["Location"], timeout=10).status_code == 200
    assert provider.stats()["end_session"][n]["id_token_hint"] == hint


def test_a_key_file_and_pkcs1_rsa_key(make_gateway, enc_providers, tmp_path):
    # SPEC: PEM text or the path of a PEM file.
    provider = enc_providers("--encrypt-id-token", "RSA-OAEP:A256GCM")
    pem = rsa_pem(3072, ser.PrivateFormat.TraditionalOpenSSL)  # -----BEGIN RSA PRIVATE KEY-----
    path = tmp_path / "enc.pem"
    path.write_text(pem)
    gw = make_gateway(provider, {"GATEHOUSE_CLIENT_ENCRYPTION_KEY": str(path)})
    assert [k["kid"] for k in enc_keys(gw)] == [public_jwk(pem)["kid"]]
    s = login(gw, provider)
    assert gw.get(s, "/user").json()["sub"] == "alice"


# --------------------------------------------------------------------------- rotation


def test_rotation_previous_key_opens_until_removed(make_gateway, enc_providers):
    # SPEC: _PREVIOUS = the previous key during a rotation (still decrypts, also published); an
    # encrypted ID token encrypted to another key fails the login (error page, no session cookie).
    provider = enc_providers("--encrypt-id-token", "RSA-OAEP-256:A256GCM")
    old, new = rsa_pem(), rsa_pem()
    old_jwk, new_jwk = public_jwk(old), public_jwk(new)
    gw = make_gateway(provider, {"GATEHOUSE_CLIENT_ENCRYPTION_KEY": new,
                                 "GATEHOUSE_CLIENT_ENCRYPTION_KEY_PREVIOUS": old})
    assert {k["kid"] for k in enc_keys(gw)} == {old_jwk["kid"], new_jwk["kid"]}

    # the provider still encrypts to the old key (it picked it from the JWKS before the rotation)
    set_recipient(provider, kid=old_jwk["kid"])
    s = login(gw, provider)
    assert jwe_header(encrypted(provider, "id_token")[-1]["jwe"])["kid"] == old_jwk["kid"]
    assert gw.get(s, "/user").json()["sub"] == "alice"
    # and to the new one
    set_recipient(provider, kid=new_jwk["kid"])
    s = login(gw, provider)
    assert jwe_header(encrypted(provider, "id_token")[-1]["jwe"])["kid"] == new_jwk["kid"]

    # the rotation ends: the previous key is removed (a restart)
    del gw.env["GATEHOUSE_CLIENT_ENCRYPTION_KEY_PREVIOUS"]
    gw.restart()
    assert [k["kid"] for k in enc_keys(gw)] == [new_jwk["kid"]]
    set_recipient(provider, jwks_url=None, kid=None, jwk=old_jwk)  # a provider with a stale copy
    assert_login_fails(gw, provider)
    assert jwe_header(encrypted(provider, "id_token")[-1]["jwe"])["kid"] == old_jwk["kid"]
    # once the provider takes the new key, logins work again
    set_recipient(provider, jwks_url=gw.url + "/.well-known/jwks.json", kid=None, jwk=None)
    login(gw, provider)


def test_an_encrypted_id_token_without_a_configured_key_fails_cleanly(make_gateway, enc_providers):
    # SPEC: an encrypted ID token with no key configured fails the login (error page, no session).
    provider = enc_providers("--encrypt-id-token", "ECDH-ES:A128CBC-HS256")
    gw = make_gateway(provider, jwks=False)
    assert not enc_keys(gw)
    set_recipient(provider, jwk=public_jwk(ec_pem()))
    before = len(encrypted(provider, "id_token"))
    assert_login_fails(gw, provider)
    assert_login_fails(gw, provider)  # again: nothing was left in a bad state
    assert len(encrypted(provider, "id_token")) == before + 2


def test_an_id_token_encrypted_to_another_key_fails(make_gateway, enc_providers):
    # SPEC: an encrypted ID token ... encrypted to another key fails the login.
    provider = enc_providers("--encrypt-id-token", "ECDH-ES+A256KW:A256GCM")
    gw = make_gateway(provider, {"GATEHOUSE_CLIENT_ENCRYPTION_KEY": ec_pem()})
    stranger = public_jwk(ec_pem())
    set_recipient(provider, jwks_url=None, jwk=stranger)
    assert_login_fails(gw, provider)
    # the same key type under the gateway's own kid: still not opened
    own = enc_keys(gw)[0]
    set_recipient(provider, jwk={**stranger, "kid": own["kid"]})
    assert_login_fails(gw, provider)
    assert jwe_header(encrypted(provider, "id_token")[-1]["jwe"])["kid"] == own["kid"]


# --------------------------------------------------------------------------- UserInfo


USERINFO = [
    (["--encrypt-userinfo", "ECDH-ES+A128KW:A256GCM"], "ec", False),
    (["--encrypt-userinfo", "RSA-OAEP:A128CBC-HS256", "--sign-userinfo",
      "--encrypt-id-token", "RSA-OAEP:A256GCM"], "rsa", True),
]


@pytest.mark.parametrize("args, kind, signed", USERINFO, ids=["json", "signed-jwt-and-id-token"])
def test_encrypted_userinfo(make_gateway, enc_providers, args, kind, signed):
    # SPEC: a UserInfo answer with Content-Type: application/jwt that is a JWE, holding either JSON
    # claims or a signed JWT, is opened.
    provider = enc_providers(*args)
    pem = rsa_pem() if kind == "rsa" else ec_pem()
    gw = make_gateway(provider, {"GATEHOUSE_CLIENT_ENCRYPTION_KEY": pem, "GATEHOUSE_USERINFO": "true"})
    provider.config(userinfo_extra={"favourite_colour": "teal"}, access_ttl=1, refresh_access_ttl=3600)
    calls, before = provider.stats()["userinfo"], len(encrypted(provider, "userinfo"))
    s = login(gw, provider)
    assert provider.stats()["userinfo"] == calls + 1
    made = encrypted(provider, "userinfo")[before:]
    assert len(made) == 1
    header = jwe_header(made[0]["jwe"])
    assert header["kid"] == public_jwk(pem)["kid"]
    assert (header.get("cty") == "JWT") is signed
    inner = made[0]["inner"]
    assert (inner.count(".") == 2) is signed
    if signed:
        assert jwt_claims(inner)["aud"] == provider.client_id and jwt_claims(inner)["iss"] == provider.issuer
        assert encrypted(provider, "id_token"), "the ID token was not encrypted"
    claims = gw.get(s, "/user").json()["claims"]
    assert claims["favourite_colour"] == "teal" and claims["sub"] == "alice"
    # after a refresh too
    provider.config(userinfo_extra={"favourite_colour": "ochre"})
    r = api_until_refreshed(gw, provider, s, provider.refresh_count())
    assert r.status_code == 200, r.text
    assert len(encrypted(provider, "userinfo")) == before + 2
    assert gw.get(s, "/user").json()["claims"]["favourite_colour"] == "ochre"


def test_encrypted_userinfo_without_a_key_fails_the_login(make_gateway, enc_providers):
    provider = enc_providers("--encrypt-userinfo", "ECDH-ES+A128KW:A256GCM")
    gw = make_gateway(provider, {"GATEHOUSE_USERINFO": "true"}, jwks=False)
    set_recipient(provider, jwk=public_jwk(ec_pem()))
    before = len(encrypted(provider, "userinfo"))
    assert_login_fails(gw, provider)
    assert len(encrypted(provider, "userinfo")) == before + 1


# --------------------------------------------------------------------------- startup


def _ed25519_pem() -> str:
    return ed25519.Ed25519PrivateKey.generate().private_bytes(
        ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption()).decode()


def _public_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.public_key().public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo).decode()


BAD_KEYS = {
    "public-key-pem": lambda: _public_pem(),
    "garbage-private-key": lambda: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    "rsa-1024": lambda: rsa_pem(1024),
    "ed25519": _ed25519_pem,
    "p384": lambda: ec.generate_private_key(ec.SECP384R1()).private_bytes(
        ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption()).decode(),
    "missing-file": lambda: "/nonexistent/enc.pem",
}


@pytest.mark.parametrize("which", ["current", "previous"])
@pytest.mark.parametrize("bad", list(BAD_KEYS))
def test_an_unreadable_key_stops_serve_with_64(make_gateway, provider, bad, which):
    # SPEC: an unreadable key stops `gatehouse serve` with exit 64 naming the variable.
    value = BAD_KEYS[bad]()
    env = ({"GATEHOUSE_CLIENT_ENCRYPTION_KEY": value} if which == "current" else
           {"GATEHOUSE_CLIENT_ENCRYPTION_KEY": ec_pem(), "GATEHOUSE_CLIENT_ENCRYPTION_KEY_PREVIOUS": value})
    gw = make_gateway(provider, env, start=False, jwks=False)
    cp = run_cli(["serve"], env=gw.env, timeout=30)
    assert cp.returncode == 64, (cp.returncode, cp.stderr[-2000:])
    name = "GATEHOUSE_CLIENT_ENCRYPTION_KEY" + ("_PREVIOUS" if which == "previous" else "")
    assert name in cp.stderr, cp.stderr
    if which == "current":
        assert "GATEHOUSE_CLIENT_ENCRYPTION_KEY_PREVIOUS" not in cp.stderr, cp.stderr
    body = "".join(value.splitlines()[1:-1])
    assert not body or body not in cp.stderr.replace("\n", ""), "the key was echoed"
