"""Telling the API who the user is (SPEC "Identity for your own APIs", issue 35 items 2 and 3): the
gateway's signed assertion, verified by a real JWT library (joserfc) against
`/.well-known/jwks.json`; the identity headers; `token=`; the key derived from the secret key, alike
on every instance and rotated with it; and the verification examples of the README, run as a user
would run them."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import time

import pytest
import requests
from joserfc import jwt
from joserfc.jwk import KeySet

from harness import REPO, login, random_secret_key

EXAMPLES = REPO / "examples" / "verify-assertion"


def upstream_headers(response: requests.Response) -> dict[str, str]:
    assert response.status_code == 200, (response.status_code, response.text[:300])
    return {name.lower(): value for name, value in response.json()["headers"]}


def key_set(gw) -> KeySet:
    r = requests.get(gw.url + "/.well-known/jwks.json", timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["Cache-Control"] == "public, max-age=300"
    assert r.headers["Content-Type"].startswith("application/json")
    return KeySet.import_key_set(r.json())


def verify(token: str, keys: KeySet, audience: str) -> dict:
    decoded = jwt.decode(token, keys, algorithms=["ES256"])
    assert decoded.header["alg"] == "ES256" and decoded.header["typ"] == "JWT"
    jwt.JWTClaimsRegistry(aud={"essential": True, "value": audience}, exp={"essential": True},
                          iat={"essential": True}, sub={"essential": True}).validate(decoded.claims)
    return decoded.claims


def payload_text(token: str) -> str:
    part = token.split(".")[1]
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode()


ROUTES = lambda up: ",".join([  # noqa: E731
    f"/asrt={up}/api;identity=assertion;audience=orders-api",
    f"/both={up}/api;identity=both",
    f"/hdrs={up}/api;identity=headers;token=none",
    f"/tok={up}/api;token=assertion;audience=reports",
    f"/opt={up}/api;auth=optional;identity=both",
    f"/plain={up}/api",
])


def test_assertion_verified_against_the_published_keys(gateway_factory, provider, upstream):
    gw = gateway_factory({"GATEHOUSE_ROUTES": ROUTES(upstream.url)})
    browser = login(gw, provider, "alice")
    cookie = browser.cookies.get(gw.cookie_name)
    keys = key_set(gw)
    seen = upstream_headers(gw.get(browser, "/asrt/echo"))
    token = seen["gatehouse-assertion"]
    claims = verify(token, keys, "orders-api")
    assert claims["iss"] == gw.url
    assert claims["sub"] == "alice"
    assert claims["idp"] == "default" and claims["idp_iss"] == provider.issuer
    assert claims["exp"] - claims["iat"] == 60
    assert abs(claims["iat"] - time.time()) < 30
    assert claims["email"] == "alice@example.com"
    assert isinstance(claims.get("email_verified"), bool)
    # The session is named, but by nothing a browser could present.
    assert claims["sid"] and claims["sid"] != cookie
    text = payload_text(token) + token
    hashed = hashlib.sha256(cookie.encode()).hexdigest()
    for secret in (cookie, hashed, hashed[:16]):
        assert secret not in text
    # The kid is the RFC 7638 thumbprint of the published key.
    kid = jwt.decode(token, keys).header["kid"]
    jwk = next(k for k in requests.get(gw.url + "/.well-known/jwks.json").json()["keys"] if k["kid"] == kid)
    canonical = json.dumps({"crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"], "y": jwk["y"]},
                           separators=(",", ":"), sort_keys=True)
    assert kid == base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()
    # The user's access token still goes as the bearer beside it.
    assert seen["authorization"].startswith("Bearer ") and seen["authorization"] != "Bearer " + token
    # Cached per session and route: the next call carries the same assertion, not a new signature.
    assert upstream_headers(gw.get(browser, "/asrt/echo"))["gatehouse-assertion"] == token
    # Another route has its own audience: the upstream's origin when none is given.
    both = upstream_headers(gw.get(browser, "/both/echo"))
    verify(both["gatehouse-assertion"], keys, upstream.url.rstrip("/"))
    with pytest.raises(Exception):
        verify(both["gatehouse-assertion"], keys, "orders-api")
    assert both["x-forwarded-user"] == "alice" and both["x-forwarded-email"] == "alice@example.com"
    # Another user's session gets its own.
    bob = login(gw, provider, "bob")
    bob_claims = verify(upstream_headers(gw.get(bob, "/asrt/echo"))["gatehouse-assertion"], keys, "orders-api")
    assert bob_claims["sub"] == "bob" and bob_claims["sid"] != claims["sid"]


def test_client_route_assertion_names_its_audience(gateway_factory, provider, upstream):
    """`auth=client;audience=X;identity=assertion`: the gateway's own token is the bearer, and the
    user's assertion beside it has `aud` = X (SPEC: the route's `audience=` option), as on user routes."""
    gw = gateway_factory({"GATEHOUSE_ROUTES":
                          f"/svc={upstream.url}/api;auth=client;scope=reports.read;audience=reports-api;identity=assertion"})
    browser = login(gw, provider, "alice")
    seen = upstream_headers(gw.get(browser, "/svc/echo"))
    claims = verify(seen["gatehouse-assertion"], key_set(gw), "reports-api")
    assert claims["sub"] == "alice"
    with pytest.raises(Exception):
        verify(seen["gatehouse-assertion"], key_set(gw), upstream.url.rstrip("/"))
    assert seen["authorization"].startswith("Bearer ")


def test_identity_headers_and_token_choices(gateway_factory, provider, upstream):
    gw = gateway_factory({"GATEHOUSE_ROUTES": ROUTES(upstream.url)})
    browser = login(gw, provider, "alice")
    keys = key_set(gw)
    forged = {"X-Forwarded-User": "admin", "X-Forwarded-Email": "admin@example.com", "Gatehouse-Assertion": "forged",
              "X-Forwarded-Groups": "admins"}
    headers_only = upstream_headers(gw.get(browser, "/hdrs/echo", headers=forged))
    assert headers_only["x-forwarded-user"] == "alice"
    assert headers_only["x-forwarded-email"] == "alice@example.com"
    assert "admins" not in headers_only.get("x-forwarded-groups", "")
    assert "authorization" not in headers_only  # token=none
    assert "gatehouse-assertion" not in headers_only
    as_bearer = upstream_headers(gw.get(browser, "/tok/echo", headers=forged))
    assert as_bearer["authorization"].startswith("Bearer ")
    verify(as_bearer["authorization"][len("Bearer "):], keys, "reports")
    assert "gatehouse-assertion" not in as_bearer and "x-forwarded-user" not in as_bearer
    plain = upstream_headers(gw.get(browser, "/plain/echo", headers=forged))
    assert not {"gatehouse-assertion", "x-forwarded-user", "x-forwarded-email"} & plain.keys()
    # auth=optional: signed in, both; signed out, nothing added and nothing forged passes.
    assert upstream_headers(gw.get(browser, "/opt/echo"))["x-forwarded-user"] == "alice"
    anonymous = upstream_headers(gw.get(requests.Session(), "/opt/echo", headers=forged))
    assert not {"gatehouse-assertion", "x-forwarded-user", "x-forwarded-email", "authorization"} & anonymous.keys()
    # Signed out on a user route: 401, the upstream never asked.
    assert gw.get(requests.Session(), "/asrt/echo").status_code == 401


def test_custom_header_name_and_lifetime(gateway_factory, provider, upstream):
    gw = gateway_factory({"GATEHOUSE_ROUTES": f"/asrt={upstream.url}/api;identity=assertion,/pub={upstream.url}/api;auth=none",
                          "GATEHOUSE_ASSERTION_HEADER": "X-User-Assertion", "GATEHOUSE_ASSERTION_TTL": "2m"})
    browser = login(gw, provider, "alice")
    seen = upstream_headers(gw.get(browser, "/asrt/echo", headers={"X-User-Assertion": "forged"}))
    assert "gatehouse-assertion" not in seen
    claims = verify(seen["x-user-assertion"], key_set(gw), upstream.url.rstrip("/"))
    assert claims["exp"] - claims["iat"] == 120
    # The configured name is stripped on every route, signed in or out.
    for session in (browser, requests.Session()):
        assert "x-user-assertion" not in upstream_headers(gw.get(session, "/pub/echo", headers={"X-User-Assertion": "forged"}))


def test_every_instance_signs_alike_and_rotation_keeps_the_old_key(gateway_factory, provider, upstream):
    old, new = random_secret_key(), random_secret_key()
    routes = f"/asrt={upstream.url}/api;identity=assertion;audience=orders-api"
    first = gateway_factory({"GATEHOUSE_SECRET_KEY": old, "GATEHOUSE_ROUTES": routes}, name="first")
    second = gateway_factory({"GATEHOUSE_SECRET_KEY": old, "GATEHOUSE_ROUTES": routes}, name="second")
    kids = lambda gw: [k["kid"] for k in requests.get(gw.url + "/.well-known/jwks.json").json()["keys"]]  # noqa: E731
    assert kids(first) == kids(second) and len(kids(first)) == 1
    browser = login(first, provider, "alice")
    before = upstream_headers(first.get(browser, "/asrt/echo"))["gatehouse-assertion"]
    verify(before, key_set(second), "orders-api")
    rotated = gateway_factory({"GATEHOUSE_SECRET_KEY": new, "GATEHOUSE_SECRET_KEY_PREVIOUS": old,
                               "GATEHOUSE_ROUTES": routes}, name="rotated")
    assert kids(rotated)[1:] == kids(first) and kids(rotated)[0] not in kids(first)
    # An assertion signed before the rotation still verifies against the new instance's keys.
    verify(before, key_set(rotated), "orders-api")
    other = gateway_factory({"GATEHOUSE_ROUTES": routes}, name="other")
    assert not set(kids(other)) & set(kids(first))


def test_refused_configurations(gateway_factory, provider, upstream):
    from harness import run_cli
    for routes, words in [
        (f"/a={upstream.url};auth=none;identity=assertion", "needs a session"),
        (f"/a={upstream.url};identity=bogus", "identity"),
        (f"/a={upstream.url};exchange=token", "audience=, resource= or scope="),
        (f"/a={upstream.url};exchange=refresh;audience=x", "exchange=refresh cannot send"),
        (f"/a={upstream.url};exchange=token;audience=x;token=none", "token=none"),
        (f"/a={upstream.url};auth=optional;exchange=token;audience=x", "auth=user"),
        (f"/a={upstream.url};resource=https://x", "only with exchange"),
        (f"/a={upstream.url};exchange=refresh;resource=not-a-uri", "absolute URI"),
        (f"/a={upstream.url};audience=x", "names the API"),
        (f"/a={upstream.url};auth=client;token=assertion", "auth=client"),
    ]:
        gw = gateway_factory({"GATEHOUSE_ROUTES": routes}, start=False, register=False)
        result = run_cli(["serve"], env=gw.env, timeout=20)
        assert result.returncode == 64, (routes, result.returncode, result.stderr[-500:])
        assert "GATEHOUSE_ROUTES" in result.stderr and words in result.stderr, (routes, result.stderr[-500:])
    for name, value, words in [("GATEHOUSE_ASSERTION_HEADER", "Cookie", "standard header"),
                               ("GATEHOUSE_ASSERTION_HEADER", "X-CSRF", "CSRF header"),
                               ("GATEHOUSE_ASSERTION_HEADER", "bad name", "not a valid header name"),
                               ("GATEHOUSE_ASSERTION_TTL", "1s", "outside"),
                               ("GATEHOUSE_ASSERTION_TTL", "2h", "outside")]:
        gw = gateway_factory({name: value}, start=False, register=False)
        result = run_cli(["serve"], env=gw.env, timeout=20)
        assert result.returncode == 64 and name in result.stderr and words in result.stderr, (name, value, result.stderr[-400:])


def test_readme_examples_verify_a_real_assertion(gateway_factory, provider, upstream, tmp_path):
    """The README's examples, run as a user would: Python (joserfc) and Node (jose, Debian's
    node-jose, which e2e/setup.sh installs); Go (go-jose) only where Go and Debian's go-jose are
    installed (setup.sh does not install Go)."""
    gw = gateway_factory({"GATEHOUSE_ROUTES": f"/asrt={upstream.url}/api;identity=assertion;audience=orders-api"})
    browser = login(gw, provider, "alice")
    token = upstream_headers(gw.get(browser, "/asrt/echo"))["gatehouse-assertion"]
    jwks_url = gw.url + "/.well-known/jwks.json"
    env = {"GATEHOUSE_JWKS_URL": jwks_url, "GATEHOUSE_URL": gw.url, "API_AUDIENCE": "orders-api", "PATH": "/usr/bin:/bin"}
    import sys
    ran = []
    python = subprocess.run([sys.executable, str(EXAMPLES / "verify.py"), token], env=env, capture_output=True,
                            text=True, timeout=60)
    assert python.returncode == 0 and "alice" in python.stdout, python.stderr
    ran.append("python")
    # A token for another audience is refused by the same example.
    wrong = subprocess.run([sys.executable, str(EXAMPLES / "verify.py"), token], env={**env, "API_AUDIENCE": "other"},
                           capture_output=True, text=True, timeout=60)
    assert wrong.returncode != 0
    assert _node_jose(), "node and Debian's node-jose are missing: run e2e/setup.sh"
    # As a user's project has it: jose in node_modules beside the script (ES modules ignore NODE_PATH).
    project = tmp_path / "node-api"
    (project / "node_modules").mkdir(parents=True)
    (project / "node_modules" / "jose").symlink_to("/usr/share/nodejs/jose")
    shutil.copy(EXAMPLES / "verify.mjs", project / "verify.mjs")
    node = subprocess.run(["node", str(project / "verify.mjs"), token], env=env, capture_output=True, text=True,
                          timeout=60)
    assert node.returncode == 0 and "alice" in node.stdout, node.stderr
    wrong = subprocess.run(["node", str(project / "verify.mjs"), token], env={**env, "API_AUDIENCE": "other"},
                           capture_output=True, text=True, timeout=60)
    assert wrong.returncode != 0
    ran.append("node")
    if shutil.which("go") and _go_jose():
        work = tmp_path / "gopath"
        go = subprocess.run(["go", "run", str(EXAMPLES / "main.go"), token],
                            env={**env, "GO111MODULE": "off", "GOPATH": f"/usr/share/gocode", "GOCACHE": str(work / "cache"),
                                 "HOME": str(work)},
                            capture_output=True, text=True, timeout=300)
        assert go.returncode == 0 and "alice" in go.stdout, go.stderr
        ran.append("go")
    print("examples run:", ran)


def _node_jose() -> bool:
    from pathlib import Path
    return shutil.which("node") is not None and Path("/usr/share/nodejs/jose").exists()


def _go_jose() -> bool:
    from pathlib import Path
    return Path("/usr/share/gocode/src/gopkg.in/square/go-jose.v2").exists()
