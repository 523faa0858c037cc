"""Who may call what (SPEC "Fourth round", "Who may call what"): `allow=` rules per route against the
suite's real provider (groups from UserInfo), a group removed at the provider stopping a session
after its next refresh, login gates, WebSocket upgrades, and the review's re-spelled paths."""

from __future__ import annotations

import json
import time

import pytest
import requests
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from harness import finish_callback, login, provider_authorize, start_login
from test_respelled_routes import raw_get
from test_websockets import ws_upstream  # noqa: F401  (the fixture)


def routes(url: str, extra: str = "") -> str:
    return (f"/api={url}/api,/api/admin={url}/api/admin;allow=groups:admin|ops,"
            f"/api/corp={url}/api/corp;allow=email_domain:example.com+provider:default" + extra)


def test_allow_rule_admits_by_group_and_refuses_others(gateway_factory, provider, upstream):
    gw = gateway_factory({"GATEHOUSE_ROUTES": routes(upstream.url)})
    provider.config(userinfo_extra={"groups": ["staff", "ops"]})
    alice = login(gw, provider, "alice")
    r = gw.get(alice, "/api/admin/echo")
    assert r.status_code == 200 and r.json()["path"] == "/api/admin/echo", r.text[:200]
    provider.config(userinfo_extra={"groups": ["staff"]})
    bob = login(gw, provider, "bob")
    admin_calls = len([e for e in upstream.log() if e["path"].startswith("/api/admin")])
    refused = gw.get(bob, "/api/admin/echo")
    assert refused.status_code == 403, refused.text[:200]
    assert refused.json()["error"] == "forbidden" and refused.json()["error_description"]
    # The rule sits on the route only: the outer API still answers bob.
    assert gw.get(bob, "/api/echo").status_code == 200
    # Re-spelled, the admin prefix is still the admin route (or refused), never /api's.
    for path in ["/api/%61dmin/echo", "/api//admin/echo", "/api/Admin/echo", "/api/admin;x/echo"]:
        assert raw_get(gw, path, bob).status_code in (400, 403), path
    # Nothing of the refused calls reached the upstream.
    assert len([e for e in upstream.log() if e["path"].startswith("/api/admin")]) == admin_calls


def test_verified_email_domain_and_provider_terms(gateway_factory, provider, upstream):
    gw = gateway_factory({"GATEHOUSE_ROUTES": routes(upstream.url)})
    assert gw.get(login(gw, provider, "alice"), "/api/corp/echo").status_code == 200  # verified @example.com
    # bob's address is at example.com too, but not verified: an unverified email never holds.
    assert gw.get(login(gw, provider, "bob"), "/api/corp/echo").status_code == 403


def test_a_group_removed_at_the_provider_stops_the_session_after_its_refresh(gateway_factory, provider, upstream):
    provider.config(access_ttl=3, refresh_access_ttl=3, userinfo_extra={"groups": ["admin"]})
    gw = gateway_factory({"GATEHOUSE_ROUTES": routes(upstream.url)})
    alice = login(gw, provider, "alice")
    assert gw.get(alice, "/api/admin/echo").status_code == 200
    provider.config(userinfo_extra={"groups": ["staff"]})
    before = provider.refresh_count()
    deadline = time.monotonic() + 20
    status = 200
    while time.monotonic() < deadline and status == 200:
        time.sleep(1)
        status = gw.get(alice, "/api/admin/echo").status_code
    assert status == 403 and provider.refresh_count() > before
    # Still signed in: only the rule refuses.
    assert gw.get(alice, "/api/echo").status_code == 200


def test_login_gates_refuse_with_403_and_no_session(gateway_factory, provider, upstream):
    gw = gateway_factory({"GATEHOUSE_ROUTES": f"/api={upstream.url}/api",
                          "GATEHOUSE_ALLOWED_EMAIL_DOMAINS": "example.com"})
    assert gw.get(login(gw, provider, "alice"), "/user").status_code == 200
    browser = requests.Session()
    _, authorize_url = start_login(browser, gw)
    callback = finish_callback(browser, provider_authorize(browser, authorize_url, "bob"))  # unverified email
    assert callback.status_code == 403, callback.text[:300]
    assert "text/html" in callback.headers["Content-Type"]
    assert not any(c.name == gw.cookie_name for c in browser.cookies)
    assert "login_not_allowed" in gw.proc.log_text()


def test_groups_gate_and_a_gate_naming_another_domain(gateway_factory, provider, upstream):
    gw = gateway_factory({"GATEHOUSE_ROUTES": f"/api={upstream.url}/api", "GATEHOUSE_ALLOWED_GROUPS": "staff",
                          "GATEHOUSE_ALLOWED_EMAIL_DOMAINS": "other.example"})
    provider.config(userinfo_extra={"groups": ["staff"]})
    browser = requests.Session()
    _, authorize_url = start_login(browser, gw)
    callback = finish_callback(browser, provider_authorize(browser, authorize_url, "alice"))
    assert callback.status_code == 403, "every gate that is set must be met"


def test_websocket_upgrade_refused_by_the_rule(gateway_factory, provider, upstream, ws_upstream):  # noqa: F811
    gw = gateway_factory({"GATEHOUSE_ROUTES": f"/api={upstream.url}/api,/ws={ws_upstream.url};allow=groups:admin"})
    provider.config(userinfo_extra={"groups": ["staff"]})
    bob = login(gw, provider, "bob")
    cookie = {"Cookie": f"{gw.cookie_name}={bob.cookies.get(gw.cookie_name)}"}
    with pytest.raises(InvalidStatus) as refused:
        connect(gw.url.replace("http://", "ws://") + "/ws/echo", origin=gw.public_url, additional_headers=cookie,
                open_timeout=15)
    assert refused.value.response.status_code == 403
    assert json.loads(refused.value.response.body)["error"] == "forbidden"


def put_user(provider, sub: str, claims: dict) -> None:
    requests.put(provider._url(f"/users/{sub}"), json=claims, timeout=5).raise_for_status()


@pytest.mark.parametrize("groups_claim,claims", [
    (None, {"groups": ["admin"]}),
    ("realm_access.roles", {"realm_access": {"roles": ["ops", "user"]}}),
    ("https://example.com/roles", {"https://example.com/roles": "staff admin"}),
])
def test_groups_from_the_id_token_where_the_provider_puts_them(gateway_factory, provider, upstream, groups_claim, claims):
    env = {"GATEHOUSE_ROUTES": routes(upstream.url), "GATEHOUSE_USERINFO": "false"}  # the ID token alone
    if groups_claim:
        env["GATEHOUSE_GROUPS_CLAIM"] = groups_claim
    gw = gateway_factory(env)
    member = f"member-{abs(hash(groups_claim))}"
    put_user(provider, member, {"email": f"{member}@example.com", "email_verified": True, **claims})
    browser = login(gw, provider, member)
    assert gw.get(browser, "/api/admin/echo").status_code == 200
    outsider = f"outsider-{abs(hash(groups_claim))}"
    put_user(provider, outsider, {"email": f"{outsider}@example.com", "email_verified": True})
    assert gw.get(login(gw, provider, outsider), "/api/admin/echo").status_code == 403
