"""Request objects and the claims request (SPEC "More providers and protocols"), against idpyoidc's
OP from PyPI (e2e/idpyoidc_provider.py with `--request-object-jwks`: the client's public keys, with
which idpyoidc verifies a `request` parameter before it uses only what the object says, and
`--record-requests`: each authorization and PAR request, and idpyoidc's reading of it, in /_stats).

`GATEHOUSE_REQUEST_OBJECT=on`: "the authorization request travels as a request object (RFC 9101 /
OIDC Core §6.1): a JWT signed with the client key GATEHOUSE_CLIENT_PRIVATE_KEY (... chosen as for
private_key_jwt; GATEHOUSE_CLIENT_KEY_ID its kid), header typ: oauth-authz-req+jwt; claims: every
authorization parameter ... plus iss = client id, aud = the provider's issuer, iat, nbf, exp =
iat+300, jti. The browser URL then carries only client_id, response_type, scope, redirect_uri and
request. With PAR in use ... those same outer parameters (with request) are pushed to the PAR
endpoint and the browser gets only client_id + request_uri."

`GATEHOUSE_CLAIMS_REQUEST`: "the claims parameter (OIDC Core §5.5), sent with every authorization
request (inside the request object when there is one), compact JSON with sorted keys."

The gateways here ask for `openid profile email` (no offline_access): idpyoidc grants
offline_access only with prompt=consent, and the provider script's --implicit-consent adds that to
the outer query, which idpyoidc discards once it has verified a request object. One test asks for
offline_access the honest way instead (GATEHOUSE_AUTH_PARAMS=prompt=consent, inside the object).
"""

from __future__ import annotations

import base64
import json
import time
from types import SimpleNamespace
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import pytest
import requests
from joserfc import jws
from joserfc.jwk import JWKRegistry

from harness import Gateway, run_cli
from test_dpop import client_key
from test_token_exchange import CLIENT_ID, CLIENT_SECRET, IdpyProvider, sign_in

SCOPES = "openid profile email"
OUTER = {"client_id", "response_type", "scope", "redirect_uri", "request"}
CLAIMS = '{"userinfo":{"email":{"essential":true}},"id_token":{"email":null}}'
CLAIMS_COMPACT = '{"id_token":{"email":null},"userinfo":{"email":{"essential":true}}}'


@pytest.fixture
def jar_setup(tmp_path, upstream):
    """make(kind, env, par, verify_keys, start, provider_args) -> (gw, provider, public JWK): a gateway with a fresh
    client key (test_dpop.client_key, kid client-1) and GATEHOUSE_REQUEST_OBJECT=on, and idpyoidc
    with that key registered for request objects (unless verify_keys=False), PKCE required."""
    made = []

    def make(kind="rsa", env=None, par=False, verify_keys=True, start=True, provider_args=()):
        n = len(made)
        pem, jwks = client_key(kind, tmp_path / f"keys{n}")
        placeholder = SimpleNamespace(issuer="http://127.0.0.1:1", client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                                      register_redirect=lambda *a: None)
        gw = Gateway(placeholder, upstream, tmp_path / f"gw{n}", register=False, start=False, env={
            "GATEHOUSE_SCOPES": SCOPES,
            "GATEHOUSE_REQUEST_OBJECT": "on",
            "GATEHOUSE_CLIENT_PRIVATE_KEY": pem,
            "GATEHOUSE_CLIENT_KEY_ID": "client-1",
            "GATEHOUSE_PAR": "on" if par else "auto",
            **(env or {}),
        })
        extra = ["--record-requests", "--require-pkce"]
        if verify_keys:
            extra += ["--request-object-jwks", str(jwks)]
        if par:
            extra.append("--par")
        extra += list(provider_args)
        provider = IdpyProvider(tmp_path / f"idp{n}", gw.public_url + "/callback", extra_args=tuple(extra))
        gw.env["GATEHOUSE_ISSUER"] = provider.issuer
        made.append((gw, provider))
        if start:
            gw.start()
        return gw, provider, json.loads(jwks.read_text())["keys"][0]

    yield make
    for gw, provider in made:
        gw.stop()
        provider.stop()


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def begin(gw, query: str = "") -> tuple[requests.Session, str]:
    """/login, not followed: the browser session (its login-binding cookie) and the Location."""
    browser = requests.Session()
    r = browser.get(gw.url + "/login" + (("?" + query) if query else ""), allow_redirects=False, timeout=30)
    assert r.status_code == 302, (r.status_code, r.text[:300])
    return browser, urljoin(gw.url, r.headers["Location"])


def single_valued(url: str) -> dict[str, str]:
    query = parse_qs(urlsplit(url).query, keep_blank_values=True)
    assert all(len(v) == 1 for v in query.values()), query
    return {k: v[0] for k, v in query.items()}


def at_provider(browser: requests.Session, url: str) -> requests.Response:
    return browser.get(url, allow_redirects=False, timeout=30)


def finish(gw, browser: requests.Session, url: str) -> tuple[requests.Session, dict[str, str]]:
    """The rest of the sign-in: the provider's redirect to the callback, then the callback."""
    r = at_provider(browser, url)
    assert r.status_code in (302, 303), (r.status_code, r.text[:500])
    callback = r.headers["Location"]
    assert callback.startswith(gw.public_url + "/callback?"), callback
    done = browser.get(callback, allow_redirects=False, timeout=30)
    assert done.status_code == 302, (done.status_code, done.text[:500])
    assert browser.cookies.get(gw.cookie_name)
    return browser, single_valued(callback)


def b64json(segment: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def verified_object(token: str, public_jwk: dict, alg: str) -> tuple[dict, dict]:
    """Header and claims of a request object whose signature verifies with the client's public key."""
    assert token.count(".") == 2, token[:80]
    header = b64json(token.split(".")[0])
    key = JWKRegistry.import_key(public_jwk)
    signed = jws.deserialize_compact(token, key, algorithms=[alg])  # raises on a bad signature
    return header, json.loads(signed.payload)


def check_object(header: dict, claims: dict, *, alg: str, gw, provider, outer: dict | None = None):
    """What the contract says every request object is."""
    assert header["typ"] == "oauth-authz-req+jwt", header
    assert header["alg"] == alg and header["kid"] == "client-1", header
    assert claims["iss"] == CLIENT_ID and claims["aud"] == provider.issuer, claims
    assert claims["exp"] - claims["iat"] == 300 and claims["nbf"] == claims["iat"], claims
    assert abs(claims["iat"] - time.time()) < 60, claims
    assert isinstance(claims["jti"], str) and len(claims["jti"]) >= 16, claims
    assert claims["client_id"] == CLIENT_ID and claims["response_type"] == "code", claims
    assert claims["redirect_uri"] == gw.public_url + "/callback" and claims["scope"] == SCOPES, claims
    for name in ("state", "nonce", "code_challenge"):
        assert isinstance(claims.get(name), str) and len(claims[name]) >= 16, (name, claims)
    assert claims["code_challenge_method"] == "S256", claims
    assert "request" not in claims and "request_uri" not in claims, claims
    if outer is not None:  # OIDC Core §6.1: the repeated parameters are the object's own
        for name in ("client_id", "response_type", "scope", "redirect_uri"):
            assert outer[name] == claims[name], (name, outer, claims)


def recorded(provider, at: str) -> list[dict]:
    return [entry for entry in provider.stats()["requests"] if entry["at"] == at]


def user(gw, browser) -> dict:
    r = gw.get(browser, "/user")
    assert r.status_code == 200, (r.status_code, r.text[:300])
    return r.json()


# ---------------------------------------------------------------------------
# GATEHOUSE_REQUEST_OBJECT=on
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind,alg", [("rsa", "PS256"), ("ec", "ES256")])
def test_the_browser_carries_a_signed_object_that_idpyoidc_uses(jar_setup, kind, alg):
    """A P-256 key signs ES256; an RSA key PS256, as for private_key_jwt at a provider whose
    token_endpoint_auth_signing_alg_values_supported lists PS256 but not RS256 (idpyoidc here)."""
    gw, provider, public = jar_setup(kind)
    browser, url = begin(gw)
    assert url.startswith(provider.issuer + "/authorization?"), url
    outer = single_valued(url)
    assert set(outer) == OUTER, outer
    assert outer["client_id"] == CLIENT_ID and outer["response_type"] == "code" and outer["scope"] == SCOPES
    assert outer["redirect_uri"] == gw.public_url + "/callback"
    header, claims = verified_object(outer["request"], public, alg)
    check_object(header, claims, alg=alg, gw=gw, provider=provider, outer=outer)
    assert "claims" not in claims and "prompt" not in claims and "login_hint" not in claims, claims

    browser, callback = finish(gw, browser, url)
    # The state came back although the URL had none: idpyoidc took it from the object.
    assert callback["state"] == claims["state"] and callback["iss"] == provider.issuer, callback
    (entry,) = recorded(provider, "authorization")
    assert entry["verified_request_object"] is True and "error" not in entry, entry
    for name in ("state", "nonce", "code_challenge", "code_challenge_method"):
        assert entry["parsed"][name] == claims[name], (name, entry)
    assert provider.stats()["token_ok"]["authorization_code"] == 1
    # The ID token idpyoidc issued carries the object's nonce, which the gateway checked: signed in.
    assert user(gw, browser)["sub"] == "alice"
    assert gw.get(browser, "/api/hello").status_code == 200

    # Each login signs a new object: new jti, state, nonce and challenge.
    _, again = begin(gw)
    _, second = verified_object(single_valued(again)["request"], public, alg)
    for name in ("jti", "state", "nonce", "code_challenge"):
        assert second[name] != claims[name], name


def test_a_tampered_object_is_refused_by_idpyoidc(jar_setup):
    gw, provider, public = jar_setup("ec")
    browser, url = begin(gw)
    outer = single_valued(url)
    token = outer["request"]
    head, payload, signature = token.split(".")
    _, claims = verified_object(token, public, "ES256")

    def with_request(value: str) -> str:
        return provider.issuer + "/authorization?" + urlencode({**outer, "request": value})

    # One character of the signature changed (not the last one, whose low bits may be padding).
    i = len(signature) // 2
    bad_signature = signature[:i] + ("A" if signature[i] != "A" else "B") + signature[i + 1:]
    # The payload with one byte of the state changed, signed as before.
    changed = dict(claims, state=claims["state"][:-1] + ("x" if claims["state"][-1] != "x" else "y"))
    bad_payload = b64(json.dumps(changed, separators=(",", ":")).encode())
    for forged in (f"{head}.{payload}.{bad_signature}", f"{head}.{bad_payload}.{signature}"):
        r = at_provider(requests.Session(), with_request(forged))
        assert r.status_code == 400, (r.status_code, r.headers.get("Location"), r.text[:300])
        assert "code=" not in r.headers.get("Location", ""), r.headers
    entries = recorded(provider, "authorization")
    assert len(entries) == 2 and all("BadSignature" in e.get("error", "") and "parsed" not in e for e in entries), entries
    assert provider.stats()["token"]["authorization_code"] == 0

    # The object as signed still signs in.
    browser, callback = finish(gw, browser, url)
    assert callback["state"] == claims["state"]
    assert user(gw, browser)["sub"] == "alice"


def test_idpyoidc_without_the_clients_key_refuses_the_object(jar_setup):
    """The object is verified with the registered key, not merely decoded: the same provider
    without --request-object-jwks cannot verify it and refuses the authorization."""
    gw, provider, _ = jar_setup("rsa", verify_keys=False)
    _, url = begin(gw)
    assert set(single_valued(url)) == OUTER
    r = at_provider(requests.Session(), url)
    assert r.status_code == 400 and "code=" not in r.headers.get("Location", ""), (r.status_code, r.text[:300])
    (entry,) = recorded(provider, "authorization")
    # idpyoidc 5.0.0 finds no keys for the client (IssuerNotFound 'gatehouse') and then trips over
    # building its own error message ("wrong type of value for error"): a refusal either way.
    assert "error" in entry and "parsed" not in entry, entry


def test_login_parameters_travel_inside_the_object(jar_setup):
    """login_hint from /login (GATEHOUSE_LOGIN_PARAMS) and prompt=consent (GATEHOUSE_AUTH_PARAMS) are
    in the object only; idpyoidc signs in the object's hinted user and grants offline_access, which
    it does only with prompt=consent, so both were read from the object."""
    gw, provider, public = jar_setup("rsa", env={
        "GATEHOUSE_LOGIN_PARAMS": "login_hint",
        "GATEHOUSE_AUTH_PARAMS": "prompt=consent",
        "GATEHOUSE_SCOPES": "openid profile email offline_access",
    })
    browser, url = begin(gw, "login_hint=bob")
    outer = single_valued(url)
    assert set(outer) == OUTER, outer
    assert outer["scope"] == "openid profile email offline_access"
    _, claims = verified_object(outer["request"], public, "PS256")
    assert claims["login_hint"] == "bob" and claims["prompt"] == "consent", claims
    assert claims["scope"] == outer["scope"]
    browser, callback = finish(gw, browser, url)
    assert callback["state"] == claims["state"]
    (entry,) = recorded(provider, "authorization")
    assert entry["verified_request_object"] is True, entry
    assert entry["parsed"]["login_hint"] == "bob" and entry["parsed"]["prompt"] in ("consent", ["consent"]), entry
    assert "offline_access" in entry["parsed"]["scope"], entry
    assert user(gw, browser)["sub"] == "bob"


@pytest.mark.parametrize("par_mode", ["on", "auto"])
def test_with_par_the_object_is_pushed_and_the_browser_carries_a_reference(jar_setup, par_mode):
    """PAR in use: GATEHOUSE_PAR=on, or auto at a provider whose discovery lists the endpoint."""
    gw, provider, public = jar_setup("ec", par=True, env={"GATEHOUSE_PAR": par_mode})
    browser, url = begin(gw)
    query = single_valued(url)
    assert set(query) == {"client_id", "request_uri"}, query
    assert query["client_id"] == CLIENT_ID and query["request_uri"].startswith("urn:"), query
    (pushed,) = recorded(provider, "par")
    assert set(pushed["params"]) == OUTER, pushed
    assert pushed["params"]["client_id"] == CLIENT_ID and pushed["params"]["scope"] == SCOPES, pushed
    assert pushed["params"]["redirect_uri"] == gw.public_url + "/callback", pushed
    assert pushed["verified_request_object"] is True and "error" not in pushed, pushed
    header, claims = verified_object(pushed["params"]["request"], public, "ES256")
    check_object(header, claims, alg="ES256", gw=gw, provider=provider, outer=pushed["params"])
    assert pushed["parsed"]["state"] == claims["state"] and pushed["parsed"]["nonce"] == claims["nonce"], pushed

    browser, callback = finish(gw, browser, url)
    assert callback["state"] == claims["state"], callback
    (entry,) = recorded(provider, "authorization")
    assert entry["params"] == query, entry  # nothing else reached the authorization endpoint
    assert entry["verified_request_object"] is True and entry["parsed"]["state"] == claims["state"], entry
    stats = provider.stats()
    assert stats["par"] == 1 and stats["token_ok"]["authorization_code"] == 1, stats
    assert user(gw, browser)["sub"] == "alice"


def test_per_provider_setting(tmp_path, upstream):
    """GATEHOUSE_IDP_<NAME>_REQUEST_OBJECT: with two idpyoidc providers, the one set `on` gets a
    request object, the other (the default, off) the plain parameters; both sign in."""
    pem, jwks = client_key("ec", tmp_path / "keys")
    placeholder = SimpleNamespace(issuer="http://127.0.0.1:1", client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                                  register_redirect=lambda *a: None)
    gw = Gateway(placeholder, upstream, tmp_path / "gw", register=False, start=False, env={
        "GATEHOUSE_ISSUER": None, "GATEHOUSE_CLIENT_ID": None, "GATEHOUSE_CLIENT_SECRET": None,
        "GATEHOUSE_PROVIDERS": "signed,plain",
        "GATEHOUSE_SCOPES": SCOPES,
        "GATEHOUSE_CLIENT_PRIVATE_KEY": pem,
        "GATEHOUSE_CLIENT_KEY_ID": "client-1",
        "GATEHOUSE_IDP_SIGNED_REQUEST_OBJECT": "on",
    })
    providers = {}
    try:
        for name in ("signed", "plain"):
            providers[name] = IdpyProvider(tmp_path / f"idp-{name}", gw.public_url + f"/callback/{name}", extra_args=(
                "--record-requests", "--require-pkce", "--request-object-jwks", str(jwks)))
            gw.env.update({f"GATEHOUSE_IDP_{name.upper()}_ISSUER": providers[name].issuer,
                           f"GATEHOUSE_IDP_{name.upper()}_CLIENT_ID": CLIENT_ID,
                           f"GATEHOUSE_IDP_{name.upper()}_CLIENT_SECRET": CLIENT_SECRET})
        gw.start()
        public = json.loads(jwks.read_text())["keys"][0]
        for name, provider in providers.items():
            browser, url = begin(gw, f"provider={name}")
            assert url.startswith(provider.issuer + "/authorization?"), url
            query = single_valued(url)
            if name == "signed":
                assert set(query) == OUTER, query
                assert query["redirect_uri"] == gw.public_url + "/callback/signed"
                header, claims = verified_object(query["request"], public, "ES256")
                assert header["typ"] == "oauth-authz-req+jwt" and claims["aud"] == provider.issuer, (header, claims)
                state = claims["state"]
            else:
                assert "request" not in query and {"state", "nonce", "code_challenge"} <= set(query), query
                state = query["state"]
            r = at_provider(browser, url)
            assert r.status_code in (302, 303), (name, r.status_code, r.text[:300])
            callback = r.headers["Location"]
            assert callback.startswith(gw.public_url + f"/callback/{name}?"), callback
            assert single_valued(callback)["state"] == state
            assert browser.get(callback, allow_redirects=False, timeout=30).status_code == 302
            assert user(gw, browser)["sub"] == "alice"
            (entry,) = recorded(provider, "authorization")
            assert entry["verified_request_object"] is (name == "signed"), (name, entry)
    finally:
        gw.stop()
        for provider in providers.values():
            provider.stop()


# ---------------------------------------------------------------------------
# GATEHOUSE_CLAIMS_REQUEST
# ---------------------------------------------------------------------------


def test_claims_request_in_the_url(jar_setup):
    gw, provider, _ = jar_setup(env={
        "GATEHOUSE_REQUEST_OBJECT": None, "GATEHOUSE_CLIENT_PRIVATE_KEY": None, "GATEHOUSE_CLIENT_KEY_ID": None,
        "GATEHOUSE_CLAIMS_REQUEST": CLAIMS,
    })
    browser, url = begin(gw)
    query = single_valued(url)
    assert "request" not in query and {"state", "nonce", "code_challenge"} <= set(query), query
    assert query["claims"] == CLAIMS_COMPACT, query["claims"]
    browser, _ = finish(gw, browser, url)
    (entry,) = recorded(provider, "authorization")
    assert entry["verified_request_object"] is False and entry["parsed"]["claims"] == json.loads(CLAIMS), entry
    assert user(gw, browser)["sub"] == "alice"


def test_claims_request_inside_the_object(jar_setup):
    gw, provider, public = jar_setup("rsa", env={"GATEHOUSE_CLAIMS_REQUEST": CLAIMS})
    browser, url = begin(gw)
    outer = single_valued(url)
    assert set(outer) == OUTER, outer  # no claims beside the object
    header, claims = verified_object(outer["request"], public, "PS256")
    check_object(header, claims, alg="PS256", gw=gw, provider=provider, outer=outer)
    # OIDC Core §6.1: in a request object, claims is a JSON object (not a string).
    assert claims["claims"] == json.loads(CLAIMS), claims
    assert json.dumps(claims["claims"], separators=(",", ":"), sort_keys=True) == CLAIMS_COMPACT
    browser, callback = finish(gw, browser, url)
    assert callback["state"] == claims["state"]
    (entry,) = recorded(provider, "authorization")
    assert entry["verified_request_object"] is True and entry["parsed"]["claims"] == json.loads(CLAIMS), entry
    assert user(gw, browser)["sub"] == "alice"


# ---------------------------------------------------------------------------
# refusals at start
# ---------------------------------------------------------------------------


def start_env(tmp_path, upstream, env: dict) -> dict:
    gw = Gateway(SimpleNamespace(issuer="http://127.0.0.1:1", client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                                 register_redirect=lambda *a: None), upstream, tmp_path / "gw", register=False,
                 start=False, env=env)
    return gw.env


@pytest.mark.parametrize("value", ["[]", '{"access_token":{}}', "not json"])
def test_a_bad_claims_request_stops_serve(tmp_path, upstream, value):
    result = run_cli(["serve"], env=start_env(tmp_path, upstream, {"GATEHOUSE_CLAIMS_REQUEST": value}), timeout=20)
    assert result.returncode == 64, (result.returncode, result.stderr[-800:])
    assert "GATEHOUSE_CLAIMS_REQUEST" in result.stderr, result.stderr[-800:]


def test_request_object_without_a_key_stops_serve(tmp_path, upstream):
    result = run_cli(["serve"], env=start_env(tmp_path, upstream, {"GATEHOUSE_REQUEST_OBJECT": "on"}), timeout=20)
    assert result.returncode == 64, (result.returncode, result.stderr[-800:])
    assert "GATEHOUSE_REQUEST_OBJECT" in result.stderr, result.stderr[-800:]
