"""The `gatehouse` command line (SPEC: Command line; Configuration; Operations)."""

from __future__ import annotations

import base64
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import requests

from harness import free_port, login, random_secret_key, run_cli


def base_env(provider, tmp_path, **over):
    port = free_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "GATEHOUSE_ISSUER": provider.issuer,
        "GATEHOUSE_CLIENT_ID": provider.client_id,
        "GATEHOUSE_CLIENT_SECRET": provider.client_secret,
        "GATEHOUSE_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "GATEHOUSE_LISTEN": f"127.0.0.1:{port}",
        "GATEHOUSE_DATABASE": str(tmp_path / "cli.sqlite"),
        "GATEHOUSE_SECRET_KEY": random_secret_key(),
        "GATEHOUSE_PROVIDER_TIMEOUT": "2s",
    }
    for k, v in over.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


@pytest.fixture(autouse=True)
def _binary():
    from conftest import _require_binary
    _require_binary()


def test_keygen_prints_32_random_bytes_base64(tmp_path):
    # SPEC: gatehouse keygen: print a fresh random value for GATEHOUSE_SECRET_KEY
    # (base64 of 32 random bytes)
    a = run_cli(["keygen"], env={"PATH": "/usr/bin:/bin"})
    b = run_cli(["keygen"], env={"PATH": "/usr/bin:/bin"})
    assert a.returncode == 0 and b.returncode == 0
    ka, kb = a.stdout.strip(), b.stdout.strip()
    assert len(base64.b64decode(ka, validate=True)) == 32
    assert ka != kb


def test_keygen_output_is_accepted_by_serve(provider, tmp_path, gateway_factory):
    key = run_cli(["keygen"], env={"PATH": "/usr/bin:/bin"}).stdout.strip()
    gw = gateway_factory({"GATEHOUSE_SECRET_KEY": key})
    assert requests.get(gw.url + "/readyz", timeout=5).status_code == 200


@pytest.mark.parametrize("var", ["GATEHOUSE_ISSUER", "GATEHOUSE_CLIENT_ID", "GATEHOUSE_SECRET_KEY"])
def test_serve_missing_required_variable_exits_64(provider, tmp_path, var):
    # SPEC: Invalid configuration stops the process at start with exit 64 and a message
    # naming the variable.
    cp = run_cli(["serve"], env=base_env(provider, tmp_path, **{var: None}), timeout=10)
    assert cp.returncode == 64, cp
    assert var in cp.stdout + cp.stderr


@pytest.mark.parametrize("var,value", [
    ("GATEHOUSE_SESSION_IDLE", "abc"), ("GATEHOUSE_SESSION_LIFETIME", "-5m"),
    ("GATEHOUSE_UPSTREAM_TIMEOUT", "10 parsecs"), ("GATEHOUSE_MAX_BODY", "lots"),
    ("GATEHOUSE_COOKIE_SAMESITE", "None"), ("GATEHOUSE_CLIENT_AUTH_METHOD", "private_key_jwt"),
    ("GATEHOUSE_SECRET_KEY", "dG9vc2hvcnQ="), ("GATEHOUSE_ISSUER", "http://idp.example.com"),
    ("GATEHOUSE_ROUTES", "api-without-slash"), ("GATEHOUSE_LISTEN", "127.0.0.1:notaport"),
    ("GATEHOUSE_CPU_AFFINITY", "on"),
])
def test_serve_invalid_value_exits_64_naming_it(provider, tmp_path, var, value):
    # SPEC: exit 64 bad usage or configuration (the message names the variable and what is wrong)
    cp = run_cli(["serve"], env=base_env(provider, tmp_path, **{var: value}), timeout=10)
    assert cp.returncode == 64, cp
    assert var in cp.stdout + cp.stderr


def test_unknown_command_exits_64(tmp_path):
    cp = run_cli(["frobnicate"], env={"PATH": "/usr/bin:/bin"})
    assert cp.returncode == 64


def test_check_ok(provider, tmp_path):
    # SPEC: gatehouse check: validate the configuration and reach the provider's discovery
    cp = run_cli(["check"], env=base_env(provider, tmp_path), timeout=30)
    assert cp.returncode == 0, cp


def test_check_names_a_missing_public_dir_and_where_it_looked(provider, tmp_path):
    env = base_env(provider, tmp_path, GATEHOUSE_PUBLIC_DIR="no-such-folder")
    cp = run_cli(["check"], env=env, timeout=30)
    line = next((l for l in cp.stdout.splitlines() if "public dir" in l), "")
    assert line.startswith("warn") and "no-such-folder" in line and "relative to" in line, cp.stdout[-800:]


def test_check_unreachable_issuer_exits_69(provider, tmp_path):
    # SPEC: 69 a required service (provider discovery, database) unavailable
    env = base_env(provider, tmp_path, GATEHOUSE_ISSUER=f"http://127.0.0.1:{free_port()}")
    t0 = time.time()
    cp = run_cli(["check"], env=env, timeout=60)
    assert cp.returncode == 69, cp
    assert time.time() - t0 < 30


def test_serve_on_a_port_another_gateway_listens_on_exits_69(gateway_factory, provider, tmp_path):
    # SPEC: 69 a required service unavailable; a second serve on a port in use (a stale instance,
    # a second deployment) must not join the first through SO_REUSEPORT and take part of its traffic.
    first = gateway_factory()
    env = base_env(provider, tmp_path, GATEHOUSE_LISTEN=f"127.0.0.1:{first.port}",
                   GATEHOUSE_PUBLIC_URL=first.url)
    cp = run_cli(["serve"], env=env, timeout=30)
    assert cp.returncode == 69, cp
    assert "cannot listen" in cp.stdout + cp.stderr
    assert f"127.0.0.1:{first.port}" in cp.stdout + cp.stderr
    for _ in range(20):  # the first one still answers every connection
        assert requests.get(first.url + "/healthz", timeout=5).status_code == 200


def _cpus_allowed(status_path: Path) -> str:
    for line in status_path.read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no Cpus_allowed_list in {status_path}")


def _event_loop_cpus(pid: int) -> dict[str, str]:
    """The CPUs each of the gateway's event-loop threads may run on, by thread name."""
    loops = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        name = (task / "comm").read_text().strip()
        if name.startswith("gatehouse-loop"):
            loops[name] = _cpus_allowed(task / "status")
    return loops


@pytest.mark.parametrize("setting", [None, "off"])
def test_event_loops_kept_one_per_cpu_unless_affinity_is_off(gateway_factory, setting):
    # SPEC: GATEHOUSE_CPU_AFFINITY auto (default): one event loop per CPU the process may use, each
    # kept on its own CPU; off: the scheduler places them.
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("one CPU: there is nothing to place")
    gw = gateway_factory({"GATEHOUSE_CPU_AFFINITY": setting})
    assert requests.get(gw.url + "/healthz", timeout=5).status_code == 200
    loops = _event_loop_cpus(gw.proc.pid)
    assert sorted(loops) == [f"gatehouse-loop{i}" for i in range(len(allowed))], loops
    if setting is None:
        assert sorted(int(cpus) for cpus in loops.values()) == allowed, loops
    else:
        whole = _cpus_allowed(Path(f"/proc/{gw.proc.pid}/status"))
        assert set(loops.values()) == {whole}, loops


def test_migrate(provider, tmp_path):
    # SPEC: gatehouse migrate: apply pending Migrations/*.sql and exit
    env = base_env(provider, tmp_path)
    cp = run_cli(["migrate"], env=env)
    assert cp.returncode == 0, cp
    assert (tmp_path / "cli.sqlite").exists()
    again = run_cli(["migrate"], env=env)
    assert again.returncode == 0, again


def test_sessions_list_shows_sub_but_no_token(gateway_factory, provider):
    # SPEC: gatehouse sessions list ... (no tokens are printed)
    gw = gateway_factory()
    n = len(provider.tokens())
    s = login(gw, provider, "alice")
    login(gw, provider, "bob")
    cp = gw.cli("sessions", "list")
    assert cp.returncode == 0, cp
    out = cp.stdout + cp.stderr
    assert "alice" in out and "bob" in out
    assert s.cookies.get("gatehouse") not in out
    for t in provider.tokens()[n:]:
        assert t["token"] not in out, f"{t['kind']} printed by sessions list"


def test_sessions_revoke_by_sub_takes_effect_on_running_gateway(gateway_factory, provider):
    # SPEC: gatehouse sessions revoke --sub SUB
    gw = gateway_factory()
    alice = login(gw, provider, "alice")
    bob = login(gw, provider, "bob")
    cp = gw.cli("sessions", "revoke", "--sub", "alice")
    assert cp.returncode == 0, cp
    deadline = time.time() + 1.5
    while time.time() < deadline and gw.get(alice, "/user").status_code != 401:
        time.sleep(0.1)
    assert gw.get(alice, "/user").status_code == 401
    assert gw.get(alice, "/api/hello").status_code == 401
    assert gw.get(bob, "/user").status_code == 200


def test_sessions_revoke_by_id(gateway_factory, provider):
    # SPEC: gatehouse sessions revoke ID (the id as `sessions list` shows it)
    gw = gateway_factory()
    alice = login(gw, provider, "alice")
    listing = gw.cli("sessions", "list").stdout
    line = next(l for l in listing.splitlines() if "alice" in l)
    candidates = [w.strip(",;|") for w in line.split() if len(w.strip(",;|")) >= 8
                  and "alice" not in w]
    ok = False
    for c in candidates:
        if gw.cli("sessions", "revoke", c).returncode == 0:
            ok = True
            break
    assert ok, f"no id from {line!r} accepted by `sessions revoke ID`"
    time.sleep(1.2)
    assert gw.get(alice, "/user").status_code == 401


def test_sessions_purge(gateway_factory, provider):
    # SPEC: gatehouse sessions purge
    gw = gateway_factory()
    s = login(gw, provider)
    cp = gw.cli("sessions", "purge")
    assert cp.returncode == 0, cp
    assert gw.get(s, "/user").status_code in (200, 401)


def test_sigterm_lets_in_flight_request_finish(gateway_factory, provider):
    # SPEC: SIGTERM/SIGINT: stop accepting, let in-flight requests finish (up to 25 s),
    # close the database, exit 0.
    gw = gateway_factory()
    s = login(gw, provider)
    result = {}

    def slow():
        try:
            result["r"] = gw.get(s, "/api/slow?ms=2500", timeout=30)
        except Exception as e:  # noqa: BLE001
            result["e"] = e

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.7)
    gw.proc.signal(signal.SIGTERM)
    time.sleep(0.3)
    # stopped accepting: a new connection is refused or not answered with success
    try:
        r = requests.get(gw.url + "/healthz", timeout=2)
        refused = r.status_code != 200 or r.headers.get("Connection", "").lower() == "close"
    except requests.RequestException:
        refused = True
    t.join(30)
    assert "e" not in result, result.get("e")
    assert result["r"].status_code == 200 and result["r"].json() == {"slept_ms": 2500}
    rc = gw.proc.wait(timeout=30)
    assert rc == 0
    assert refused, "a new request was served normally after SIGTERM"


def test_sigint_exits_0(gateway_factory):
    gw = gateway_factory()
    gw.proc.signal(signal.SIGINT)
    assert gw.proc.wait(timeout=30) == 0


def test_demo_prints_a_working_url(tmp_path):
    # SPEC: gatehouse demo: one-command local demo on loopback ...; prints the URL to open
    import re
    from harness import Proc, gatehouse_bin
    p = Proc("gatehouse-demo", [str(gatehouse_bin()), "demo"], cwd=tmp_path,
             env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}).start()
    try:
        url = None
        deadline = time.time() + 60
        while time.time() < deadline and url is None:
            m = re.search(r"https?://(?:127\.0\.0\.1|localhost|\[::1\]):\d+/?\S*", p.log_text())
            if m:
                url = m.group(0)
            elif not p.alive():
                break
            time.sleep(0.2)
        assert url, f"demo printed no URL:\n{p.log_text()[-3000:]}"
        assert re.match(r"https?://(127\.0\.0\.1|localhost|\[::1\])", url)
        r = requests.get(url, timeout=10)
        assert r.status_code == 200 and "text/html" in r.headers.get("Content-Type", "")
        origin = re.match(r"https?://[^/]+", url).group(0)
        # Two development providers (GATEHOUSE_PROVIDERS=dev,partner): /login offers both, and each
        # link starts the login at its provider.
        chooser = requests.get(origin + "/login", allow_redirects=False, timeout=10)
        assert chooser.status_code == 200 and "text/html" in chooser.headers.get("Content-Type", "")
        assert "/login?provider=dev" in chooser.text and "/login?provider=partner" in chooser.text
        assert [p["name"] for p in requests.get(origin + "/providers", timeout=10).json()["providers"]] == ["dev", "partner"]
        for name in ("dev", "partner"):
            start = requests.get(origin + f"/login?provider={name}", allow_redirects=False, timeout=10)
            assert start.status_code == 302, name
            assert f"redirect_uri={requests.utils.quote(origin + '/callback/' + name, safe='')}" in start.headers["Location"]
    finally:
        rc = p.stop(30)
    assert rc == 0


def test_sigterm_lets_an_sse_stream_finish_and_closes_the_database(gateway_factory, provider):
    # SPEC: SIGTERM/SIGINT: stop accepting, let in-flight requests finish (up to 25 s),
    # close the database, exit 0. A stream in flight (server-sent events) completes; afterwards the
    # WAL holds nothing that needs recovery.
    import os
    import sqlite3

    gw = gateway_factory()
    s = login(gw, provider)
    events = []
    failure = {}

    def stream():
        try:
            with s.get(gw.url + "/api/sse", headers={"X-CSRF": "1"}, stream=True, timeout=30) as r:
                for line in r.iter_lines():
                    if line.startswith(b"data:"):
                        events.append(line)
        except Exception as e:  # noqa: BLE001
            failure["e"] = e

    t = threading.Thread(target=stream)
    t.start()
    deadline = time.time() + 10
    while not events and time.time() < deadline:
        time.sleep(0.05)
    assert events, "the stream never started"
    gw.proc.signal(signal.SIGTERM)
    t.join(30)
    assert "e" not in failure, failure.get("e")
    assert len(events) == 5, events
    assert gw.proc.wait(timeout=30) == 0
    wal = gw.db + "-wal"
    assert not os.path.exists(wal) or os.path.getsize(wal) == 0, "the WAL was left with frames to recover"
    con = sqlite3.connect(gw.db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1
    finally:
        con.close()
