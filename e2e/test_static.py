"""The SPA from GATEHOUSE_PUBLIC_DIR and the operations endpoints (SPEC: Everything else;
Operations)."""

from __future__ import annotations

import gzip
import os
import secrets
import time
from email.utils import formatdate

import pytest
import requests

from harness import REPO, Gateway, RawConn, raw_request

INDEX = ("<!doctype html><html><head><meta charset=utf-8><title>e2e index</title>"
         "<script src=/app.js></script></head><body><h1>E2E-INDEX-MARKER</h1>"
         + "<p>filler paragraph for compression</p>\n" * 200 + "</body></html>")
APP_JS = "// e2e\n" + "console.log('gatehouse e2e static file');\n" * 500
CSS = "body { color: #123456; }\n" * 300


@pytest.fixture(scope="module")
def public_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("public")
    (d / "index.html").write_text(INDEX)
    (d / "app.js").write_text(APP_JS)
    (d / "style.css").write_text(CSS)
    (d / "data.json").write_text('{"a": 1}')
    (d / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + secrets.token_bytes(4096))
    (d / "sub").mkdir()
    (d / "sub" / "page.html").write_text("<!doctype html><p>SUB-PAGE</p>")
    return d


@pytest.fixture(scope="module")
def gw(provider, upstream, tmp_path_factory, public_dir):
    from conftest import _require_binary
    _require_binary()
    g = Gateway(provider, upstream, tmp_path_factory.mktemp("gw-static"),
                env={"GATEHOUSE_PUBLIC_DIR": str(public_dir)}, name="gateway-static")
    yield g
    g.stop()


def get(gw, path, **headers):
    headers.setdefault("Accept-Encoding", "identity")
    return requests.get(gw.url + path, headers=headers, allow_redirects=False, timeout=10)


def assert_security_headers(r, html: bool):
    # SPEC: Security headers on every response: nosniff, Referrer-Policy: no-referrer,
    # X-Frame-Options: DENY, and a Content-Security-Policy on HTML.
    assert r.headers.get("X-Content-Type-Options") == "nosniff", r.headers
    assert r.headers.get("Referrer-Policy") == "no-referrer", r.headers
    assert r.headers.get("X-Frame-Options") == "DENY", r.headers
    if html:
        assert r.headers.get("Content-Security-Policy"), r.headers


def test_root_serves_index_html(gw):
    # SPEC: Cache-Control: no-cache for HTML; CSP on HTML
    r = get(gw, "/")
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/html")
    assert "E2E-INDEX-MARKER" in r.text and r.text == INDEX
    assert "no-cache" in r.headers.get("Cache-Control", "")
    assert_security_headers(r, html=True)
    assert r.headers.get("ETag") and r.headers.get("Last-Modified")


@pytest.mark.parametrize("path,ctype,body", [
    ("/app.js", ("text/javascript", "application/javascript"), APP_JS),
    ("/style.css", ("text/css",), CSS),
    ("/data.json", ("application/json",), '{"a": 1}'),
    ("/sub/page.html", ("text/html",), "<!doctype html><p>SUB-PAGE</p>"),
])
def test_files_have_the_right_content_type(gw, path, ctype, body):
    r = get(gw, path)
    assert r.status_code == 200
    assert r.headers["Content-Type"].split(";")[0].strip() in ctype
    assert r.text == body
    assert_security_headers(r, html=path.endswith(".html"))


def test_binary_file_and_head(gw, public_dir):
    r = get(gw, "/img.png")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("image/png")
    assert r.content == (public_dir / "img.png").read_bytes()
    h = requests.head(gw.url + "/img.png", timeout=10)
    assert h.status_code == 200 and h.content == b""
    assert int(h.headers["Content-Length"]) == len(r.content)


def test_etag_and_if_none_match(gw):
    # SPEC: ETag and Last-Modified (304 on If-None-Match/If-Modified-Since)
    r = get(gw, "/app.js")
    etag = r.headers["ETag"]
    r2 = get(gw, "/app.js", **{"If-None-Match": etag})
    assert r2.status_code == 304 and r2.content == b""
    assert r2.headers.get("ETag") == etag
    r3 = get(gw, "/app.js", **{"If-None-Match": '"something-else"'})
    assert r3.status_code == 200


def test_if_modified_since(gw):
    r = get(gw, "/app.js")
    lm = r.headers["Last-Modified"]
    assert get(gw, "/app.js", **{"If-Modified-Since": lm}).status_code == 304
    past = formatdate(time.time() - 10 * 365 * 86400, usegmt=True)
    assert get(gw, "/app.js", **{"If-Modified-Since": past}).status_code == 200


def test_gzip_when_accepted(gw):
    # SPEC: gzip (Content-Encoding: gzip, Vary: Accept-Encoding) for compressible types
    with requests.get(gw.url + "/app.js", headers={"Accept-Encoding": "gzip"}, stream=True,
                      timeout=10) as r:
        raw = r.raw.read(decode_content=False)
        assert r.headers.get("Content-Encoding") == "gzip"
        assert "accept-encoding" in r.headers.get("Vary", "").lower()
    assert gzip.decompress(raw).decode() == APP_JS
    assert len(raw) < len(APP_JS)
    plain = get(gw, "/app.js")
    assert plain.headers.get("Content-Encoding") in (None, "identity")
    assert plain.text == APP_JS
    html = requests.get(gw.url + "/", headers={"Accept-Encoding": "gzip, deflate"}, timeout=10)
    assert html.headers.get("Content-Encoding") == "gzip" and html.text == INDEX


def test_gzip_not_applied_to_png(gw, public_dir):
    r = requests.get(gw.url + "/img.png", headers={"Accept-Encoding": "gzip"}, timeout=10)
    assert r.headers.get("Content-Encoding") in (None, "identity")
    assert r.content == (public_dir / "img.png").read_bytes()


def test_unknown_path_with_html_accept_gets_index(gw):
    # SPEC: an unknown path whose request accepts text/html gets index.html (client-side
    # routing: only when Accept names text/html explicitly), otherwise 404.
    r = get(gw, "/some/client/route", Accept="text/html,application/xhtml+xml,*/*;q=0.8")
    assert r.status_code == 200 and r.text == INDEX
    assert r.headers["Content-Type"].startswith("text/html")


def test_unknown_path_without_html_accept_is_404(gw):
    r = get(gw, "/some/client/route", Accept="*/*")
    assert r.status_code == 404
    assert_security_headers(r, html=False)
    r = get(gw, "/missing.js", Accept="application/json")
    assert r.status_code == 404


@pytest.mark.parametrize("target", [
    "/../../../../etc/passwd", "/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2f..%2fetc%2fpasswd",
    "/sub/../../../../etc/passwd", "/%2E%2E%2F%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", "//etc/passwd",
    "/..\\..\\..\\etc\\passwd", "/%5c..%5c..%5cetc%5cpasswd", "/....//....//etc/passwd",
    "/%252e%252e/%252e%252e/etc/passwd", "/sub/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/.%00./etc/passwd", "/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd",
])
def test_traversal_never_serves_files_outside(gw, target):
    # SPEC: paths outside the folder are never served
    for accept in ("*/*", "text/html"):
        r = raw_request(gw.port, f"GET {target} HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\n"
                                 f"Connection: close\r\n\r\n".encode())
        assert b"root:x:0:0" not in r.body and b"root:" not in r.body, target
    assert gw.proc.alive()


def test_default_public_dir_serves_the_demo_spa(gateway):
    # SPEC: Public/ (the SPA that Gatehouse serves; ships a small demo SPA)
    r = requests.get(gateway.url + "/", timeout=10)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    assert r.text == (REPO / "Public" / "index.html").read_text()


# --------------------------------------------------------------------------- operations


def test_healthz(gateway):
    # SPEC: GET /healthz (200 while the process runs)
    r = requests.get(gateway.url + "/healthz", timeout=5)
    assert r.status_code == 200
    assert r.headers.get("X-Content-Type-Options") == "nosniff"


def test_readyz(gateway):
    # SPEC: GET /readyz (200 when the database answers and the provider's metadata is loaded)
    assert requests.get(gateway.url + "/readyz", timeout=5).status_code == 200


def test_readyz_503_while_provider_unreachable(gateway_factory):
    # SPEC: ... else 503
    from harness import free_port
    port = free_port()
    gw = gateway_factory({"GATEHOUSE_ISSUER": f"http://127.0.0.1:{port}",
                          "GATEHOUSE_PROVIDER_TIMEOUT": "1s"}, register=False, wait_ready=False)
    from harness import wait_http_ok
    try:
        wait_http_ok(gw.url + "/healthz", gw.proc, 30)
    except RuntimeError:
        if gw.proc.popen.returncode == 69:
            pytest.skip("serve exits 69 when discovery is unreachable at start (allowed: exit 69)")
        raise
    r = requests.get(gw.url + "/readyz", timeout=10)
    assert r.status_code == 503


def test_metrics(gateway, provider):
    # SPEC: GET /metrics (Prometheus text format: requests by route class and status, latency
    # histograms, active sessions, logins, refreshes, upstream errors)
    from harness import login
    s = login(gateway, provider)
    gateway.get(s, "/api/hello")
    r = requests.get(gateway.url + "/metrics", timeout=5)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/plain")
    names = {line.split("{")[0].split(" ")[0] for line in r.text.splitlines()
             if line and not line.startswith("#")}
    assert any(n.startswith("gatehouse_") for n in names), r.text[:500]
    assert any(n.endswith("_bucket") for n in names), "no latency histogram"
    assert "# TYPE" in r.text
    assert s.cookies.get("gatehouse") not in r.text
