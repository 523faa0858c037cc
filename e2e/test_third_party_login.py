"""Third-party initiated login (OpenID Connect Core §4; SPEC "More providers and protocols"):
`/login?iss=…[&login_hint=…][&target_link_uri=…]` starts a login at the configured provider with that
issuer, passes the hint on, and comes back to the target when it is a page `/login` accepts."""

from __future__ import annotations

import requests

import harness
from harness import q1


def test_login_initiated_by_the_issuer_with_hint_and_target(gateway, provider):
    s = requests.Session()
    target = gateway.public_url + "/reports?q=1"
    r = s.get(gateway.url + "/login", params={"iss": provider.issuer, "login_hint": "alice@example.com",
                                              "target_link_uri": target}, allow_redirects=False, timeout=30)
    assert r.status_code == 302, r.text
    authorize = r.headers["Location"]
    assert authorize.startswith(provider.issuer) and q1(authorize, "login_hint") == "alice@example.com"
    callback = harness.provider_authorize(s, authorize, "alice")
    r = harness.finish_callback(s, callback)
    assert r.status_code == 302 and r.headers["Location"] in ("/reports?q=1", gateway.public_url + "/reports?q=1")
    assert gateway.get(s, "/user").json()["sub"] == "alice"


def test_an_unknown_issuer_is_refused_and_a_foreign_target_ignored(gateway, provider):
    r = requests.get(gateway.url + "/login", params={"iss": "https://evil.example"}, allow_redirects=False, timeout=30)
    assert r.status_code == 400 and "text/html" in r.headers["Content-Type"]
    s = requests.Session()
    r = s.get(gateway.url + "/login", params={"iss": provider.issuer, "target_link_uri": "https://evil.example/x"},
              allow_redirects=False, timeout=30)
    assert r.status_code == 302
    callback = harness.provider_authorize(s, r.headers["Location"], "alice")
    r = harness.finish_callback(s, callback)
    assert r.headers["Location"] in ("/", gateway.public_url + "/")
