"""OpenID Connect Front-Channel Logout 1.0 (SPEC "More providers and protocols"): the provider's
logout page frames `/frontchannel-logout?iss=…&sid=…`; the gateway ends that provider's sessions with
that `sid` without a cookie, and only the provider may frame the answer."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import requests

from harness import login


def provider_sid(gw, sess) -> str:
    """The provider's `sid` of the session: `/user`'s logout URL carries it (`/logout?sid=…`)."""
    logout_url = gw.get(sess, "/user").json()["logoutUrl"]
    return parse_qs(urlsplit(logout_url).query)["sid"][0]


def test_ends_the_sessions_of_that_sid_only(gateway, provider):
    alice = login(gateway, provider, "alice")
    bob = login(gateway, provider, "bob")
    sid = provider_sid(gateway, alice)
    assert sid.startswith("sid-")
    anonymous = requests.Session()  # a cross-site iframe: the gateway's cookie does not come along
    r = anonymous.get(gateway.url + "/frontchannel-logout", params={"iss": provider.issuer, "sid": sid}, timeout=30)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    assert r.headers["Cache-Control"] == "no-store"
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(provider.issuer))
    assert f"frame-ancestors {origin}" in r.headers["Content-Security-Policy"]
    assert "X-Frame-Options" not in r.headers
    assert gateway.get(alice, "/user").status_code == 401
    assert gateway.get(alice, "/api/hello").status_code == 401
    assert gateway.get(bob, "/user").status_code == 200
    # again: nothing left to end, the same answer
    assert anonymous.get(gateway.url + "/frontchannel-logout", params={"iss": provider.issuer, "sid": sid},
                         timeout=30).status_code == 200


def test_another_issuer_or_no_sid_ends_nothing(gateway, provider):
    alice = login(gateway, provider, "alice")
    sid = provider_sid(gateway, alice)
    for params in ({"iss": "https://evil.example", "sid": sid}, {"iss": provider.issuer},
                   {"sid": sid}, {"iss": provider.issuer, "sid": ""}):
        r = requests.get(gateway.url + "/frontchannel-logout", params=params, timeout=30)
        assert r.status_code == 400, params
        assert "X-Frame-Options" not in r.headers
    # a POST is not front-channel logout
    r = requests.post(gateway.url + "/frontchannel-logout", params={"iss": provider.issuer, "sid": sid}, timeout=30)
    assert r.status_code == 405
    assert gateway.get(alice, "/user").status_code == 200


def test_a_route_cannot_take_the_path(gateway):
    r = gateway.cli("check", env={"GATEHOUSE_ROUTES": "/frontchannel-logout=http://127.0.0.1:9"})
    assert r.returncode == 64 and "/frontchannel-logout" in r.stderr
