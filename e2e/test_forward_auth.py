"""Forward-auth: `/auth` asked by an ingress that forwards requests itself (SPEC "Behind the ingress
you already run"). First `/auth` on its own, as each ingress asks it; then Debian's nginx
(`auth_request`) and Caddy (`forward_auth`) in front of the test upstream, on the same origin as
`/login` and `/callback`, with a real login through each."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urljoin

import pytest
import requests

import harness
from harness import ARTIFACTS, Proc, free_port, login, provider_authorize, wait_http_ok

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
CADDY = shutil.which("caddy") or "/usr/bin/caddy"


@pytest.fixture(scope="module")
def gw(provider, upstream, tmp_path_factory):
    g = harness.Gateway(provider, upstream, tmp_path_factory.mktemp("fwd"), name="gateway-forward-auth")
    yield g
    g.stop()


def auth(gw, sess, query="", **headers):
    return sess.get(gw.url + "/auth" + (("?" + query) if query else ""), headers=headers,
                    allow_redirects=False, timeout=30)


# ---------------------------------------------------------------------------
# /auth on its own
# ---------------------------------------------------------------------------


def test_signed_out_is_401_json_and_a_navigation_through_traefik_or_caddy_is_sent_to_login(gw):
    s = requests.Session()
    r = auth(gw, s, **{"X-Forwarded-Method": "GET", "X-Forwarded-Uri": "/app/page?x=1"})
    assert r.status_code == 401 and r.json()["error"] == "unauthenticated"
    assert r.headers["Cache-Control"] == "no-store"
    # a top-level navigation through Traefik or Caddy: to the login, coming back to the page
    r = auth(gw, s, **{"X-Forwarded-Method": "GET", "X-Forwarded-Uri": "/app/page?x=1",
                       "Sec-Fetch-Mode": "navigate", "Accept": "text/html"})
    assert r.status_code == 302
    assert r.headers["Location"] == gw.public_url + "/login?returnTo=%2Fapp%2Fpage%3Fx%3D1"
    r = auth(gw, s, **{"X-Forwarded-Method": "GET", "X-Forwarded-Uri": "/app/", "Accept": "text/html,*/*"})
    assert r.status_code == 302 and r.headers["Location"].endswith("/login?returnTo=%2Fapp%2F")
    # a page that /login would refuse as returnTo: the login without one
    r = auth(gw, s, **{"X-Forwarded-Method": "GET", "X-Forwarded-Uri": "//evil.example/x", "Accept": "text/html"})
    assert r.status_code == 302 and r.headers["Location"] == gw.public_url + "/login"
    # nginx's auth_request takes only 2xx, 401 and 403: a navigation there is 401 too
    r = auth(gw, s, **{"X-Original-Method": "GET", "X-Original-URI": "/app/page", "Sec-Fetch-Mode": "navigate"})
    assert r.status_code == 401
    # a POST navigation is never redirected (the form would be lost)
    r = auth(gw, s, **{"X-Forwarded-Method": "POST", "X-Forwarded-Uri": "/app/form", "Accept": "text/html",
                       "X-CSRF": "1"})
    assert r.status_code == 401


def test_signed_in_gets_200_with_identity_headers_and_only_asked_for_tokens(gw, provider):
    s = login(gw, provider, "alice")
    r = auth(gw, s, **{"X-Forwarded-Method": "GET", "X-Forwarded-Uri": "/app/x"})
    assert r.status_code == 200, r.text
    assert r.headers["X-Forwarded-User"] == "alice"
    assert r.headers["X-Forwarded-Provider"]
    assert "Authorization" not in r.headers and "Gatehouse-Assertion" not in r.headers
    assert r.headers["Cache-Control"] == "no-store"
    # token=access: the session's access token, as routes send it
    r = auth(gw, s, "token=access", **{"X-Original-Method": "GET", "X-Original-URI": "/app/x"})
    assert r.status_code == 200
    bearer = r.headers["Authorization"]
    assert bearer.startswith("Bearer ") and provider.introspect(bearer[7:])["active"] is True
    # identity=assertion: the signed assertion beside the headers, for the audience asked
    r = auth(gw, s, "identity=assertion&audience=https://app.example", **{"X-Forwarded-Uri": "/app/x"})
    assert r.status_code == 200 and r.headers["X-Forwarded-User"] == "alice"
    claims = harness.jwt_claims(r.headers["Gatehouse-Assertion"])
    assert claims["sub"] == "alice" and claims["aud"] == "https://app.example"
    # the answer carries no cookie, token or code in a body
    assert r.content == b""


def test_allow_rule_refuses_with_403_and_admits_who_it_names(gw, provider):
    alice = login(gw, provider, "alice")
    bob = login(gw, provider, "bob")
    assert auth(gw, alice, "allow=sub:alice", **{"X-Forwarded-Uri": "/app"}).status_code == 200
    r = auth(gw, bob, "allow=sub:alice", **{"X-Forwarded-Uri": "/app", "Accept": "text/html"})
    assert r.status_code == 403 and r.json()["error"] == "forbidden"
    # a rule's terms joined by +, written unescaped in the ingress's configuration
    assert auth(gw, alice, "allow=sub:alice|bob+provider:default").status_code == 200
    assert auth(gw, bob, "allow=sub:alice%7Cbob").status_code == 200


def test_unsafe_original_method_needs_the_csrf_header(gw, provider):
    s = login(gw, provider, "alice")
    for headers in ({"X-Forwarded-Method": "POST", "X-Forwarded-Uri": "/app/x"},
                    {"X-Original-Method": "DELETE", "X-Original-URI": "/app/x"}):
        r = auth(gw, s, **headers)
        assert r.status_code == 401 and r.json()["error"] == "csrf_header_missing"
        assert auth(gw, s, **headers, **{"X-CSRF": "1"}).status_code == 200
    # nginx asks with the original method itself (a subrequest inherits it)
    r = s.post(gw.url + "/auth", headers={"X-Original-URI": "/app/x"}, allow_redirects=False, timeout=30)
    assert r.status_code == 401 and r.json()["error"] == "csrf_header_missing"
    # without a method field, the request's own method is the original one
    assert s.get(gw.url + "/auth", allow_redirects=False, timeout=30).status_code == 200


def test_bad_queries_are_400_and_a_forged_cookie_is_401(gw):
    s = requests.Session()
    for query in ("allow=nope", "identity=cookies", "token=refresh", "frobnicate=1", "token=access&token=none",
                  "allow=sub:a;auth=none", "audience=x"):
        r = auth(gw, s, query)
        assert r.status_code == 400 and r.json()["error"] == "invalid_auth_query", (query, r.text)
    s.cookies.set(gw.cookie_name, "forged-value-that-is-not-a-session")
    assert auth(gw, s).status_code == 401


def test_a_logged_out_session_is_401(gw, provider):
    s = login(gw, provider, "alice")
    assert gw.post(s, "/logout").status_code in (200, 204, 302)
    s.cookies.set(gw.cookie_name, s.login_result.cookie)
    r = auth(gw, s, **{"X-Forwarded-Uri": "/app"})
    assert r.status_code == 401


# ---------------------------------------------------------------------------
# Real ingresses in front
# ---------------------------------------------------------------------------

NGINX_CONF = """
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {work}/access.log;
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location = /_gatehouse_auth {{
            internal;
            proxy_pass http://127.0.0.1:{gw}/auth?token=access&allow=sub:alice|bob;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-URI $request_uri;
            proxy_set_header X-Original-Method $request_method;
        }}
        location /app/ {{
            auth_request /_gatehouse_auth;
            auth_request_set $gh_user $upstream_http_x_forwarded_user;
            auth_request_set $gh_email $upstream_http_x_forwarded_email;
            auth_request_set $gh_token $upstream_http_authorization;
            proxy_set_header X-Forwarded-User $gh_user;
            proxy_set_header X-Forwarded-Email $gh_email;
            proxy_set_header Authorization $gh_token;
            error_page 401 = @signin;
            proxy_pass http://127.0.0.1:{up};
        }}
        location @signin {{
            return 302 /login?returnTo=$request_uri;
        }}
        location / {{
            proxy_pass http://127.0.0.1:{gw};
            proxy_set_header Host $http_host;
        }}
    }}
}}
"""

CADDYFILE = """
{{
    admin off
    auto_https off
    storage file_system {work}/data
}}
http://127.0.0.1:{port} {{
    handle /app/* {{
        forward_auth 127.0.0.1:{gw} {{
            uri /auth?token=access
            copy_headers X-Forwarded-User X-Forwarded-Email Authorization
        }}
        reverse_proxy 127.0.0.1:{up}
    }}
    handle {{
        reverse_proxy 127.0.0.1:{gw}
    }}
}}
"""


class Ingress:
    def __init__(self, kind, provider, upstream, work: Path):
        self.work = Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # The gateway's public URL is the ingress's: /login and /callback are on the app's origin.
        self.gw = harness.Gateway(provider, None, self.work / "gateway", name=f"gateway-behind-{kind}",
                                  env={"GATEHOUSE_PUBLIC_URL": self.url})
        gw_port, up_port = self.gw.port, upstream.port
        if kind == "nginx":
            if not Path(NGINX).exists():
                pytest.skip("nginx missing: run e2e/setup.sh")
            conf = self.work / "nginx.conf"
            conf.write_text(NGINX_CONF.format(work=self.work, port=self.port, gw=gw_port, up=up_port))
            argv = [NGINX, "-e", "stderr", "-p", str(self.work), "-c", str(conf), "-g", "daemon off;"]
            env = None
        else:
            if not Path(CADDY).exists():
                pytest.skip("caddy missing: run e2e/setup.sh")
            conf = self.work / "Caddyfile"
            conf.write_text(CADDYFILE.format(work=self.work, port=self.port, gw=gw_port, up=up_port))
            argv = [CADDY, "run", "--config", str(conf), "--adapter", "caddyfile"]
            env = {"PATH": "/usr/bin:/bin", "HOME": str(self.work), "XDG_DATA_HOME": str(self.work / "data"),
                   "XDG_CONFIG_HOME": str(self.work / "config")}
        self.proc = Proc(f"ingress-{kind}", argv, env=env).start()
        wait_http_ok(self.url + "/healthz", self.proc)
        # what harness.login needs of a gateway
        self.public_url = self.url
        self.cookie_name = self.gw.cookie_name

    def stop(self):
        self.proc.stop()
        self.gw.stop()
        log = self.work / "error.log"
        if log.exists():
            (ARTIFACTS / "logs").mkdir(parents=True, exist_ok=True)
            shutil.copy(log, ARTIFACTS / "logs" / "ingress-nginx-auth-error.log")


@pytest.fixture(params=["nginx", "caddy"])
def ingress(request, provider, upstream, tmp_path):
    i = Ingress(request.param, provider, upstream, tmp_path / request.param)
    yield i
    i.stop()


def seen_by_upstream(upstream, path):
    return [e for e in upstream.log() if e["target"].startswith(path)]


def test_ingress_forwards_only_signed_in_calls_with_identity_and_token(ingress, provider, upstream):
    kind = "nginx" if "nginx" in ingress.proc.name else "caddy"
    upstream.clear_log()
    anon = requests.Session()
    # signed out: an API call is refused by the ingress itself, nothing reaches the upstream
    r = anon.get(ingress.url + f"/app/{kind}-anon", allow_redirects=False, timeout=30)
    if kind == "nginx":
        assert r.status_code == 302 and r.headers["Location"].endswith(f"/login?returnTo=/app/{kind}-anon")
    else:
        assert r.status_code == 401 and r.json()["error"] == "unauthenticated"
    assert seen_by_upstream(upstream, f"/app/{kind}-anon") == []
    # a forged identity header from the browser is replaced, not passed
    s = login(ingress, provider, "alice")
    r = s.get(ingress.url + f"/app/{kind}-call", headers={"X-Forwarded-User": "admin"}, timeout=30)
    assert r.status_code == 200, r.text
    calls = seen_by_upstream(upstream, f"/app/{kind}-call")
    assert len(calls) == 1
    fields = {}
    for name, value in calls[0]["headers"]:
        fields.setdefault(name.lower(), []).append(value)
    assert fields["x-forwarded-user"] == ["alice"]
    assert fields["authorization"][0].startswith("Bearer ")
    assert provider.introspect(fields["authorization"][0][7:])["active"] is True


def test_ingress_sends_a_signed_out_browser_to_login_and_back(ingress, provider, upstream):
    s = requests.Session()
    page = ingress.url + "/app/page"
    r = s.get(page, headers={"Accept": "text/html", "Sec-Fetch-Mode": "navigate"}, allow_redirects=False, timeout=30)
    assert r.status_code == 302, r.text
    login_url = urljoin(page, r.headers["Location"])
    assert login_url.startswith(ingress.url + "/login?returnTo=")
    r = s.get(login_url, allow_redirects=False, timeout=30)
    assert r.status_code == 302
    callback = provider_authorize(s, urljoin(login_url, r.headers["Location"]), "bob")
    assert callback.startswith(ingress.url + "/callback?")
    r = s.get(callback, allow_redirects=False, timeout=30)
    assert r.status_code == 302 and urljoin(callback, r.headers["Location"]) == page
    upstream.clear_log()
    r = s.get(page, headers={"Accept": "text/html"}, timeout=30)
    assert r.status_code == 200
    user = [v for n, v in seen_by_upstream(upstream, "/app/page")[0]["headers"] if n.lower() == "x-forwarded-user"]
    assert user == ["bob"]
