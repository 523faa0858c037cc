"""An SPA on another origin than the gateway (SPEC "Behind the ingress you already run"):
`GATEHOUSE_CORS_ORIGINS` (preflights, CORS fields, `returnTo` on a listed origin; in Chromium,
examples/cross-origin-spa signing in and calling the API from a second origin) and
`GATEHOUSE_COOKIE_DOMAIN` (the session cookie shared with a domain's hosts)."""

from __future__ import annotations

import http.server
import threading
from functools import partial
from urllib.parse import urlsplit

import pytest
import requests

import harness
from harness import REPO, free_port, login, provider_authorize, set_cookie_headers

CORS_FIELDS = ("access-control-allow-origin", "access-control-allow-credentials", "access-control-allow-methods",
               "access-control-allow-headers")


@pytest.fixture(scope="module")
def app_origin():
    """A second origin on the same host (so same-site: the Strict cookie goes with the calls)."""
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture(scope="module")
def gw(provider, upstream, app_origin, tmp_path_factory):
    g = harness.Gateway(provider, upstream, tmp_path_factory.mktemp("cors"), name="gateway-cors",
                        env={"GATEHOUSE_CORS_ORIGINS": f"{app_origin}, https://app.example.com",
                             "GATEHOUSE_ROUTES": f"/api={upstream.url},/ws={upstream.url}"})
    yield g
    g.stop()


def preflight(gw, path, origin, method="GET", headers="x-csrf"):
    return requests.options(gw.url + path, headers={"Origin": origin, "Access-Control-Request-Method": method,
                                                    "Access-Control-Request-Headers": headers}, timeout=30)


def test_preflight_from_a_listed_origin_is_204_with_exact_fields(gw, app_origin, upstream):
    upstream.clear_log()
    for path, methods in (("/api/hello", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"), ("/user", "GET"),
                          ("/logout", "GET, POST"), ("/sessions", "GET"), ("/sessions/revoke", "POST")):
        r = preflight(gw, path, app_origin, headers="x-csrf, content-type, x-request-id")
        assert r.status_code == 204, (path, r.text)
        assert r.headers["Access-Control-Allow-Origin"] == app_origin
        assert r.headers["Access-Control-Allow-Credentials"] == "true"
        assert r.headers["Access-Control-Allow-Methods"] == methods
        allowed = [h.strip().lower() for h in r.headers["Access-Control-Allow-Headers"].split(",")]
        assert "x-csrf" in allowed and "content-type" in allowed and "x-request-id" in allowed
        assert "Origin" in r.headers["Vary"]
    # answered by the gateway: no preflight reached the upstream
    assert [e for e in upstream.log() if e["method"] == "OPTIONS"] == []


def test_other_origins_get_no_cors_field(gw, app_origin):
    for origin in ("https://evil.example", "null", app_origin + ".evil.example", app_origin.replace("http:", "https:"),
                   "http://127.0.0.1"):
        r = preflight(gw, "/api/hello", origin)
        assert r.status_code == 403 and r.json()["error"] == "origin_not_allowed"
        assert not any(f in (k.lower() for k in r.headers) for f in CORS_FIELDS), (origin, r.headers)
        r = requests.get(gw.url + "/user", headers={"Origin": origin, "X-CSRF": "1"}, timeout=30)
        assert r.status_code == 401
        assert "access-control-allow-origin" not in (k.lower() for k in r.headers)
    # and without an Origin (same-origin pages) nothing changes
    r = requests.get(gw.url + "/user", headers={"X-CSRF": "1"}, timeout=30)
    assert r.status_code == 401 and "Access-Control-Allow-Origin" not in r.headers


def test_answers_to_a_listed_origin_carry_origin_and_credentials(gw, provider, app_origin):
    s = login(gw, provider, "alice")
    for path in ("/user", "/api/hello", "/api/hello?again=1", "/sessions"):
        r = gw.get(s, path, headers={"Origin": app_origin})
        assert r.status_code == 200, (path, r.text)
        assert r.headers["Access-Control-Allow-Origin"] == app_origin
        assert r.headers["Access-Control-Allow-Credentials"] == "true"
        assert "Origin" in r.headers["Vary"]
    # exactly one Access-Control-Allow-Origin on a relayed answer (an upstream's own gives way:
    # CrossOriginAnswersTests)
    r = gw.get(s, "/api/echo", headers={"Origin": app_origin})
    assert r.raw.headers.getlist("Access-Control-Allow-Origin") == [app_origin]
    # refusals carry them too, so the page can read the 401
    r = gw.get(requests.Session(), "/api/hello", headers={"Origin": app_origin})
    assert r.status_code == 401 and r.headers["Access-Control-Allow-Origin"] == app_origin
    # the CSRF rule still holds for a listed origin
    r = gw.get(s, "/api/hello", csrf=False, headers={"Origin": app_origin})
    assert r.status_code == 401 and r.json()["error"] == "csrf_header_missing"


def test_return_to_may_be_a_page_of_a_listed_origin_only(gw, provider, app_origin):
    s = requests.Session()
    back = app_origin + "/index.html"
    r, authorize = harness.start_login(s, gw, return_to=back)
    callback = provider_authorize(s, authorize, "alice")
    r = s.get(callback, allow_redirects=False, timeout=30)
    assert r.status_code == 302 and r.headers["Location"] == back
    for bad in ("https://evil.example/", app_origin + "//evil.example/", "https://APP.example.com/",
                "https://app.example.com:443/", "https://user@app.example.com/", app_origin + "\\@evil.example"):
        r = s.get(gw.url + "/login", params={"returnTo": bad}, allow_redirects=False, timeout=30)
        assert r.status_code == 400, bad


def test_websocket_from_a_listed_origin_passes_the_origin_check(gw, app_origin):
    # The handshake is refused before any upstream is asked when the origin is foreign (403), and
    # goes on to the session check (401 here, signed out) from a listed origin.
    ws = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
          "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    r = requests.get(gw.url + "/ws/echo", headers={**ws, "Origin": "https://evil.example"}, timeout=30)
    assert r.status_code == 403 and r.json()["error"] == "origin_not_allowed"
    r = requests.get(gw.url + "/ws/echo", headers={**ws, "Origin": app_origin}, timeout=30)
    assert r.status_code == 401


def test_bad_cors_origins_stop_start_up(gw):
    for value, words in (("*", "wildcard"), ("null", "opaque"), ("https://app.example.com/path", "not an origin"),
                         ("http://app.example.com", "plain http"), (gw.public_url, "own origin")):
        r = gw.cli("check", env={"GATEHOUSE_CORS_ORIGINS": value})
        assert r.returncode == 64, (value, r.stdout, r.stderr)
        assert "GATEHOUSE_CORS_ORIGINS" in r.stderr and words in r.stderr, r.stderr


@pytest.mark.browser
def test_spa_on_a_second_origin_signs_in_and_calls_the_api_in_chromium(gw, provider, app_origin, tmp_path):
    from browser import By, WebDriverWait, click_when_ready, make_driver
    site = tmp_path / "site"
    site.mkdir()
    page = (REPO / "examples" / "cross-origin-spa" / "index.html").read_text()
    (site / "index.html").write_text(page.replace("https://bff.example.com", gw.url))
    port = int(urlsplit(app_origin).port)
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    d = make_driver()
    try:
        wait = WebDriverWait(d, 20)
        d.get(app_origin + "/index.html")
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-state") == "signed-out")
        click_when_ready(d, "#signin")
        wait.until(lambda d: d.current_url.startswith(provider.issuer + "/oauth2/authorize"))
        box = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "input[name=sub]"))
        box.send_keys("alice")
        box.find_element(By.XPATH, "./ancestor::form//button[@type='submit']").click()
        # back on the second origin, signed in through the gateway's cookie
        wait.until(lambda d: d.current_url.startswith(app_origin + "/index.html"))
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-state") == "signed-in")
        assert "alice" in d.find_element(By.ID, "status").text
        click_when_ready(d, "#call-api")
        wait.until(lambda d: d.find_element(By.ID, "result").text.startswith("200"))
        assert "world" in d.find_element(By.ID, "result").text
        # the page cannot read the session cookie: it is the gateway's, HttpOnly
        assert d.execute_script("return document.cookie") == ""
    finally:
        d.quit()
        server.shutdown()


def test_cookie_domain_shares_the_session_cookie(provider, upstream, tmp_path):
    public = "https://bff.example.test"
    g = harness.Gateway(provider, upstream, tmp_path / "gw", name="gateway-cookie-domain",
                        env={"GATEHOUSE_PUBLIC_URL": public, "GATEHOUSE_COOKIE_DOMAIN": "example.test"})
    try:
        s = requests.Session()
        started, authorize = harness.start_login(s, g)
        binding = next(c for c in set_cookie_headers(started) if "-login=" in c)
        assert "Domain=" not in binding  # the login-binding cookie stays host-only
        callback = provider_authorize(s, authorize, "alice")
        assert callback.startswith(public + "/callback?")
        parts = urlsplit(callback)
        # the cookie is Secure: requests keeps it from this plain-http hop, so it is sent by hand
        r = requests.get(g.url + parts.path + "?" + parts.query, headers={"Cookie": binding.split(";")[0]},
                         allow_redirects=False, timeout=30)
        assert r.status_code == 302, r.text
        cookie = next(c for c in set_cookie_headers(r) if c.startswith("__Secure-gatehouse="))
        attributes = [a.strip() for a in cookie.split(";")]
        assert "Domain=example.test" in attributes and "Secure" in attributes and "HttpOnly" in attributes
        value = attributes[0].split("=", 1)[1]
        r = requests.get(g.url + "/user", headers={"Cookie": f"__Secure-gatehouse={value}", "X-CSRF": "1"}, timeout=30)
        assert r.status_code == 200 and r.json()["sub"] == "alice"
        # a name that cannot carry a Domain, and a domain the public host is not under, stop start-up
        for env, words in (({"GATEHOUSE_COOKIE_NAME": "__Host-gh"}, "__Host-"),
                           ({"GATEHOUSE_COOKIE_DOMAIN": "other.test"}, "does not contain"),
                           ({"GATEHOUSE_COOKIE_DOMAIN": "test"}, "single label"),
                           ({"GATEHOUSE_COOKIE_NAME": "gh"}, "__Secure-")):
            r = g.cli("check", env=env)
            assert r.returncode == 64 and words in r.stderr, (env, r.stderr)
    finally:
        g.stop()
