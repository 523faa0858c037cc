"""A route's policy cannot be re-spelled away, nor an identity named with underscores (SPEC "Fourth
round": "Routing and header names cannot be re-spelled"). The outside review's proofs of concept,
against a real upstream that decodes paths and reads headers as WSGI does."""

from __future__ import annotations

import http.client
import json
from types import SimpleNamespace
from urllib.parse import urlsplit

import requests

from harness import login


def raw_get(gw, path: str, browser: requests.Session | None = None) -> SimpleNamespace:
    """GET `path` byte for byte (requests would decode the escapes of unreserved characters itself)."""
    url = urlsplit(gw.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    headers = {"X-CSRF": "1"}
    if browser is not None:
        headers["Cookie"] = "; ".join(f"{c.name}={c.value}" for c in browser.cookies)
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return SimpleNamespace(status_code=response.status, text=body.decode(errors="replace"),
                           json=lambda: json.loads(body))


def routes(url: str) -> str:
    # A public API, and a nested admin API that needs a session.
    return f"/api={url}/api;auth=none,/api/admin={url}/api/admin"


def test_respelled_nested_prefix_never_gets_the_outer_routes_policy(gateway_factory, upstream):
    gw = gateway_factory({"GATEHOUSE_ROUTES": routes(upstream.url)})
    # The escape of an unreserved character names the admin route: its policy (a session) applies.
    assert raw_get(gw, "/api/%61dmin/users").status_code == 401
    assert raw_get(gw, "/api/adm%69n").status_code == 401
    # Spellings a lenient upstream reads as /api/admin: refused, never forwarded under /api.
    for path in ["/api//admin/users", "/api/admin;x/users", "/api/Admin/users", "/api/ADMIN",
                 "/api/admin%3bx/users", "/api/%zz/admin", "/api/p%2"]:
        r = raw_get(gw, path)
        assert r.status_code == 400, (path, r.status_code, r.text[:200])
        assert r.json()["error"] == "invalid_path"
    # The public route itself still works, matrix parameters and all.
    r = raw_get(gw, "/api/users;v=1/%7Eme")
    assert r.status_code == 200, r.text[:200]
    assert r.json()["path"] == "/api/users;v=1/~me"


def test_canonical_path_is_what_the_upstream_receives(gateway_factory, provider, upstream):
    gw = gateway_factory({"GATEHOUSE_ROUTES": routes(upstream.url)})
    browser = login(gw, provider, "alice")
    r = raw_get(gw, "/api/%61dmin/users%20list?q=%61", browser)
    assert r.status_code == 200, r.text[:200]
    # Unreserved escapes decoded in the path; other escapes and the query byte for byte.
    assert r.json()["target"] == "/api/admin/users%20list?q=%61"


UNDERSCORED = {"X_Forwarded_User": "admin", "Remote_User": "admin", "X_Forwarded_Email": "ceo@example.com",
               "X_Forwarded_For": "10.9.9.9", "X_Real_IP": "10.9.9.9", "X_Custom_Thing": "1"}


def seen(response: requests.Response) -> dict[str, list[str]]:
    assert response.status_code == 200, (response.status_code, response.text[:300])
    out: dict[str, list[str]] = {}
    for name, value in response.json()["headers"]:
        # As CGI/WSGI names them: HTTP_X_FORWARDED_USER for both spellings.
        out.setdefault(name.upper().replace("-", "_"), []).append(value)
    return out


def test_underscore_headers_never_reach_an_upstream(gateway_factory, provider, upstream):
    gw = gateway_factory({"GATEHOUSE_ROUTES": f"/pub={upstream.url}/api;auth=none,/who={upstream.url}/api;identity=headers"})
    signed_out = seen(gw.get(requests.Session(), "/pub/echo", headers=UNDERSCORED))
    for name in UNDERSCORED:
        assert "admin" not in signed_out.get(name.upper(), []) and "1" not in signed_out.get(name.upper(), []), name
    assert signed_out.get("X_FORWARDED_FOR") == ["127.0.0.1"]
    signed_in = seen(gw.get(login(gw, provider, "alice"), "/who/echo", headers=UNDERSCORED))
    # Only the gateway's own value: no "admin,alice".
    assert signed_in["X_FORWARDED_USER"] == ["alice"]
    assert "X_CUSTOM_THING" not in signed_in


def test_underscore_headers_allowed_still_strip_identity_spellings(gateway_factory, upstream):
    gw = gateway_factory({"GATEHOUSE_ROUTES": f"/pub={upstream.url}/api;auth=none",
                          "GATEHOUSE_FORWARD_UNDERSCORE_HEADERS": "true"})
    out = seen(gw.get(requests.Session(), "/pub/echo", headers=UNDERSCORED))
    assert out.get("X_CUSTOM_THING") == ["1"]
    for name in ("X_FORWARDED_USER", "REMOTE_USER", "X_FORWARDED_EMAIL", "X_REAL_IP"):
        assert name not in out, name
    assert out.get("X_FORWARDED_FOR") == ["127.0.0.1"]


def test_identity_headers_name_the_provider_and_only_a_verified_email(gateway_factory, provider, upstream):
    gw = gateway_factory({"GATEHOUSE_ROUTES": f"/who={upstream.url}/api;identity=headers"})
    forged = {"X-Forwarded-Provider": "corp", "X-Forwarded-Email": "ceo@example.com"}
    alice = seen(gw.get(login(gw, provider, "alice"), "/who/echo", headers=forged))  # email_verified: true
    assert alice["X_FORWARDED_PROVIDER"] == ["default"]
    assert alice["X_FORWARDED_EMAIL"] == ["alice@example.com"]
    bob = seen(gw.get(login(gw, provider, "bob"), "/who/echo", headers=forged))  # no email_verified
    assert bob["X_FORWARDED_USER"] == ["bob"] and bob["X_FORWARDED_PROVIDER"] == ["default"]
    assert "X_FORWARDED_EMAIL" not in bob
