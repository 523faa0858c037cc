"""Request objects by reference and encrypted to the provider (SPEC "More providers and protocols"),
against idpyoidc's OP from PyPI (e2e/idpyoidc_provider.py: `--request-uri` makes it fetch a
`request_uri` from the URL, `--enc-keys` gives it RSA and P-256 encryption keys it opens request
objects with).

`GATEHOUSE_REQUEST_OBJECT=reference`: "the object is served at GET /request-object/{handle} (200,
Content-Type: application/oauth-authz-req+jwt, Cache-Control: no-store; 404 JSON once its login is
completed or expired) and the browser carries request_uri with that URL."
`GATEHOUSE_REQUEST_OBJECT_ENCRYPTION=on`: "the signed object is also encrypted (JWE) to the provider's
encryption key from its jwks_uri (never RSA1_5)."
"""

from __future__ import annotations

import re

import pytest
import requests

from harness import Gateway
from test_request_object import (CLIENT_ID, SCOPES, b64json, begin, check_object, finish, jar_setup,  # noqa: F401
                                 recorded, single_valued, user, verified_object)

REFERENCE_OUTER = {"client_id", "response_type", "scope", "redirect_uri", "request_uri"}
HANDLE = re.compile(r"/request-object/([0-9a-f]{64})$")


def object_at(uri: str) -> requests.Response:
    return requests.get(uri, timeout=10)


def test_by_reference_idpyoidc_fetches_the_object_the_gateway_serves(jar_setup):
    gw, provider, public = jar_setup("ec", env={"GATEHOUSE_REQUEST_OBJECT": "reference"}, provider_args=("--request-uri",))
    browser, url = begin(gw)
    assert url.startswith(provider.issuer + "/authorization?"), url
    outer = single_valued(url)
    assert set(outer) == REFERENCE_OUTER, outer  # no state, nonce or code_challenge in the URL
    uri = outer["request_uri"]
    handle = HANDLE.search(uri)
    assert uri.startswith(gw.public_url + "/request-object/") and handle, uri

    served = object_at(uri)
    assert served.status_code == 200, (served.status_code, served.text[:300])
    assert served.headers["Content-Type"] == "application/oauth-authz-req+jwt", served.headers
    assert served.headers["Cache-Control"] == "no-store", served.headers
    header, claims = verified_object(served.text, public, "ES256")
    check_object(header, claims, alg="ES256", gw=gw, provider=provider, outer=outer)
    # Read again (providers fetch more than once): the same object.
    assert object_at(uri).text == served.text

    browser, callback = finish(gw, browser, url)
    # The state came back although the URL had none: idpyoidc read it from the fetched object.
    assert callback["state"] == claims["state"], callback
    (entry,) = recorded(provider, "authorization")
    assert entry["params"] == outer, entry
    assert entry["verified_request_object"] is True and "error" not in entry, entry
    for name in ("state", "nonce", "code_challenge"):
        assert entry["parsed"][name] == claims[name], (name, entry)
    assert user(gw, browser)["sub"] == "alice"

    # The object lives as long as its login: taken with it at the callback.
    gone = object_at(uri)
    assert gone.status_code == 404 and gone.json()["error"] == "not_found", (gone.status_code, gone.text)
    # The access log shows the path without the handle.
    log = gw.proc.log_text()
    assert "/request-object/{handle}" in log
    assert handle.group(1) not in log


def test_the_request_object_endpoint_refuses_what_is_not_a_live_handle(jar_setup):
    gw, _provider, _ = jar_setup("ec", env={"GATEHOUSE_REQUEST_OBJECT": "reference"}, provider_args=("--request-uri",))
    _, url = begin(gw)
    uri = single_valued(url)["request_uri"]
    path = uri[len(gw.public_url):]
    for other in ("/request-object/" + "0" * 64, "/request-object/" + path[-64:].upper(), "/request-object/x",
                  "/request-object/" + path[-63:], "/request-object/..%2f..%2fuser"):
        r = requests.get(gw.url + other, timeout=10)
        assert r.status_code == 404 and r.json()["error"] == "not_found", (other, r.status_code, r.text[:200])
    for method in ("POST", "PUT", "DELETE"):
        r = requests.request(method, gw.url + path, timeout=10)
        assert r.status_code == 405 and r.headers.get("Allow") == "GET", (method, r.status_code, r.headers)
    assert requests.get(gw.url + path, timeout=10).status_code == 200  # refusals left it in place


def test_another_instance_sharing_the_store_serves_the_object(jar_setup, tmp_path, upstream):
    """Behind a balancer the provider's fetch may reach any instance: they share store and key."""
    gw, provider, _ = jar_setup("ec", env={"GATEHOUSE_REQUEST_OBJECT": "reference"}, provider_args=("--request-uri",))
    other = Gateway(provider, upstream, tmp_path / "other", register=False, env={
        k: v for k, v in gw.env.items() if k.startswith("GATEHOUSE_") and k not in ("GATEHOUSE_LISTEN", "GATEHOUSE_PUBLIC_URL")
    } | {"GATEHOUSE_PUBLIC_URL": gw.public_url})
    try:
        _, url = begin(gw)
        uri = single_valued(url)["request_uri"]
        there = requests.get(other.url + uri[len(gw.public_url):], timeout=10)
        assert there.status_code == 200 and there.text == object_at(uri).text, (there.status_code, there.text[:200])
    finally:
        other.stop()


def test_with_par_a_reference_object_is_pushed_by_value(jar_setup):
    gw, provider, public = jar_setup("ec", par=True, env={"GATEHOUSE_REQUEST_OBJECT": "reference"})
    browser, url = begin(gw)
    query = single_valued(url)
    assert set(query) == {"client_id", "request_uri"} and query["request_uri"].startswith("urn:"), query
    (pushed,) = recorded(provider, "par")
    assert "request" in pushed["params"] and pushed["verified_request_object"] is True, pushed
    finish(gw, browser, url)
    assert user(gw, browser)["sub"] == "alice"


def test_by_reference_at_a_provider_that_does_not_fetch_stops_serve_and_check(jar_setup):
    """idpyoidc without --request-uri says request_uri_parameter_supported false."""
    from test_request_object import run_cli
    gw, _provider, _ = jar_setup("ec", env={"GATEHOUSE_REQUEST_OBJECT": "reference"}, start=False)
    served = run_cli(["serve"], env=gw.env, timeout=30)
    assert served.returncode != 0, served.stderr[-500:]
    assert "GATEHOUSE_REQUEST_OBJECT=reference" in served.stderr and "request_uri_parameter_supported" in served.stderr
    checked = run_cli(["check"], env=gw.env, timeout=30)
    assert checked.returncode != 0 and "request_uri_parameter_supported" in checked.stdout + checked.stderr, checked.stdout[-500:]
    # By value at the same provider works.
    gw.env["GATEHOUSE_REQUEST_OBJECT"] = "on"
    gw.start()
    browser, url = begin(gw)
    finish(gw, browser, url)
    assert user(gw, browser)["sub"] == "alice"


def provider_enc_keys(provider) -> dict[str, dict]:
    jwks_uri = requests.get(provider.issuer + "/.well-known/openid-configuration", timeout=10).json()["jwks_uri"]
    keys = requests.get(jwks_uri, timeout=10).json()["keys"]
    return {k["kid"]: k for k in keys if k.get("use") == "enc"}


@pytest.mark.parametrize("mode", ["on", "reference"])
def test_an_encrypted_object_only_idpyoidc_opens(jar_setup, mode):
    gw, provider, public = jar_setup("rsa", env={"GATEHOUSE_REQUEST_OBJECT": mode, "GATEHOUSE_REQUEST_OBJECT_ENCRYPTION": "on"},
                                     provider_args=("--request-uri", "--enc-keys"))
    browser, url = begin(gw)
    outer = single_valued(url)
    token = outer["request"] if mode == "on" else object_at(outer["request_uri"]).text
    parts = token.split(".")
    assert len(parts) == 5, token[:120]
    header = b64json(parts[0])
    enc_keys = provider_enc_keys(provider)
    assert header["alg"] in ("RSA-OAEP-256", "RSA-OAEP", "ECDH-ES+A256KW", "ECDH-ES+A128KW", "ECDH-ES"), header
    assert header["alg"] != "RSA1_5" and header["cty"] == "JWT" and header["kid"] in enc_keys, (header, list(enc_keys))
    assert enc_keys[header["kid"]]["kty"] == ("RSA" if header["alg"].startswith("RSA") else "EC"), header
    # Nothing of the request is readable on the way: no parameter value appears in the JWE.
    assert "state" not in token and CLIENT_ID not in token

    browser, callback = finish(gw, browser, url)
    (entry,) = recorded(provider, "authorization")
    assert entry["verified_request_object"] is True and "error" not in entry, entry
    assert callback["state"] == entry["parsed"]["state"], (callback, entry)
    assert user(gw, browser)["sub"] == "alice"
    # A second login encrypts anew (a fresh content key: nothing repeats).
    _, again = begin(gw)
    second = single_valued(again)
    second_token = second["request"] if mode == "on" else object_at(second["request_uri"]).text
    assert second_token.split(".")[1:] != parts[1:]


def test_encryption_without_a_request_object_stops_serve(tmp_path, upstream):
    from test_request_object import run_cli, start_env
    result = run_cli(["serve"], env=start_env(tmp_path, upstream, {"GATEHOUSE_REQUEST_OBJECT_ENCRYPTION": "on"}), timeout=20)
    assert result.returncode == 64, (result.returncode, result.stderr[-800:])
    assert "GATEHOUSE_REQUEST_OBJECT_ENCRYPTION" in result.stderr, result.stderr[-800:]
