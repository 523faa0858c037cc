"""Route options (issue 14): a token policy per route (`auth=user|optional|none|client`),
the gateway's own client-credentials token, and W3C trace context, against the echo upstream
and the e2e provider's client-credentials grant.

SPEC "Route options follow the upstream URL, separated by `;`": `auth=user` (default): session +
CSRF header, the user's access token. `auth=optional`: the user's token when signed in, none
otherwise; CSRF header required whenever a session cookie is present. `auth=none`: no session, no
bearer. `auth=client`: the gateway's client-credentials token (`scope=`, `audience=`), cached and
fetched single-flight. Unknown options stop startup (exit 64). A W3C `traceparent` is validated
and passed on, or created; the access log carries its trace id.
"""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
import requests

from harness import CSRF, login, run_cli

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TRACEPARENT_RE = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


def routes(upstream) -> str:
    u = upstream.url
    return ",".join([
        f"/api={u}",
        f"/open={u}/api;auth=none",
        f"/maybe={u}/api;auth=optional",
        f"/svc={u}/api;auth=client;scope=reports.read;audience=https://reports.example",
        f"/svcopen={u}/api;auth=client;scope=reports.read;session=optional",
    ])


@pytest.fixture
def gw(gateway_factory, upstream):
    return gateway_factory({"GATEHOUSE_ROUTES": routes(upstream)})


def echoed(r: requests.Response) -> dict:
    assert r.status_code == 200, f"{r.status_code}: {r.text[:500]}"
    body = r.json()
    body["h"] = {}
    for k, v in body["headers"]:
        body["h"].setdefault(k.lower(), []).append(v)
    return body


def user_token(provider, sub="alice") -> set[str]:
    return {t["token"] for t in provider.tokens()
            if t["kind"] == "access_token" and t["grant_type"] != "client_credentials" and t["sub"] == sub}


def client_grants(provider) -> int:
    return provider.stats()["token_requests"].get("client_credentials", 0)


# ---------------------------------------------------------------------------
# auth=user (default), auth=none, auth=optional
# ---------------------------------------------------------------------------


def test_auth_user_is_the_default(gw, provider):
    anonymous = requests.Session()
    assert gw.get(anonymous, "/api/echo").status_code == 401
    s = login(gw, provider)
    assert gw.get(s, "/api/echo", csrf=False).json()["error"] == "csrf_header_missing"
    e = echoed(gw.get(s, "/api/echo"))
    assert e["h"]["authorization"][0].removeprefix("Bearer ") in user_token(provider)


def test_auth_none_needs_no_session_and_sends_no_credentials(gw, provider):
    # SPEC: `auth=none`: no session, no bearer; cookies and the browser's Authorization still stripped.
    e = echoed(requests.get(gw.url + "/open/echo?x=1", timeout=10,
                            headers={"Authorization": "Basic YWxpY2U6c2VjcmV0", "Cookie": "other=1"}))
    assert e["path"] == "/api/echo" and e["query"] == "x=1"
    assert "authorization" not in e["h"]
    assert "cookie" not in e["h"]
    # Signed in, without the CSRF header: still forwarded, still without the session's cookie or token.
    s = login(gw, provider)
    e = echoed(gw.get(s, "/open/echo", csrf=False, headers={"Authorization": "Bearer forged"}))
    assert "authorization" not in e["h"] and "cookie" not in e["h"]
    assert s.login_result.cookie not in json.dumps(e)


def test_auth_optional_signed_out_has_no_authorization(gw):
    # SPEC: `auth=optional`: ... no Authorization otherwise.
    e = echoed(requests.get(gw.url + "/maybe/echo", timeout=10, headers={"Authorization": "Bearer forged"}))
    assert "authorization" not in e["h"]
    # A stale session cookie is "signed out" too (with the CSRF header, which a cookie requires).
    e = echoed(requests.get(gw.url + "/maybe/echo", timeout=10,
                            headers={**CSRF, "Cookie": f"{gw.cookie_name}=" + "A" * 43}))
    assert "authorization" not in e["h"] and "cookie" not in e["h"]


def test_auth_optional_signed_in_sends_the_user_token_and_needs_csrf(gw, provider):
    s = login(gw, provider)
    # SPEC: the CSRF header is required whenever a session cookie is present.
    r = gw.get(s, "/maybe/echo", csrf=False)
    assert r.status_code == 401 and r.json()["error"] == "csrf_header_missing"
    e = echoed(gw.get(s, "/maybe/echo"))
    assert e["h"]["authorization"][0].removeprefix("Bearer ") in user_token(provider)
    assert "x-csrf" not in e["h"] and "cookie" not in e["h"]


# ---------------------------------------------------------------------------
# auth=client
# ---------------------------------------------------------------------------


def test_auth_client_needs_a_session_and_sends_the_gateway_token(gw, provider):
    # The provider's token list outlives tests (other modules' auth=client routes add to it).
    before = len(provider.tokens())
    assert requests.get(gw.url + "/svc/echo", headers=CSRF, timeout=10).status_code == 401
    assert client_grants(provider) == 0, "a grant was made for a request without a session"
    s = login(gw, provider)
    assert gw.get(s, "/svc/echo", csrf=False).json()["error"] == "csrf_header_missing"
    e = echoed(gw.get(s, "/svc/echo"))
    bearer = e["h"]["authorization"][0].removeprefix("Bearer ")
    issued = [t for t in provider.tokens()[before:] if t["grant_type"] == "client_credentials"]
    assert [t["token"] for t in issued] == [bearer]
    assert issued[0]["sub"] == "client:" + provider.client_id
    assert bearer not in user_token(provider)
    asked = provider.stats()["client_credentials"]
    assert [(a["scope"], a["audience"], a["auth"]) for a in asked] == [
        ("reports.read", "https://reports.example", "client_secret_basic")]


def test_auth_client_session_optional(gw, provider):
    e = echoed(requests.get(gw.url + "/svcopen/echo", timeout=10))
    assert e["h"]["authorization"][0].startswith("Bearer ")
    assert client_grants(provider) == 1


def test_fifty_concurrent_calls_make_one_grant(gw, provider):
    # Issue 14: one client-credentials grant for 50 concurrent calls.
    provider.config(client_token_delay_ms=1000)
    barrier = threading.Barrier(50)
    results: list = [None] * 50

    def call(i):
        barrier.wait(timeout=30)
        results[i] = requests.get(gw.url + "/svcopen/echo", timeout=60)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    bearers = {echoed(r)["h"]["authorization"][0] for r in results}
    assert len(bearers) == 1, bearers
    assert client_grants(provider) == 1


def test_the_grant_is_renewed_after_expiry(gw, provider):
    provider.config(client_access_ttl=2)
    first = echoed(requests.get(gw.url + "/svcopen/echo", timeout=10))["h"]["authorization"][0]
    assert client_grants(provider) == 1
    deadline = time.time() + 20
    current = first
    while current == first and time.time() < deadline:
        time.sleep(0.25)  # the token's lifetime has to pass; nothing to wait on
        current = echoed(requests.get(gw.url + "/svcopen/echo", timeout=10))["h"]["authorization"][0]
    assert current != first, "the client token was not renewed after it expired"
    assert client_grants(provider) == 2


def test_client_secret_post_is_used_for_the_grant(gateway_factory, upstream, provider):
    gw = gateway_factory({"GATEHOUSE_ROUTES": routes(upstream), "GATEHOUSE_CLIENT_ID": provider.client_id + "-post",
                          "GATEHOUSE_CLIENT_AUTH_METHOD": "client_secret_post"})
    echoed(requests.get(gw.url + "/svcopen/echo", timeout=10))
    assert [a["auth"] for a in provider.stats()["client_credentials"]] == ["client_secret_post"]


def test_provider_refusal_is_502_json_and_nothing_secret_is_logged(gw, provider):
    provider.config(fail_client_credentials="invalid_client")
    r = requests.get(gw.url + "/svcopen/echo", timeout=10)
    assert r.status_code == 502
    assert r.json()["error"] == "client_token_failed" and r.json()["error_description"]
    provider.config(fail_client_credentials=None)
    ok = requests.get(gw.url + "/svcopen/status/200", timeout=10)
    assert ok.status_code == 200
    # This gateway's token: the last issued (the provider's list outlives tests).
    token = [t["token"] for t in provider.tokens() if t["grant_type"] == "client_credentials"][-1]
    # The client token never reaches the browser from the gateway itself.
    assert token not in ok.text and all(token not in v for v in ok.headers.values())
    gw.stop()
    log = gw.proc.log_text()
    assert "client-credentials grant failed" in log
    assert token not in log
    assert gw.env["GATEHOUSE_CLIENT_SECRET"] not in log


# ---------------------------------------------------------------------------
# Unknown options stop startup
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("option,named", [("auth=everyone", "everyone"), ("colour=red", "colour"),
                                          ("auth=none;scope=x", "scope")])
@pytest.mark.parametrize("command", ["serve", "check"])
def test_unknown_route_option_exits_64_naming_it(gateway_factory, upstream, option, named, command):
    gw = gateway_factory({"GATEHOUSE_ROUTES": f"/x={upstream.url};{option}"}, start=False, register=False)
    cp = run_cli([command], env=gw.env, timeout=20)
    assert cp.returncode == 64, cp
    out = cp.stdout + cp.stderr
    assert "GATEHOUSE_ROUTES" in out and named in out, out


# ---------------------------------------------------------------------------
# Trace context
# ---------------------------------------------------------------------------


def access_log_trace_ids(gw, path: str, want: str, timeout=10.0) -> list[str]:
    """Trace ids of the access-log lines for `path`; waits until `want` shows up (the log is
    written after the answer)."""
    deadline = time.time() + timeout
    while True:
        found = []
        for line in gw.proc.log_text().splitlines():
            if not line.startswith("{"):
                continue
            entry = json.loads(line)
            meta = entry.get("metadata", entry)
            if meta.get("http.path") == path and "trace.id" in meta:
                found.append(meta["trace.id"])
        if want in found or time.time() > deadline:
            return found
        time.sleep(0.1)


def test_valid_traceparent_and_tracestate_pass_untouched(gw):
    r = requests.get(gw.url + "/open/echo", timeout=10,
                     headers={"traceparent": TRACEPARENT, "tracestate": "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"})
    e = echoed(r)
    assert e["h"]["traceparent"] == [TRACEPARENT]
    assert e["h"]["tracestate"] == ["congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"]
    ids = access_log_trace_ids(gw, "/open/echo", "4bf92f3577b34da6a3ce929d0e0e4736")
    assert "4bf92f3577b34da6a3ce929d0e0e4736" in ids


def test_traceparent_is_created_when_missing(gw):
    e = echoed(requests.get(gw.url + "/open/echo?created", timeout=10, headers={"tracestate": "congo=1"}))
    (sent,) = e["h"]["traceparent"]
    m = TRACEPARENT_RE.match(sent)
    assert m and m.group(1) != "0" * 32 and m.group(2) != "0" * 16, sent
    assert "tracestate" not in e["h"], "a tracestate without a valid traceparent was passed on"
    assert m.group(1) in access_log_trace_ids(gw, "/open/echo", m.group(1))
    again = echoed(requests.get(gw.url + "/open/echo", timeout=10))["h"]["traceparent"][0]
    assert again.split("-")[1] != m.group(1), "two requests got the same trace id"


@pytest.mark.parametrize("bad", [
    "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   # uppercase
    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   # zero trace id
    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   # zero parent id
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   # version ff
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  # too long for version 00
    "garbage",
])
def test_invalid_traceparent_is_replaced(gw, bad):
    e = echoed(requests.get(gw.url + "/open/echo", timeout=10,
                            headers={"traceparent": bad, "tracestate": "congo=1"}))
    (sent,) = e["h"]["traceparent"]
    assert TRACEPARENT_RE.match(sent) and sent != bad
    assert "4bf92f3577b34da6a3ce929d0e0e4736" not in sent
    assert "tracestate" not in e["h"]
