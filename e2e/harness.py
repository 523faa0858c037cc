"""Process management, the provider/upstream/gateway handles, the login helper and
a raw HTTP/1.1 client, shared by conftest.py and the tests."""

from __future__ import annotations

import atexit
import base64
import hashlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import requests

E2E_DIR = Path(__file__).resolve().parent
REPO = E2E_DIR.parent
ARTIFACTS = Path(os.environ.get("E2E_ARTIFACTS", REPO / "test-artifacts"))
PYTHON = sys.executable

CLIENT_ID = "gatehouse-e2e"
CLIENT_SECRET = "e2e-secret-" + "s" * 20
CSRF = {"X-CSRF": "1"}


def gatehouse_bin() -> Path:
    return Path(os.environ.get("GATEHOUSE_BIN", REPO / ".build" / "debug" / "gatehouse"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def safe_name(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s)[-120:]


# ---------------------------------------------------------------------------
# Managed processes
# ---------------------------------------------------------------------------

ALL_PROCS: list["Proc"] = []


def kill_all_children():
    """Last-resort cleanup (atexit / SIGTERM): the children run in their own sessions."""
    for p in ALL_PROCS:
        if p.popen is not None and p.popen.poll() is None:
            try:
                p.popen.kill()
            except OSError:
                pass


atexit.register(kill_all_children)


def _on_sigterm(signum, frame):
    kill_all_children()
    raise SystemExit(128 + signum)


try:
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _on_sigterm)
except ValueError:  # not the main thread
    pass


class Proc:
    """A child process whose stdout+stderr go to a log file under test-artifacts/."""

    def __init__(self, name: str, argv: list[str], env: dict | None = None,
                 cwd: Path | str | None = None, log_dir: Path | None = None):
        self.name = name
        self.argv = argv
        self.env = env
        self.cwd = cwd
        log_dir = Path(log_dir or ARTIFACTS / "logs")
        log_dir.mkdir(parents=True, exist_ok=True)
        n = 0
        while True:
            self.log_path = log_dir / f"{safe_name(name)}{'' if n == 0 else '.' + str(n)}.log"
            if not self.log_path.exists():
                break
            n += 1
        self.popen: subprocess.Popen | None = None
        ALL_PROCS.append(self)

    def start(self):
        self._log = open(self.log_path, "ab", buffering=0)
        self._log.write(f"=== start {time.strftime('%H:%M:%S')}: {' '.join(self.argv)}\n".encode())
        self.popen = subprocess.Popen(self.argv, env=self.env, cwd=self.cwd,
                                      stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    @property
    def pid(self):
        return self.popen.pid if self.popen else None

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal(self, sig):
        if self.alive():
            self.popen.send_signal(sig)

    def wait(self, timeout=None) -> int:
        return self.popen.wait(timeout=timeout)

    def stop(self, timeout=10.0) -> int | None:
        """SIGTERM, then SIGKILL after timeout. Returns the exit code."""
        if self.popen is None:
            return None
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=5)
        rc = self.popen.returncode
        try:
            self._log.write(f"=== exited {rc} at {time.strftime('%H:%M:%S')}\n".encode())
            self._log.close()
        except Exception:
            pass
        return rc

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""


def wait_for_port_file(path: Path, proc: Proc, timeout=20.0) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists():
            return int(path.read_text())
        if not proc.alive():
            raise RuntimeError(f"{proc.name} exited early:\n{proc.log_text()[-4000:]}")
        time.sleep(0.05)
    raise RuntimeError(f"{proc.name} did not report its port:\n{proc.log_text()[-4000:]}")


def wait_http_ok(url: str, proc: Proc | None = None, timeout=30.0, verify=True) -> requests.Response:
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        if proc is not None and not proc.alive():
            raise RuntimeError(f"{proc.name} exited with {proc.popen.returncode} before {url} "
                               f"answered:\n{proc.log_text()[-6000:]}")
        try:
            r = requests.get(url, timeout=2, verify=verify)
            if r.status_code == 200:
                return r
            last = f"status {r.status_code}"
        except requests.RequestException as e:
            last = repr(e)
        time.sleep(0.1)
    raise RuntimeError(f"{url} not 200 within {timeout}s (last: {last})"
                       + (f"\n{proc.log_text()[-6000:]}" if proc else ""))


# ---------------------------------------------------------------------------
# Provider
# ---------------------------------------------------------------------------


class Provider:
    def __init__(self, work: Path, extra_args: list[str] | None = None, name="provider"):
        self.work = Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        port_file = self.work / f"{name}.port"
        port_file.unlink(missing_ok=True)
        self.client_id = CLIENT_ID
        self.client_secret = CLIENT_SECRET
        self.proc = Proc(name, [PYTHON, str(E2E_DIR / "provider_server.py"), "--port", "0",
                                "--port-file", str(port_file),
                                "--client", f"{CLIENT_ID}:{CLIENT_SECRET}:client_secret_basic",
                                "--client", f"{CLIENT_ID}-post:{CLIENT_SECRET}:client_secret_post",
                                "--client", f"{CLIENT_ID}-public::none",
                                *(extra_args or [])],
                         env={**os.environ, "AUTHLIB_INSECURE_TRANSPORT": "1",
                              "PYTHONUNBUFFERED": "1"}).start()
        self.port = wait_for_port_file(port_file, self.proc)
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.discovery = wait_http_ok(self.issuer + "/.well-known/openid-configuration",
                                      self.proc).json()
        assert self.discovery["issuer"] == self.issuer, self.discovery

    # -- test-only API --
    def _url(self, p):
        return self.issuer + p

    def register_redirect(self, redirect_uri: str, client_id: str | None = None):
        r = requests.post(self._url("/_test/clients"), timeout=5,
                          json={"client_id": client_id or self.client_id,
                                "redirect_uris": [redirect_uri]})
        r.raise_for_status()

    def stats(self) -> dict:
        return requests.get(self._url("/_test/stats"), timeout=5).json()

    def tokens(self) -> list[dict]:
        return requests.get(self._url("/_test/tokens"), timeout=5).json()

    def introspect(self, token: str) -> dict:
        return requests.post(self._url("/_test/introspect"), data={"token": token}, timeout=5).json()

    def config(self, **kw) -> dict:
        r = requests.post(self._url("/_test/config"), json=kw, timeout=5)
        r.raise_for_status()
        return r.json()

    def reset(self):
        requests.post(self._url("/_test/reset"), timeout=5).raise_for_status()

    def refresh_count(self) -> int:
        return self.stats()["token_requests"].get("refresh_token", 0)

    def revoke_user_tokens(self, sub: str):
        requests.post(self._url(f"/users/{sub}/revoke-tokens"), timeout=5).raise_for_status()

    def logout_token(self, **claims) -> str:
        claims.setdefault("aud", self.client_id)
        r = requests.post(self._url("/_test/logout_token"), json=claims, timeout=5)
        r.raise_for_status()
        return r.json()["logout_token"]

    def stop(self):
        self.proc.stop()


# ---------------------------------------------------------------------------
# Upstream
# ---------------------------------------------------------------------------


class Upstream:
    def __init__(self, work: Path, name="upstream"):
        self.work = Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        port_file = self.work / f"{name}.port"
        port_file.unlink(missing_ok=True)
        self.proc = Proc(name, [PYTHON, str(E2E_DIR / "upstream_server.py"), "--port", "0",
                                "--port-file", str(port_file)],
                         env={**os.environ, "PYTHONUNBUFFERED": "1"}).start()
        self.port = wait_for_port_file(port_file, self.proc)
        self.url = f"http://127.0.0.1:{self.port}"
        wait_http_ok(self.url + "/__health", self.proc)

    def log(self) -> list[dict]:
        return requests.get(self.url + "/__log", timeout=5).json()

    def clear_log(self):
        requests.delete(self.url + "/__log", timeout=5)

    def stop(self):
        self.proc.stop()


# ---------------------------------------------------------------------------
# Gateway
# ---------------------------------------------------------------------------


def random_secret_key() -> str:
    return base64.b64encode(secrets.token_bytes(32)).decode()


class Gateway:
    """One `gatehouse serve` process. `restart()` keeps port, env and database."""

    def __init__(self, provider: Provider, upstream: Upstream | None, work: Path,
                 env: dict | None = None, name="gateway", register=True,
                 start=True, wait_ready=True):
        self.provider = provider
        self.upstream = upstream
        self.work = Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.db = str(self.work / "gatehouse.sqlite")
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/root"),
            "LANG": "C.UTF-8",
            "GATEHOUSE_ISSUER": provider.issuer,
            "GATEHOUSE_CLIENT_ID": provider.client_id,
            "GATEHOUSE_CLIENT_SECRET": provider.client_secret,
            "GATEHOUSE_PUBLIC_URL": self.url,
            "GATEHOUSE_LISTEN": f"127.0.0.1:{self.port}",
            "GATEHOUSE_DATABASE": self.db,
            "GATEHOUSE_SECRET_KEY": random_secret_key(),
            "GATEHOUSE_PUBLIC_DIR": str(REPO / "Public"),
            "GATEHOUSE_LOG_LEVEL": "debug",
        }
        if upstream is not None:
            self.env["GATEHOUSE_ROUTES"] = f"/api={upstream.url}"
        for k, v in (env or {}).items():
            if v is None:
                self.env.pop(k, None)
            else:
                self.env[k] = str(v).replace("{port}", str(self.port)).replace(
                    "{url}", self.url)
        self.public_url = self.env.get("GATEHOUSE_PUBLIC_URL", self.url)
        if register:
            provider.register_redirect(self.public_url + "/callback",
                                       self.env.get("GATEHOUSE_CLIENT_ID", provider.client_id))
        self.proc: Proc | None = None
        if start:
            self.start(wait_ready=wait_ready)

    @property
    def cookie_name(self) -> str:
        return self.env.get("GATEHOUSE_COOKIE_NAME", "gatehouse")

    def start(self, wait_ready=True):
        binary = gatehouse_bin()
        self.proc = Proc(self.name, [str(binary), "serve"], env=self.env, cwd=REPO).start()
        if wait_ready:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=30.0):
        # `verify`: the CA file of a gateway serving HTTPS with a test certificate.
        verify = getattr(self, "verify", True)
        wait_http_ok(self.url + "/healthz", self.proc, timeout, verify=verify)
        wait_http_ok(self.url + "/readyz", self.proc, timeout, verify=verify)

    def stop(self, timeout=30.0) -> int | None:
        return self.proc.stop(timeout) if self.proc else None

    def restart(self):
        rc = self.stop()
        self.start()
        return rc

    def cli(self, *args, env: dict | None = None, timeout=30.0) -> subprocess.CompletedProcess:
        """Run `gatehouse ARGS` with this gateway's environment (same database)."""
        e = dict(self.env)
        e.update(env or {})
        return run_cli(list(args), env=e, timeout=timeout)

    # -- HTTP helpers --
    def get(self, sess, path, csrf=True, **kw):
        headers = dict(kw.pop("headers", {}) or {})
        if csrf:
            headers.update(CSRF)
        kw.setdefault("allow_redirects", False)
        kw.setdefault("timeout", 30)
        return sess.get(self.url + path, headers=headers, **kw)

    def post(self, sess, path, csrf=True, **kw):
        headers = dict(kw.pop("headers", {}) or {})
        if csrf:
            headers.update(CSRF)
        kw.setdefault("allow_redirects", False)
        kw.setdefault("timeout", 30)
        return sess.post(self.url + path, headers=headers, **kw)

    def request(self, sess, method, path, csrf=True, **kw):
        headers = dict(kw.pop("headers", {}) or {})
        if csrf:
            headers.update(CSRF)
        kw.setdefault("allow_redirects", False)
        kw.setdefault("timeout", 30)
        return sess.request(method, self.url + path, headers=headers, **kw)

    def db_files(self) -> list[Path]:
        return [Path(self.db + suffix) for suffix in ("", "-wal", "-shm", "-journal")
                if Path(self.db + suffix).exists()]


def run_cli(args: list[str], env: dict, timeout=30.0) -> subprocess.CompletedProcess:
    log_dir = ARTIFACTS / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    cp = subprocess.run([str(gatehouse_bin()), *args], env=env, cwd=REPO,
                        capture_output=True, text=True, timeout=timeout,
                        stdin=subprocess.DEVNULL)
    with open(log_dir / "cli.log", "a") as f:
        f.write(f"=== gatehouse {' '.join(args)} -> {cp.returncode}\n--- stdout\n{cp.stdout}"
                f"\n--- stderr\n{cp.stderr}\n")
    return cp


# ---------------------------------------------------------------------------
# Login through the provider's real HTML form
# ---------------------------------------------------------------------------


class _FormParser(HTMLParser):
    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []
        self._cur = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self._cur = {"action": a.get("action"), "method": (a.get("method") or "get").lower(),
                         "inputs": [], "buttons": []}
            self.forms.append(self._cur)
        elif tag == "input" and self._cur is not None:
            self._cur["inputs"].append(a)
        elif tag == "button" and self._cur is not None:
            self._cur["buttons"].append(a)

    def handle_endtag(self, tag):
        if tag == "form":
            self._cur = None


def parse_forms(html: str) -> list[dict]:
    p = _FormParser()
    p.feed(html)
    return p.forms


@dataclass
class LoginResult:
    session: requests.Session
    login_response: requests.Response
    authorize_url: str
    callback_url: str
    callback_response: requests.Response
    cookie: str | None = None
    set_cookies: list[str] = field(default_factory=list)


def set_cookie_headers(resp: requests.Response) -> list[str]:
    try:
        return list(resp.raw.headers.getlist("Set-Cookie"))
    except AttributeError:
        v = resp.headers.get("Set-Cookie")
        return [v] if v else []


def start_login(sess: requests.Session, gw: Gateway, return_to: str | None = None,
                raw_query: str | None = None) -> tuple[requests.Response, str]:
    """GET /login; returns (response, absolute authorize URL)."""
    path = "/login"
    if raw_query is not None:
        path += "?" + raw_query
    elif return_to is not None:
        path += "?" + requests.models.RequestEncodingMixin._encode_params({"returnTo": return_to})
    r = sess.get(gw.url + path, allow_redirects=False, timeout=30)
    assert r.status_code == 302, f"/login answered {r.status_code}: {r.text[:500]}"
    loc = urljoin(gw.url + "/", r.headers["Location"])
    return r, loc


def provider_authorize(sess: requests.Session, authorize_url: str, username: str = "alice",
                       deny=False) -> str:
    """Fill in the provider's real login form; return the redirect (callback) URL it gives."""
    page = sess.get(authorize_url, allow_redirects=False, timeout=30)
    assert page.status_code == 200, f"provider authorize page {page.status_code}: {page.text[:800]}"
    forms = [f for f in parse_forms(page.text) if f["method"] == "post"]
    if deny:
        form = next(f for f in forms if any(b.get("value") == "deny" for b in f["buttons"]))
        data = {"action": "deny"}
    else:
        form = next(f for f in forms
                    if any(i.get("name") == "sub" and i.get("type") == "text" for i in f["inputs"]))
        data = {i["name"]: i.get("value", "") for i in form["inputs"]
                if i.get("name") and i.get("type") != "submit"}
        data["sub"] = username
    action = urljoin(page.url, form["action"]) if form["action"] else page.url
    r = sess.post(action, data=data, allow_redirects=False, timeout=30)
    assert r.status_code in (302, 303), f"provider form post {r.status_code}: {r.text[:800]}"
    return r.headers["Location"]


def finish_callback(sess: requests.Session, callback_url: str) -> requests.Response:
    return sess.get(callback_url, allow_redirects=False, timeout=30)


def login(gw: Gateway, provider: Provider | None = None, username: str = "alice",
          return_to: str | None = None, sess: requests.Session | None = None,
          expect_location: str | None = None) -> requests.Session:
    """Full browser-like login. Returns the session (cookie jar holds the gateway cookie);
    details in `sess.login_result`."""
    sess = sess or requests.Session()
    r, authorize_url = start_login(sess, gw, return_to)
    callback_url = provider_authorize(sess, authorize_url, username)
    assert callback_url.startswith(gw.public_url + "/callback?"), callback_url
    cb = finish_callback(sess, callback_url)
    assert cb.status_code == 302, f"/callback answered {cb.status_code}: {cb.text[:800]}"
    want = expect_location or return_to or "/"
    got = cb.headers["Location"]
    assert got in (want, gw.public_url + want), f"callback redirected to {got!r}, wanted {want!r}"
    sc = set_cookie_headers(cb)
    assert any(h.startswith(gw.cookie_name + "=") for h in sc), f"no session cookie in {sc}"
    cookie = sess.cookies.get(gw.cookie_name)
    assert cookie, "session cookie not stored by the client"
    sess.login_result = LoginResult(sess, r, authorize_url, callback_url, cb, cookie, sc)
    return sess


def query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query, keep_blank_values=True)


def q1(url: str, name: str) -> str | None:
    v = query_of(url).get(name)
    return v[0] if v else None


def b64url_sha256(s: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(s.encode()).digest()).rstrip(b"=").decode()


def jwt_claims(token: str) -> dict:
    part = token.split(".")[1]
    part += "=" * (-len(part) % 4)
    return json.loads(base64.urlsafe_b64decode(part))


def parse_cookie(header: str) -> tuple[str, str, dict[str, str]]:
    """'name=value; Path=/; HttpOnly' -> (name, value, {lower attr: value})."""
    parts = [p.strip() for p in header.split(";")]
    name, _, value = parts[0].partition("=")
    attrs = {}
    for p in parts[1:]:
        if not p:
            continue
        k, _, v = p.partition("=")
        attrs[k.strip().lower()] = v.strip()
    return name.strip(), value.strip(), attrs


# ---------------------------------------------------------------------------
# Raw HTTP/1.1
# ---------------------------------------------------------------------------


@dataclass
class RawResponse:
    status: int
    reason: str
    version: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None


class RawConn:
    """A socket with a buffered HTTP/1.1 response reader."""

    def __init__(self, port: int, host="127.0.0.1", timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""

    def send(self, data: bytes):
        self.sock.sendall(data)

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def _read_line(self) -> bytes:
        while b"\r\n" not in self.buf:
            if not self._fill():
                raise ConnectionError("closed while reading a line")
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read_n(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not self._fill():
                raise ConnectionError("closed while reading the body")
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_response(self, head_only=False, method="GET") -> RawResponse:
        line = self._read_line()
        m = re.match(rb"(HTTP/\d\.\d) (\d{3})(?: (.*))?$", line)
        if not m:
            raise ValueError(f"bad status line {line!r}")
        headers = []
        while True:
            h = self._read_line()
            if h == b"":
                break
            k, _, v = h.partition(b":")
            headers.append((k.decode("latin-1").strip(), v.decode("latin-1").strip()))
        resp = RawResponse(int(m.group(2)), (m.group(3) or b"").decode("latin-1"),
                           m.group(1).decode(), headers, b"")
        if head_only or method == "HEAD" or resp.status in (204, 304) or resp.status < 200:
            return resp
        te = (resp.header("Transfer-Encoding") or "").lower()
        cl = resp.header("Content-Length")
        if "chunked" in te:
            body = b""
            while True:
                size = int(self._read_line().split(b";")[0], 16)
                if size == 0:
                    while self._read_line() != b"":
                        pass
                    break
                body += self._read_n(size)
                self._read_line()
            resp.body = body
        elif cl is not None:
            resp.body = self._read_n(int(cl))
        else:
            while self._fill():
                pass
            resp.body, self.buf = self.buf, b""
        return resp

    def is_closed(self, wait=2.0) -> bool:
        """True when the peer closed the connection (EOF or reset) within `wait` seconds."""
        self.sock.settimeout(wait)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
                self.buf += chunk
        except socket.timeout:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True
        except OSError:
            return True

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


def raw_request(port: int, data: bytes, timeout=10.0) -> RawResponse:
    with RawConn(port, timeout=timeout) as c:
        c.send(data)
        return c.read_response()
