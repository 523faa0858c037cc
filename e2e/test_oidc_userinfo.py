"""UserInfo after login and refresh, and refreshed ID tokens (issue 17; review issue 10 item 8).

SPEC "More configuration": GATEHOUSE_USERINFO `auto` — "Fetched after login and refresh (bearer in
the header), its `sub` must equal the ID token's, its claims are merged into `/user`'s `claims`".
OIDC Core §12.2: an ID token returned by a refresh is validated before it is used.
"""
from __future__ import annotations

import time

import requests

from harness import finish_callback, login, provider_authorize, set_cookie_headers, start_login


def claims_of(gw, sess) -> dict:
    r = gw.get(sess, "/user")
    assert r.status_code == 200, r.text
    return r.json()["claims"]


def test_userinfo_claims_are_merged_without_overriding_id_token_claims(gateway_factory, provider):
    provider.config(userinfo_extra={"favourite_colour": "green", "iss": "http://evil.example",
                                    "nonce": "evil", "aud": "evil"})
    gw = gateway_factory()
    before = provider.stats()["userinfo"]
    s = login(gw, provider)
    assert provider.stats()["userinfo"] == before + 1
    claims = claims_of(gw, s)
    assert claims["favourite_colour"] == "green"
    assert claims["sub"] == "alice"
    assert claims["iss"] == provider.issuer
    assert claims["nonce"] != "evil" and claims["aud"] != "evil"


def test_userinfo_with_another_sub_fails_the_login(gateway_factory, provider):
    provider.config(userinfo_sub="mallory")
    gw = gateway_factory()
    sess = requests.Session()
    _, authorize_url = start_login(sess, gw)
    callback = finish_callback(sess, provider_authorize(sess, authorize_url, "alice"))
    assert callback.status_code == 400
    assert not any(h.startswith(gw.cookie_name + "=") and "Max-Age=0" not in h
                   for h in set_cookie_headers(callback))
    assert gw.get(sess, "/user").status_code == 401
    assert "UserInfo sub differs" in gw.proc.log_text()


def test_userinfo_false_never_calls_it(gateway_factory, provider):
    gw = gateway_factory(env={"GATEHOUSE_USERINFO": "false"})
    before = provider.stats()["userinfo"]
    login(gw, provider)
    assert provider.stats()["userinfo"] == before


def api_until_refreshed(gw, provider, sess, before: int):
    """Calls the API until the gateway has made a refresh grant; returns that call's answer."""
    for _ in range(100):
        r = gw.get(sess, "/api/hello")
        if provider.refresh_count() > before:
            return r
        time.sleep(0.1)
    raise AssertionError("no refresh grant")


def test_refreshed_id_token_updates_the_claims(gateway_factory, provider):
    provider.config(access_ttl=1, refresh_access_ttl=3600, refresh_id_token="valid",
                    userinfo_extra={"favourite_colour": "blue"})
    gw = gateway_factory()
    s = login(gw, provider)
    assert "refreshed" not in claims_of(gw, s)
    r = api_until_refreshed(gw, provider, s, provider.refresh_count())
    assert r.status_code == 200, r.text
    claims = claims_of(gw, s)
    assert claims["refreshed"] is True and claims["sub"] == "alice"
    assert claims["favourite_colour"] == "blue"


def test_refreshed_id_token_naming_another_user_is_not_used(gateway_factory, provider):
    for spoil in ("other_sub", "auth_time", "sig"):
        provider.config(access_ttl=1, refresh_access_ttl=3600, refresh_id_token=spoil)
        gw = gateway_factory()
        s = login(gw, provider)
        r = api_until_refreshed(gw, provider, s, provider.refresh_count())
        # The refresh fails (the access token has expired: 502), the session keeps its claims.
        assert r.status_code == 502, f"{spoil}: {r.status_code} {r.text[:200]}"
        claims = claims_of(gw, s)
        assert claims["sub"] == "alice" and "refreshed" not in claims, spoil
        assert "refresh returned an invalid ID token" in gw.proc.log_text()
        gw.stop()
