"""Sender-constrained tokens (RFC 9449 DPoP; SPEC "FAPI 2.0: PAR and DPoP", issue 37 item 2), against
idpyoidc's OP from PyPI (`--dpop`: it requires a proof on every token request and binds each token to
the proof's key) and a resource server that accepts only DPoP-bound tokens with valid proofs and its
nonce (e2e/dpop_upstream.py)."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests

from harness import E2E_DIR, PYTHON, Gateway, Proc, wait_for_port_file
from test_token_exchange import CLIENT_ID, CLIENT_SECRET, IdpyProvider, sign_in


class DPoPUpstream:
    def __init__(self, work: Path):
        work.mkdir(parents=True, exist_ok=True)
        port_file = work / "dpop.port"
        self.proc = Proc("dpop-upstream", [PYTHON, str(E2E_DIR / "dpop_upstream.py"), "--port-file", str(port_file)]).start()
        self.port = wait_for_port_file(port_file, self.proc)
        self.url = f"http://127.0.0.1:{self.port}"

    def stats(self) -> dict:
        return requests.get(self.url + "/__stats", headers={"Authorization": "x"}, timeout=5).json()

    def stop(self):
        self.proc.stop()


@pytest.fixture
def dpop_setup(tmp_path, upstream):
    made = []

    def make(access_token_ttl=300, env=None, provider_nonce=False, provider_args=()):
        rs = DPoPUpstream(tmp_path / f"rs{len(made)}")
        placeholder = SimpleNamespace(issuer="http://127.0.0.1:1", client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                                      register_redirect=lambda *a: None)
        gw = Gateway(placeholder, upstream, tmp_path / f"gw{len(made)}", register=False, start=False, env={
            "GATEHOUSE_DPOP": "on",
            "GATEHOUSE_SCOPES": "openid profile email offline_access",
            "GATEHOUSE_ROUTES": f"/rs={rs.url}/resource,/api={upstream.url}/api,"
                                f"/orders={rs.url}/orders;exchange=token;audience=orders-api,"
                                f"/legacy={upstream.url}/api;dpop=off",
            **(env or {}),
        })
        provider = IdpyProvider(tmp_path / f"idp{len(made)}", gw.public_url + "/callback", access_token_ttl,
                                extra_args=("--dpop", "--dpop-rfc-ath") + (("--dpop-nonce",) if provider_nonce else ())
                                + tuple(provider_args))
        gw.env["GATEHOUSE_ISSUER"] = provider.issuer
        gw.start()
        made.append((gw, provider, rs))
        return gw, provider, rs

    yield make
    for gw, provider, rs in made:
        gw.stop()
        provider.stop()
        rs.stop()


def test_tokens_are_bound_and_every_call_carries_a_proof(dpop_setup, upstream):
    gw, provider, rs = dpop_setup()
    browser = sign_in(gw)
    # The first call meets the resource server's nonce challenge and is sent again with it.
    r = gw.get(browser, "/rs/hello")
    assert r.status_code == 200, (r.status_code, r.text, rs.stats())
    assert r.json()["sub"] == "alice"
    assert rs.stats()["challenges"] == 1
    # The nonce is remembered: the next calls need no second try; each proof is new (jti).
    for _ in range(3):
        assert gw.get(browser, "/rs/hello?x=1").status_code == 200
    stats = rs.stats()
    assert stats["challenges"] == 1 and stats["accepted"] == 4 and not stats["refused"], stats
    # What goes upstream: the DPoP scheme and a proof; never a bearer.
    seen = {k.lower(): v for k, v in gw.get(browser, "/api/echo").json()["headers"]}
    assert seen["authorization"].startswith("DPoP ") and seen["dpop"].count(".") == 2
    token = seen["authorization"][5:]
    # A stolen copy of the token is useless without the session's key: as a bearer the resource
    # server refuses it, and so it does a proof seen on the wire and replayed (its jti is spent).
    assert requests.get(rs.url + "/resource/hello", headers={"Authorization": "Bearer " + token}, timeout=5).status_code == 401
    last = requests.get(rs.url + "/__last", headers={"Authorization": "x"}, timeout=5).json()
    replay = requests.get(rs.url + last["path"], headers={"Authorization": last["authorization"], "DPoP": last["dpop"]}, timeout=5)
    assert replay.status_code == 401, replay.text
    # An upstream that cannot take DPoP (dpop=off): refused, the bound token never sent as a bearer.
    r = gw.get(browser, "/legacy/echo")
    assert r.status_code == 403 and r.json()["error"] == "dpop_not_accepted", r.text
    assert token not in gw.proc.log_text()
    # /user works (UserInfo was called with a proof at sign-in).
    assert gw.get(browser, "/user").json()["sub"] == "alice"


def test_a_rotated_upstream_nonce_is_answered_with_one_retry(dpop_setup):
    """Calls on a kept upstream connection (sent from the event loop) meet the resource server's new
    nonce: each such call is sent once more with it, and the browser never sees the challenge."""
    gw, provider, rs = dpop_setup()
    browser = sign_in(gw)
    for _ in range(3):
        assert gw.get(browser, "/rs/hello").status_code == 200
    for round_ in range(3):
        requests.post(rs.url + "/__rotate", headers={"Authorization": "x"}, timeout=5)
        r = gw.get(browser, "/rs/hello")
        assert r.status_code == 200, (r.status_code, r.text, rs.stats())
        assert gw.get(browser, "/rs/hello").status_code == 200  # the new nonce is remembered
    stats = rs.stats()
    assert stats["challenges"] == 1 + 3 and stats["accepted"] == 3 + 6 and not stats["refused"], stats
    # A call with a body is not sent twice: the challenge goes to the browser, the nonce is kept.
    requests.post(rs.url + "/__rotate", headers={"Authorization": "x"}, timeout=5)
    r = gw.post(browser, "/rs/hello", data=b"{}", headers={"Content-Type": "application/json"})
    assert r.status_code == 401, (r.status_code, r.text)
    assert gw.post(browser, "/rs/hello", data=b"{}", headers={"Content-Type": "application/json"}).status_code == 200


def test_refresh_and_token_exchange_carry_proofs(dpop_setup):
    gw, provider, rs = dpop_setup(access_token_ttl=4)
    browser = sign_in(gw)
    assert gw.get(browser, "/rs/hello").status_code == 200
    # The exchanged token for another API is bound to the same key.
    r = gw.get(browser, "/orders/list")
    assert r.status_code == 200, (r.text, rs.stats())
    time.sleep(4.5)
    # The user's token expired: refreshed with a proof (idpyoidc refuses a token request without).
    r = gw.get(browser, "/rs/hello")
    assert r.status_code == 200, (r.text, rs.stats())
    stats = provider.stats()
    assert stats["token_ok"]["refresh_token"] >= 1 and stats["token_error"]["refresh_token"] == 0, stats
    assert stats["token_ok"]["token-exchange"] == 1
    assert not rs.stats()["refused"]


def test_the_providers_nonce_dance(dpop_setup):
    """A provider that wants its nonce in every proof (RFC 9449 §8): the first token request is
    answered use_dpop_nonce and sent again with it; later ones carry it from the start."""
    gw, provider, rs = dpop_setup(access_token_ttl=3, provider_nonce=True)
    browser = sign_in(gw)
    assert provider.stats()["dpop_nonce_challenges"] == 1
    assert gw.get(browser, "/rs/hello").status_code == 200
    time.sleep(3.5)
    assert gw.get(browser, "/rs/hello").status_code == 200
    stats = provider.stats()
    assert stats["dpop_nonce_challenges"] == 1, stats
    assert stats["token_ok"]["refresh_token"] >= 1 and stats["token_ok"]["authorization_code"] == 1, stats


def test_dpop_setting_is_checked(tmp_path, upstream):
    from harness import run_cli
    gw = Gateway(SimpleNamespace(issuer="http://127.0.0.1:1", client_id="c", client_secret="s",
                                 register_redirect=lambda *a: None), upstream, tmp_path / "gw", register=False,
                 start=False, env={"GATEHOUSE_DPOP": "maybe"})
    result = run_cli(["serve"], env=gw.env, timeout=20)
    assert result.returncode == 64 and "GATEHOUSE_DPOP" in result.stderr and "on or off" in result.stderr


def test_dpop_on_needs_a_provider_that_lists_es256(tmp_path, upstream):
    """GATEHOUSE_DPOP=on at a provider whose discovery has no dpop_signing_alg_values_supported:
    `serve` stops and `check` fails, both naming the variable and the metadata field."""
    from harness import run_cli
    gw = Gateway(SimpleNamespace(issuer="http://127.0.0.1:1", client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                                 register_redirect=lambda *a: None), upstream, tmp_path / "gw", register=False,
                 start=False, env={"GATEHOUSE_DPOP": "on"})
    provider = IdpyProvider(tmp_path / "idp", gw.public_url + "/callback", 300, extra_args=())
    try:
        gw.env["GATEHOUSE_ISSUER"] = provider.issuer
        served = run_cli(["serve"], env=gw.env, timeout=30)
        assert served.returncode != 0, served.stderr[-500:]
        assert "GATEHOUSE_DPOP" in served.stderr and "dpop_signing_alg_values_supported" in served.stderr, served.stderr[-500:]
        # The remedy is a value that starts: GATEHOUSE_DPOP has no `auto`.
        assert "GATEHOUSE_DPOP=off" in served.stderr and "GATEHOUSE_DPOP=auto" not in served.stderr, served.stderr[-500:]
        checked = run_cli(["check"], env=gw.env, timeout=30)
        assert checked.returncode != 0, checked.stdout[-800:]
        assert "FAIL" in checked.stdout and "GATEHOUSE_DPOP=on" in checked.stdout, checked.stdout[-800:]
    finally:
        provider.stop()


def test_fapi2_profile_refuses_what_it_forbids(tmp_path, upstream):
    from harness import run_cli
    gw = Gateway(SimpleNamespace(issuer="http://127.0.0.1:1", client_id="c", client_secret="s",
                                 register_redirect=lambda *a: None), upstream, tmp_path / "gw", register=False,
                 start=False, env={"GATEHOUSE_SECURITY_PROFILE": "fapi2", "GATEHOUSE_ID_TOKEN_ALGS": "RS256"})
    result = run_cli(["serve"], env=gw.env, timeout=20)
    assert result.returncode == 64, result.stderr[-800:]
    for variable in ("GATEHOUSE_CLIENT_AUTH_METHOD", "GATEHOUSE_DPOP", "GATEHOUSE_ID_TOKEN_ALGS"):
        assert variable in result.stderr, (variable, result.stderr[-800:])
    assert "fapi2" in result.stderr


def client_key(kind: str, work: Path) -> tuple[str, Path]:
    """A fresh client key: its private PEM for the gateway, its public JWKS file for the provider."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptojwt.jwk.ec import ECKey
    from cryptojwt.jwk.rsa import RSAKey
    if kind == "rsa":
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = RSAKey(pub_key=private.public_key(), kid="client-1", use="sig")
    else:
        private = ec.generate_private_key(ec.SECP256R1())
        jwk = ECKey(pub_key=private.public_key(), kid="client-1", use="sig")
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    work.mkdir(parents=True, exist_ok=True)
    jwks = work / f"client-{kind}.jwks.json"
    jwks.write_text(json.dumps({"keys": [jwk.serialize(private=False)]}))
    return pem, jwks


@pytest.mark.parametrize("kind,alg", [("rsa", "PS256"), ("ec", "ES256")])
def test_fapi2_profile_signs_in_against_idpyoidc(dpop_setup, tmp_path, kind, alg):
    """GATEHOUSE_SECURITY_PROFILE=fapi2 end to end: private_key_jwt (an RSA key signs PS256 on its
    own under the profile), PAR, DPoP with the provider's nonce, an ES256 ID token; every client
    assertion names the issuer as its sole audience and carries its own jti, the nonce retry too."""
    pem, jwks = client_key(kind, tmp_path / "keys")
    gw, provider, rs = dpop_setup(access_token_ttl=3, provider_nonce=True, env={
        "GATEHOUSE_SECURITY_PROFILE": "fapi2",
        "GATEHOUSE_CLIENT_AUTH_METHOD": "private_key_jwt",
        "GATEHOUSE_CLIENT_SECRET": None,
        "GATEHOUSE_CLIENT_PRIVATE_KEY": pem,
        "GATEHOUSE_CLIENT_KEY_ID": "client-1",
        # Set for one run; left unset in the other, where the profile's default (PS256, ES256, EdDSA)
        # applies instead of the usual RS256.
        "GATEHOUSE_ID_TOKEN_ALGS": "ES256" if kind == "rsa" else None,
    }, provider_args=("--par", "--client-jwks", str(jwks), "--id-token-alg", "ES256"))
    browser = sign_in(gw)
    assert gw.get(browser, "/rs/hello").status_code == 200
    time.sleep(3.5)
    r = gw.get(browser, "/rs/hello")  # the access token expired: a refresh with a proof and an assertion
    assert r.status_code == 200, (r.text, rs.stats())
    stats = provider.stats()
    assert stats["par"] == 1 and stats["authorization"] == 1, stats
    assert stats["token_ok"]["authorization_code"] == 1 and stats["token_ok"]["refresh_token"] >= 1, stats
    assertions = stats["client_assertions"]
    # PAR, the code exchange (twice: the provider's nonce demand first) and at least one refresh.
    assert len(assertions) >= 4, assertions
    assert {a["alg"] for a in assertions} == {alg}, assertions
    assert {a["kid"] for a in assertions} == {"client-1"}, assertions
    assert all(a["aud"] == provider.issuer for a in assertions), assertions
    assert len({a["jti"] for a in assertions}) == len(assertions), assertions
    assert {a["at"] for a in assertions} == {"par", "token"}
    check = gw.cli("check")
    assert f"client key:    {alg} (GATEHOUSE_CLIENT_KEY_ALG=auto), assertions for {provider.issuer}" in check.stdout, check.stdout
    assert pem.splitlines()[1] not in gw.proc.log_text()


def test_client_key_alg_that_the_key_cannot_sign_stops_serve(tmp_path, upstream):
    from harness import run_cli
    pem, _ = client_key("ec", tmp_path / "keys")
    gw = Gateway(SimpleNamespace(issuer="http://127.0.0.1:1", client_id="c", client_secret="s",
                                 register_redirect=lambda *a: None), upstream, tmp_path / "gw", register=False,
                 start=False, env={"GATEHOUSE_CLIENT_AUTH_METHOD": "private_key_jwt", "GATEHOUSE_CLIENT_SECRET": None,
                                   "GATEHOUSE_CLIENT_PRIVATE_KEY": pem, "GATEHOUSE_CLIENT_KEY_ALG": "PS256"})
    result = run_cli(["serve"], env=gw.env, timeout=20)
    assert result.returncode == 64, result.stderr[-800:]
    assert "GATEHOUSE_CLIENT_KEY_ALG is PS256" in result.stderr and "P-256 key" in result.stderr
