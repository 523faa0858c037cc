"""A browser's copy of an identity header never reaches an upstream (SPEC "Identity for your own
APIs"; issue 35 item 1): an API migrated from oauth2-proxy or Apache believes `X-Forwarded-User`,
`Remote-User` and friends, so whoever can send them to it can be anyone. Every route kind, signed in
and out, and from a trusted proxy too."""

from __future__ import annotations

import requests

from harness import login

IDENTITY = ["X-Forwarded-User", "X-Forwarded-Email", "X-Forwarded-Preferred-Username", "X-Forwarded-Groups",
            "X-Forwarded-Access-Token", "X-Auth-Request-User", "X-Auth-Request-Email",
            "X-Auth-Request-Preferred-Username", "X-Auth-Request-Groups", "X-Auth-Request-Access-Token",
            "Remote-User", "X-Remote-User", "Gatehouse-Assertion"]
FORGED = {name: "admin" for name in IDENTITY}


def seen_by_upstream(response: requests.Response) -> set[str]:
    assert response.status_code == 200, (response.status_code, response.text[:300])
    return {name.lower() for name, _ in response.json()["headers"]}


def test_forged_identity_headers_never_reach_an_upstream(gateway_factory, provider, upstream):
    # Trusted proxies too: a balancer in front may pass its own forwarding fields, never identities.
    gw = gateway_factory({
        "GATEHOUSE_ROUTES": (f"/api={upstream.url},/opt={upstream.url}/api;auth=optional,"
                             f"/pub={upstream.url}/api;auth=none,"
                             f"/svc={upstream.url}/api;auth=client;scope=reports.read;session=optional,"
                             f"/who={upstream.url}/api;identity=both"),
        "GATEHOUSE_TRUSTED_PROXIES": "127.0.0.0/8",
    })
    signed_in = login(gw, provider, "alice")
    signed_out = requests.Session()
    cases = [(signed_in, "/api/echo"), (signed_in, "/opt/echo"), (signed_out, "/opt/echo"),
             (signed_in, "/pub/echo"), (signed_out, "/pub/echo"), (signed_in, "/svc/echo"), (signed_out, "/svc/echo")]
    for session, path in cases:
        seen = seen_by_upstream(gw.get(session, path, headers=FORGED))
        leaked = sorted(name for name in IDENTITY if name.lower() in seen)
        assert not leaked, f"{path} ({'signed in' if session is signed_in else 'signed out'}): {leaked}"
        # The rest of the browser's fields still pass.
        assert "accept-encoding" in seen or "user-agent" in seen


def test_forged_identity_headers_replaced_on_an_identity_route(gateway_factory, provider, upstream):
    """On a route that sends identity headers itself, the browser's copies are replaced, not added to."""
    gw = gateway_factory({"GATEHOUSE_ROUTES": f"/who={upstream.url}/api;identity=both"})
    r = gw.get(login(gw, provider, "alice"), "/who/echo", headers=FORGED)
    assert r.status_code == 200, r.text[:300]
    pairs = [(name.lower(), value) for name, value in r.json()["headers"]]
    assert [v for n, v in pairs if n == "x-forwarded-user"] == ["alice"]
    assert "admin" not in [v for n, v in pairs if n == "x-forwarded-email"]
    assert [v for n, v in pairs if n == "gatehouse-assertion"] != ["admin"]
    for name in ("x-auth-request-user", "remote-user", "x-remote-user", "x-forwarded-access-token"):
        assert name not in dict(pairs), name
