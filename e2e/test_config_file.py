"""The configuration file (SPEC "A configuration file, reloaded without a restart"): `GATEHOUSE_CONFIG`
YAML beside or instead of the variables, errors that name the key and its line, secrets from the
environment and from files, and reloads (SIGHUP, an edit, a rename over it, a ConfigMap's symlink
swap) that switch new requests while kept-alive connections and calls in flight carry on."""

from __future__ import annotations

import http.client
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import requests

import harness
from harness import login

# What the file sets: the harness's variables for these are removed from the environment.
FILE_KEYS = ("GATEHOUSE_ISSUER", "GATEHOUSE_CLIENT_ID", "GATEHOUSE_CLIENT_SECRET", "GATEHOUSE_ROUTES",
             "GATEHOUSE_PUBLIC_DIR", "GATEHOUSE_LOG_LEVEL")


def write_config(path: Path, provider, upstream, routes: str, extra: str = ""):
    path.write_text(f"""# Gatehouse, as an operator writes it
issuer: {provider.issuer}
client_id: {provider.client_id}
client_secret: ${{E2E_CLIENT_SECRET}}
public_dir: {harness.REPO / "Public"}
log_level: debug
routes:
{routes}
{extra}""")


ROUTES_ONE = """  - prefix: /api
    upstream: {up}
"""
ROUTES_TWO = """  - prefix: /api
    upstream: {up}
  - prefix: /v2
    upstream: {up}/api
    allow: {{sub: alice}}
"""


def file_gateway(provider, upstream, work: Path, routes=ROUTES_ONE, extra="", env=None, start=True, name="gw-file"):
    work.mkdir(parents=True, exist_ok=True)
    config = work / "gatehouse.yaml"
    write_config(config, provider, upstream, routes.format(up=upstream.url), extra)
    environment = {k: None for k in FILE_KEYS}
    environment.update({"GATEHOUSE_CONFIG": str(config), "E2E_CLIENT_SECRET": provider.client_secret})
    environment.update(env or {})
    gw = harness.Gateway(provider, upstream, work / "gw", env=environment, name=name, start=start)
    gw.config = config
    return gw


def metric(gw, name, labels):
    for line in requests.get(gw.url + "/metrics", timeout=10).text.splitlines():
        if line.startswith(name + labels + " "):
            return float(line.split()[-1])
    return None


def wait_for(predicate, timeout=15.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_file_alone_runs_the_gateway(provider, upstream, tmp_path):
    gw = file_gateway(provider, upstream, tmp_path)
    try:
        s = login(gw, provider, "alice")
        r = gw.get(s, "/api/hello")
        assert r.status_code == 200 and r.json()["hello"] == "world"
        r = gw.cli("check")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "configuration file" in r.stdout
    finally:
        gw.stop()


def test_variables_beside_the_file_win_and_check_says_so(provider, upstream, tmp_path):
    gw = file_gateway(provider, upstream, tmp_path, env={"GATEHOUSE_ROUTES": f"/env={upstream.url}/api"})
    try:
        s = login(gw, provider, "alice")
        assert gw.get(s, "/env/hello").status_code == 200
        assert gw.get(s, "/api/hello").status_code != 200  # the file's route lost to the variable
        r = gw.cli("check")
        assert "GATEHOUSE_ROUTES from the environment wins over the file" in r.stdout, r.stdout
    finally:
        gw.stop()


@pytest.mark.parametrize("extra, words", [
    ("sesion_idle: 1h", ["sesion_idle", "line 11", "did you mean session_idle"]),
    ("session_idle: soon", ["session_idle (line 11", "GATEHOUSE_SESSION_IDLE"]),
    ("cookie_samesite: [Lax]", ["cookie_samesite", "line 11"]),
    ("secret_key: ${E2E_NOT_SET}", ["secret_key", "line 11", "E2E_NOT_SET", "not set"]),
    ("client_secret_file: /nonexistent/secret", ["client_secret_file", "cannot be read"]),
    ("providers: 3", ["providers", "line 11"]),
    ("routes: [{prefix: /x}]", []),
])
def test_errors_name_the_key_and_line_and_exit_64(provider, upstream, tmp_path, extra, words):
    gw = file_gateway(provider, upstream, tmp_path, extra=extra, start=False)
    r = gw.cli("check")
    assert r.returncode == 64, (r.stdout, r.stderr)
    for word in words:
        assert word in r.stderr, (word, r.stderr)


def test_a_bad_route_names_its_own_line(provider, upstream, tmp_path):
    routes = ROUTES_TWO.replace("allow: {{sub: alice}}", "auth: nope")
    gw = file_gateway(provider, upstream, tmp_path, routes=routes, start=False)
    r = gw.cli("check")
    assert r.returncode == 64
    assert "routes[1] (line 10" in r.stderr and "nope" in r.stderr, r.stderr


def test_secret_from_a_file(provider, upstream, tmp_path):
    secret = tmp_path / "client-secret"
    secret.write_text(provider.client_secret + "\n")
    gw = file_gateway(provider, upstream, tmp_path, env={"E2E_CLIENT_SECRET": "wrong"})
    gw.stop()
    text = gw.config.read_text().replace("client_secret: ${E2E_CLIENT_SECRET}", f"client_secret_file: {secret}")
    gw.config.write_text(text)
    gw.start()
    try:
        s = login(gw, provider, "alice")  # the token endpoint took the secret read from the file
        assert gw.get(s, "/api/hello").status_code == 200
    finally:
        gw.stop()


def test_sighup_reload_switches_new_requests_and_counts(provider, upstream, tmp_path):
    gw = file_gateway(provider, upstream, tmp_path)
    try:
        s = login(gw, provider, "alice")
        bob = login(gw, provider, "bob")
        assert gw.get(s, "/v2/hello").status_code != 200
        write_config(gw.config, provider, upstream, ROUTES_TWO.format(up=upstream.url))
        gw.proc.signal(signal.SIGHUP)
        wait_for(lambda: gw.get(s, "/v2/hello").status_code == 200, what="the new route")
        # the rule of the new route holds, and the old sessions carry on
        assert gw.get(bob, "/v2/hello").status_code == 403
        assert gw.get(s, "/api/hello").status_code == 200
        assert metric(gw, "gatehouse_config_reloads_total", '{result="ok"}') >= 1
        # an invalid file: the old configuration stays, /readyz stays 200, the error is counted and logged
        gw.config.write_text(gw.config.read_text() + "\nsession_idle: soon\n")
        gw.proc.signal(signal.SIGHUP)
        wait_for(lambda: (metric(gw, "gatehouse_config_reloads_total", '{result="error"}') or 0) >= 1,
                 what="the refused reload")
        assert requests.get(gw.url + "/readyz", timeout=10).status_code == 200
        assert gw.get(s, "/v2/hello").status_code == 200
        assert "session_idle (line" in gw.proc.log_text() and "configuration reload failed" in gw.proc.log_text()
    finally:
        gw.stop()


def test_restart_only_keys_are_kept_and_named(provider, upstream, tmp_path):
    gw = file_gateway(provider, upstream, tmp_path)
    try:
        port = gw.port
        # (listen, database and secret_key are the harness's variables here, which win over the file)
        write_config(gw.config, provider, upstream, ROUTES_TWO.format(up=upstream.url),
                     extra="max_body: 1k\nstore_queue: 10\n")
        gw.proc.signal(signal.SIGHUP)
        wait_for(lambda: "GATEHOUSE_MAX_BODY, GATEHOUSE_STORE_QUEUE" in gw.proc.log_text(), what="the restart warning")
        assert "take effect only after a restart" in gw.proc.log_text()
        s = login(gw, provider, "alice")
        assert gw.port == port and gw.get(s, "/v2/hello").status_code == 200  # the rest applied
        # the running bound is kept: a 2 KiB body still passes
        assert gw.post(s, "/api/upload", data=b"x" * 2048).status_code == 200
    finally:
        gw.stop()


def test_an_edit_a_rename_over_and_a_configmap_swap_are_seen_without_a_signal(provider, upstream, tmp_path):
    # The file a ConfigMap mounts: gatehouse.yaml -> ..data/gatehouse.yaml, ..data -> a dated folder.
    mount = tmp_path / "mount"
    mount.mkdir()
    first = mount / "..2026_11_28_1"
    first.mkdir()
    write_config(first / "gatehouse.yaml", provider, upstream, ROUTES_ONE.format(up=upstream.url))
    os.symlink(first.name, mount / "..data")
    os.symlink("..data/gatehouse.yaml", mount / "gatehouse.yaml")
    gw = file_gateway(provider, upstream, tmp_path, env={"GATEHOUSE_CONFIG": str(mount / "gatehouse.yaml")})
    try:
        s = login(gw, provider, "alice")
        assert gw.get(s, "/v2/hello").status_code != 200
        # the kubelet's swap: a new folder, a new symlink renamed over ..data
        second = mount / "..2026_11_28_2"
        second.mkdir()
        write_config(second / "gatehouse.yaml", provider, upstream, ROUTES_TWO.format(up=upstream.url))
        os.symlink(second.name, mount / "..data_tmp")
        os.rename(mount / "..data_tmp", mount / "..data")
        wait_for(lambda: gw.get(s, "/v2/hello").status_code == 200, what="the ConfigMap swap")
    finally:
        gw.stop()
    # an editor's rename over the file
    gw = file_gateway(provider, upstream, tmp_path / "editor", name="gw-editor")
    try:
        s = login(gw, provider, "alice")
        assert gw.get(s, "/v2/hello").status_code != 200
        temp = gw.config.with_suffix(".swp")
        write_config(temp, provider, upstream, ROUTES_TWO.format(up=upstream.url))
        os.rename(temp, gw.config)
        wait_for(lambda: gw.get(s, "/v2/hello").status_code == 200, what="the rename over the file")
    finally:
        gw.stop()


def test_twenty_reloads_under_signed_in_calls_drop_nothing(provider, upstream, tmp_path):
    gw = file_gateway(provider, upstream, tmp_path)
    s = login(gw, provider, "alice")
    cookie = f"{gw.cookie_name}={s.cookies.get(gw.cookie_name)}"
    failures: list[str] = []
    calls = [0]
    stop = threading.Event()

    def client():
        # one kept-alive connection per thread, for the whole test
        conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
        while not stop.is_set():
            try:
                conn.request("GET", "/api/hello", headers={"Cookie": cookie, "X-CSRF": "1"})
                r = conn.getresponse()
                body = r.read()
                if r.status != 200:
                    failures.append(f"{r.status} {body[:200]!r}")
                calls[0] += 1
            except Exception as e:  # a dropped connection is a failure
                failures.append(repr(e))
                return

    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        for i in range(20):
            routes = ROUTES_TWO if i % 2 == 0 else ROUTES_ONE
            write_config(gw.config, provider, upstream, routes.format(up=upstream.url), extra=f"# reload {i}\n")
            gw.proc.signal(signal.SIGHUP)
            wait_for(lambda: metric(gw, "gatehouse_config_reloads_total", '{result="ok"}') >= i + 1,
                     what=f"reload {i + 1}")
        time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
        gw.stop()
    assert failures == [] and calls[0] > 100, (failures[:5], calls[0])


def test_the_schema_is_the_binarys_and_checks_the_example(tmp_path):
    import json

    import jsonschema
    import yaml
    schema_text = (harness.REPO / "docs" / "gatehouse.schema.json").read_text()
    assert harness.run_cli(["schema"], env={"PATH": "/usr/bin:/bin"}).stdout == schema_text
    schema = json.loads(schema_text)
    example = yaml.safe_load((harness.REPO / "examples" / "gatehouse.yaml").read_text())
    jsonschema.validate(example, schema)
    for broken in ({**example, "sesion_idle": "1h"}, {**example, "routes": [{"prefix": "/x"}]},
                   {**example, "providers": {"google": {"clinet_id": "x"}}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)


def test_the_example_file_is_a_valid_configuration(tmp_path):
    # Its secrets from files and variables made here; its hosts do not resolve, so check ends with
    # 69 (unavailable), not 64 (a configuration error).
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    text = (harness.REPO / "examples" / "gatehouse.yaml").read_text().replace("/run/secrets/", f"{secrets}/")
    (tmp_path / "gatehouse.yaml").write_text(text)
    for name in ("google_client_secret", "partner_client_secret"):
        (secrets / name).write_text("secret\n")
    (secrets / "gatehouse_secret_key").write_text(harness.random_secret_key() + "\n")
    r = harness.run_cli(["check", "--config", str(tmp_path / "gatehouse.yaml")],
                        env={"PATH": "/usr/bin:/bin", "PG_PASSWORD": "pw", "KEYCLOAK_CLIENT_SECRET": "k"}, timeout=120)
    assert r.returncode == 69, (r.stdout, r.stderr)
    assert "ok   configuration file" in r.stdout and "ok   configuration (" in r.stdout
    assert "allow:" in r.stdout and "; or sub is 0f1e2d3c-operator" in r.stdout


def test_a_provider_taken_out_ends_its_sessions_and_keeps_the_others(provider, upstream, tmp_path):
    work = tmp_path / "two"
    work.mkdir()
    config = work / "gatehouse.yaml"

    def write(names):
        blocks = "".join(f"""  {n}:
    issuer: {provider.issuer}
    client_id: {provider.client_id}
    client_secret: ${{E2E_CLIENT_SECRET}}
""" for n in names)
        config.write_text(f"public_dir: {harness.REPO / 'Public'}\nproviders:\n{blocks}routes:\n"
                          f"  - prefix: /api\n    upstream: {upstream.url}\n")

    write(["one", "two"])
    environment = {k: None for k in FILE_KEYS}
    environment.update({"GATEHOUSE_CONFIG": str(config), "E2E_CLIENT_SECRET": provider.client_secret})
    gw = harness.Gateway(provider, upstream, work / "gw", env=environment, name="gw-two-providers", register=False)
    for n in ("one", "two"):
        provider.register_redirect(gw.public_url + f"/callback/{n}")
    try:
        sessions = {}
        for n in ("one", "two"):
            s = requests.Session()
            _, authorize = harness.start_login(s, gw, raw_query=f"provider={n}")
            callback = harness.provider_authorize(s, authorize, "alice")
            assert callback.startswith(gw.public_url + f"/callback/{n}?")
            assert harness.finish_callback(s, callback).status_code == 302
            assert gw.get(s, "/user").json()["provider"] == n
            sessions[n] = s
        write(["one"])
        gw.proc.signal(signal.SIGHUP)
        wait_for(lambda: (metric(gw, "gatehouse_config_reloads_total", '{result="ok"}') or 0) >= 1, what="the reload")
        assert gw.get(sessions["two"], "/user").status_code == 401
        assert gw.get(sessions["two"], "/api/hello").status_code == 401
        assert gw.get(sessions["one"], "/api/hello").status_code == 200
        assert requests.get(gw.url + "/providers", timeout=10).json()["providers"][0]["name"] == "one"
    finally:
        gw.stop()
