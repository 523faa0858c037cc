"""`GATEHOUSE_RESPONSE_MODE=form_post` (OAuth 2.0 Form Post Response Mode; SPEC "More providers and
protocols"): the provider posts the authorization response to the callback; the code never appears
in a URL, and the other method is refused at that callback."""

from __future__ import annotations

from urllib.parse import urljoin

import requests

import harness
from harness import parse_forms, q1


def authorize_form_post(s, gw, provider, username="alice"):
    """/login, the provider's real login form, then the auto-posting page it answers: returns that
    page's form (action and fields) as the browser would submit it."""
    _, authorize = harness.start_login(s, gw)
    assert q1(authorize, "response_mode") == "form_post"
    page = s.get(authorize, timeout=30)
    form = next(f for f in parse_forms(page.text) if f["method"] == "post")
    data = {i["name"]: i.get("value", "") for i in form["inputs"] if i.get("name") and i.get("type") != "submit"}
    data["sub"] = username
    r = s.post(urljoin(page.url, form["action"]) if form["action"] else page.url, data=data,
               allow_redirects=False, timeout=30)
    assert r.status_code == 200 and "text/html" in r.headers["Content-Type"], (r.status_code, r.text[:300])
    posted = next(f for f in parse_forms(r.text) if f["method"] == "post")
    fields = {i["name"]: i.get("value", "") for i in posted["inputs"] if i.get("name")}
    return posted["action"], fields


def test_the_callback_takes_the_posted_response(gateway_factory, provider):
    gw = gateway_factory(env={"GATEHOUSE_RESPONSE_MODE": "form_post"})
    s = requests.Session()
    action, fields = authorize_form_post(s, gw, provider)
    assert action == gw.public_url + "/callback" and "code" in fields and "state" in fields
    # the same response as a GET: refused (a login is answered only in the mode it asked for)
    r = s.get(gw.url + "/callback", params=fields, allow_redirects=False, timeout=30)
    assert r.status_code == 400
    r = s.post(gw.url + "/callback", data=fields, allow_redirects=False, timeout=30)
    assert r.status_code == 302, r.text[:500]
    assert any(c.startswith(gw.cookie_name + "=") for c in harness.set_cookie_headers(r))
    assert gw.get(s, "/user").json()["sub"] == "alice"
    # replayed: the state is spent
    assert s.post(gw.url + "/callback", data=fields, allow_redirects=False, timeout=30).status_code == 400


def test_a_query_provider_refuses_a_post(gateway):
    r = requests.post(gateway.url + "/callback", data={"code": "x", "state": "y"}, allow_redirects=False, timeout=30)
    assert r.status_code == 400 and "text/html" in r.headers["Content-Type"]


def test_the_login_cookie_may_cross_sites_only_for_form_post_over_https(gateway_factory, provider):
    gw = gateway_factory(env={"GATEHOUSE_RESPONSE_MODE": "form_post", "GATEHOUSE_PUBLIC_URL": "https://app.example.test"})
    r = requests.get(gw.url + "/login", allow_redirects=False, timeout=30)
    binding = next(c for c in harness.set_cookie_headers(r) if "-login=" in c)
    assert "SameSite=None" in binding and "Secure" in binding
    plain = gateway_factory(env={"GATEHOUSE_PUBLIC_URL": "https://app.example.test"})
    r = requests.get(plain.url + "/login", allow_redirects=False, timeout=30)
    assert "SameSite=Lax" in next(c for c in harness.set_cookie_headers(r) if "-login=" in c)
    # the variable's value is checked
    r = plain.cli("check", env={"GATEHOUSE_RESPONSE_MODE": "fragment"})
    assert r.returncode == 64 and "GATEHOUSE_RESPONSE_MODE" in r.stderr
