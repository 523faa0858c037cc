"""Checks of the built container image, run by scripts/container-test (which builds the image first).

Not a pytest module (e2e/run.sh does not collect it): it needs podman and an image, and its checks
build on each other (log in, then call the API, then restart with the same volume). Each check
prints PASS or FAIL with the reason; the last line is `N passed, N failed`; exit 1 when one failed.

Two containers of the image:
  * `isolated`: its own network namespace with only loopback (`--network=none`) and the image's own
    settings (listens on 0.0.0.0:8080), so the HEALTHCHECK runs exactly as the image declares it;
    also the user and file-system checks.
  * `gateway`: `--network=host` on a free loopback port, next to the e2e suite's OpenID provider and
    upstream (e2e/provider_server.py, e2e/upstream_server.py); the database on a named volume at
    /data. It is stopped with SIGTERM and started again on the same volume.

Environment: CONTAINER_TEST_IMAGE (the image), CONTAINER_TEST_PODMAN (the podman command with its
global flags), CONTAINER_TEST_RUN_FLAGS (flags for `podman run`), CONTAINER_TEST_KEEP=1 (leave the
containers and the volume).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shlex
import subprocess
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import requests  # noqa: E402

import harness  # noqa: E402
from harness import CSRF, Provider, Upstream, free_port, login, random_secret_key  # noqa: E402

IMAGE = os.environ.get("CONTAINER_TEST_IMAGE", "localhost/gatehouse:container-test")
PODMAN = shlex.split(os.environ.get("CONTAINER_TEST_PODMAN",
                                    "podman --runtime runc --cgroup-manager=cgroupfs"))
RUN_FLAGS = shlex.split(os.environ.get("CONTAINER_TEST_RUN_FLAGS",
                                       "--ulimit nofile=1024:1024 --ulimit nproc=1024:1024"))
KEEP = os.environ.get("CONTAINER_TEST_KEEP") == "1"
TAG = secrets.token_hex(4)
LOGS = harness.ARTIFACTS / "container"

RESULTS: list[tuple[str, bool, str]] = []


def podman(*args: str, check=True, timeout=120.0) -> subprocess.CompletedProcess:
    cp = subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=timeout,
                        stdin=subprocess.DEVNULL)
    if check and cp.returncode != 0:
        raise AssertionError(f"podman {' '.join(args[:3])} … exited {cp.returncode}: "
                             f"{(cp.stderr or cp.stdout).strip()[-600:]}")
    return cp


def check(name: str):
    """Runs the decorated function at once and records PASS/FAIL; returns its result (or None)."""
    def run(fn):
        try:
            detail = fn()
            RESULTS.append((name, True, detail or ""))
            print(f"PASS  {name}" + (f": {detail}" if detail else ""), flush=True)
            return detail
        except Exception as e:  # noqa: BLE001 - every failure is a failed check, with its reason
            reason = f"{type(e).__name__}: {e}" if str(e) else traceback.format_exc(limit=2)
            RESULTS.append((name, False, reason))
            print(f"FAIL  {name}: {reason}", flush=True)
            return None
    return run


def wait_until(predicate, what: str, timeout=60.0, interval=0.2):
    deadline = time.monotonic() + timeout
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def http_ok(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def running(name: str) -> bool:
    cp = podman("inspect", "--format", "{{.State.Running}}", name, check=False)
    return cp.stdout.strip() == "true"


def save_logs(name: str):
    LOGS.mkdir(parents=True, exist_ok=True)
    cp = podman("logs", name, check=False)
    (LOGS / f"{name}.log").write_text(cp.stdout + cp.stderr)


class GatewayContainer:
    """What harness.login() needs of a gateway (url, public_url, cookie_name), as a container."""

    cookie_name = "gatehouse"

    def __init__(self, provider: Provider, upstream: Upstream, volume: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.public_url = self.url
        self.volume = volume
        self.env = {
            "GATEHOUSE_ISSUER": provider.issuer,
            "GATEHOUSE_CLIENT_ID": provider.client_id,
            "GATEHOUSE_CLIENT_SECRET": provider.client_secret,
            "GATEHOUSE_PUBLIC_URL": self.url,
            "GATEHOUSE_LISTEN": f"127.0.0.1:{self.port}",
            "GATEHOUSE_SECRET_KEY": random_secret_key(),
            "GATEHOUSE_ROUTES": f"/api={upstream.url}",
            "GATEHOUSE_LOG_LEVEL": "debug",
        }
        provider.register_redirect(self.url + "/callback")
        self.runs = 0
        self.name = ""

    def start(self):
        self.runs += 1
        self.name = f"gatehouse-ct-{TAG}-gateway{self.runs}"
        env = [a for k, v in self.env.items() for a in ("-e", f"{k}={v}")]
        podman("run", "-d", "--name", self.name, "--network=host", *RUN_FLAGS,
               "-v", f"{self.volume}:/data", *env, IMAGE)
        wait_until(lambda: http_ok(self.url + "/readyz") or not running(self.name),
                   f"{self.name} /readyz", timeout=60)
        if not running(self.name):
            save_logs(self.name)
            raise AssertionError(f"{self.name} exited: {podman('logs', self.name, check=False).stderr[-800:]}")

    def stop(self) -> int:
        """`podman stop -t 30` (SIGTERM, the image's STOPSIGNAL); the container's exit code."""
        podman("stop", "-t", "30", self.name, timeout=60)
        save_logs(self.name)
        return int(podman("inspect", "--format", "{{.State.ExitCode}}", self.name).stdout.strip())


def volume_path(volume: str) -> Path:
    return Path(podman("volume", "inspect", "--format", "{{.Mountpoint}}", volume).stdout.strip())


def main() -> int:
    LOGS.mkdir(parents=True, exist_ok=True)
    work = harness.ARTIFACTS / "container" / "work"
    containers: list[str] = []
    volume = f"gatehouse-ct-{TAG}"

    inspect = json.loads(podman("image", "inspect", IMAGE).stdout)[0]
    size = int(inspect.get("Size", 0))
    print(f"image {IMAGE}: {size / 1e6:.1f} MB", flush=True)

    @check("keygen: `podman run --rm IMAGE keygen` prints base64 of 32 random bytes")
    def _():
        first = podman("run", "--rm", "--network=none", *RUN_FLAGS, IMAGE, "keygen").stdout.strip()
        second = podman("run", "--rm", "--network=none", *RUN_FLAGS, IMAGE, "keygen").stdout.strip()
        assert len(base64.b64decode(first, validate=True)) == 32, first
        assert first != second, "two keys are equal"

    # ---- the isolated container: the image's own listen address, HEALTHCHECK, user, files ----
    isolated = f"gatehouse-ct-{TAG}-isolated"
    containers.append(isolated)

    @check("serve starts with the image's defaults (0.0.0.0:8080, /data/gatehouse.sqlite)")
    def _():
        podman("run", "-d", "--name", isolated, "--network=none", *RUN_FLAGS,
               "-e", "GATEHOUSE_ISSUER=http://127.0.0.1:9/unreachable",
               "-e", "GATEHOUSE_CLIENT_ID=container-test", "-e", "GATEHOUSE_CLIENT_SECRET=unused",
               "-e", "GATEHOUSE_PUBLIC_URL=http://127.0.0.1:8080",
               "-e", f"GATEHOUSE_SECRET_KEY={random_secret_key()}", IMAGE)
        wait_until(lambda: podman("exec", isolated, "curl", "-fsS", "-o", "/dev/null",
                                  "http://127.0.0.1:8080/healthz", check=False).returncode == 0
                   or not running(isolated), "/healthz inside the container", timeout=60)
        assert running(isolated), podman("logs", isolated, check=False).stderr[-800:]

    @check("HEALTHCHECK: the command the image declares passes inside the container")
    def _():
        health = inspect.get("Healthcheck") or inspect.get("Config", {}).get("Healthcheck")
        assert health and health.get("Test"), "the image has no HEALTHCHECK (built as OCI, not docker format?)"
        test = health["Test"]
        assert test[0] in ("CMD", "CMD-SHELL"), test
        argv = test[1:] if test[0] == "CMD" else ["/bin/sh", "-c", test[1]]
        cp = podman("exec", isolated, *argv, check=False)
        assert cp.returncode == 0, f"{argv} exited {cp.returncode}: {cp.stderr.strip()}"
        # podman's own runner of the declared check as well
        cp = podman("healthcheck", "run", isolated, check=False)
        assert cp.returncode == 0, f"podman healthcheck run: {cp.returncode} {cp.stdout}{cp.stderr}"
        return " ".join(argv)

    @check("the gatehouse process (PID 1) runs as uid 10001, gid 10001")
    def _():
        status = podman("exec", isolated, "cat", "/proc/1/status").stdout
        uid = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
        gid = next(line.split()[1:] for line in status.splitlines() if line.startswith("Gid:"))
        assert set(uid) == {"10001"} and set(gid) == {"10001"}, (uid, gid)
        cmdline = podman("exec", isolated, "cat", "/proc/1/cmdline").stdout.split("\0")
        assert cmdline[:2] == ["/app/gatehouse", "serve"], cmdline

    @check("uid 10001 can write /data and nothing else but the world-writable scratch directories")
    def _():
        # Every path on the container's own file systems that the process's user may write (symbolic
        # links are not: /var/lock points to /run/lock).
        cp = podman("exec", isolated, "find", "/", "-xdev", "-writable",
                    "(", "-path", "/proc", "-o", "-path", "/sys", "-o", "-path", "/dev", ")", "-prune",
                    "-o", "-writable", "!", "-type", "l", "-print", check=False)
        writable = [p for p in cp.stdout.split() if p not in ("/proc", "/sys", "/dev")]
        # /tmp, /var/tmp and /run/lock are sticky world-writable in every Debian image (SQLite may put
        # temporary files there); the SQLite files are under /data.
        allowed = ("/data", "/tmp", "/var/tmp", "/run/lock")
        outside = [p for p in writable if not any(p == a or p.startswith(a + "/") for a in allowed)]
        assert not outside, f"writable outside /data: {outside[:20]}"
        assert "/data" in writable, "/data is not writable by the process"
        for path in ("/app/gatehouse", "/app/Public/index.html", "/app/x", "/etc/passwd", "/usr/bin/x"):
            cp = podman("exec", isolated, "sh", "-c", f"echo x >> {path}", check=False)
            assert cp.returncode != 0, f"{path} is writable"
        files = podman("exec", isolated, "ls", "-A", "/data").stdout.split()
        assert "gatehouse.sqlite" in files, files
        return "writable: " + " ".join(sorted(set(p for p in writable if p in allowed)))

    # ---- the gateway container: login, API call, restart, SIGTERM ----
    provider = upstream = None
    gateway: GatewayContainer | None = None
    sess = None

    @check("provider and upstream (e2e suite) start on loopback")
    def _():
        nonlocal provider, upstream
        provider = Provider(work)
        upstream = Upstream(work)

    @check("gateway container (--network=host, named volume at /data): /healthz and /readyz answer 200")
    def _():
        nonlocal gateway
        podman("volume", "create", volume)
        gateway = GatewayContainer(provider, upstream, volume)
        gateway.start()
        containers.append(gateway.name)
        r = requests.get(gateway.url + "/healthz", timeout=5)
        assert r.status_code == 200, r.status_code
        return gateway.url

    @check("a full login through the container against the OpenID provider")
    def _():
        nonlocal sess
        sess = login(gateway, provider, "alice")
        r = sess.get(gateway.url + "/user", headers=CSRF, timeout=10)
        assert r.status_code == 200, (r.status_code, r.text[:300])
        assert r.json().get("sub") == "alice", r.text[:300]

    def api_call(session) -> str:
        upstream.clear_log()
        r = session.get(gateway.url + "/api/hello", headers=CSRF, timeout=10)
        assert r.status_code == 200, (r.status_code, r.text[:300])
        body = r.json()
        assert body.get("hello") == "world", body
        assert (body.get("authorization") or "").startswith("Bearer "), body
        return "upstream got a Bearer token"

    @check("an API call through the gateway reaches the upstream with the user's access token")
    def _():
        return api_call(sess)

    @check("SIGTERM (`podman stop -t 30`): exit 0, the WAL checkpointed into the database")
    def _():
        code = gateway.stop()
        assert code == 0, f"exit code {code}"
        data = volume_path(volume)
        wal = data / "gatehouse.sqlite-wal"
        assert (data / "gatehouse.sqlite").stat().st_size > 0
        assert not wal.exists() or wal.stat().st_size == 0, f"-wal is {wal.stat().st_size} bytes"
        return "no -wal left" if not wal.exists() else "-wal is empty"

    @check("the session survives a new container on the same /data volume")
    def _():
        gateway.start()
        containers.append(gateway.name)
        api_call(sess)
        r = sess.get(gateway.url + "/user", headers=CSRF, timeout=10)
        assert r.status_code == 200 and r.json().get("sub") == "alice", (r.status_code, r.text[:300])

    @check("the second container also stops with exit 0 on SIGTERM")
    def _():
        code = gateway.stop()
        assert code == 0, f"exit code {code}"

    # ---- HTTPS: mounted certificate files, the image's TLS defaults (8443, redirect on 8080) ----
    tls_box = f"gatehouse-ct-{TAG}-tls"
    containers.append(tls_box)

    @check("with GATEHOUSE_TLS_CERT/KEY mounted: HTTPS on 8443, 308 to https on 8080, HEALTHCHECK passes")
    def _():
        folder = work / "tls"
        folder.mkdir(parents=True, exist_ok=True)
        cert, key = folder / "cert.pem", folder / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
        # The image's user (uid 10001) reads them through the read-only mount.
        folder.chmod(0o755)
        cert.chmod(0o644)
        key.chmod(0o644)
        podman("run", "-d", "--name", tls_box, "--network=none", *RUN_FLAGS, "-v", f"{folder}:/tls:ro",
               "-e", "GATEHOUSE_ISSUER=http://127.0.0.1:9/unreachable",
               "-e", "GATEHOUSE_CLIENT_ID=container-test", "-e", "GATEHOUSE_CLIENT_SECRET=unused",
               "-e", "GATEHOUSE_PUBLIC_URL=https://localhost",
               "-e", "GATEHOUSE_TLS_CERT=/tls/cert.pem", "-e", "GATEHOUSE_TLS_KEY=/tls/key.pem",
               "-e", f"GATEHOUSE_SECRET_KEY={random_secret_key()}", IMAGE)
        wait_until(lambda: podman("exec", tls_box, "curl", "-fsS", "--cacert", "/tls/cert.pem", "-o", "/dev/null",
                                  "https://127.0.0.1:8443/healthz", check=False).returncode == 0
                   or not running(tls_box), "https://127.0.0.1:8443/healthz inside the container", timeout=60)
        assert running(tls_box), podman("logs", tls_box, check=False).stderr[-800:]
        redirect = podman("exec", tls_box, "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}",
                          "http://127.0.0.1:8080/app?x=1").stdout.strip()
        assert redirect == "308 https://localhost/app?x=1", redirect
        cp = podman("healthcheck", "run", tls_box, check=False)
        assert cp.returncode == 0, f"podman healthcheck run: {cp.returncode} {cp.stdout}{cp.stderr}"

    # ---- clean up ----
    for name in containers:
        if running(name):
            podman("stop", "-t", "30", name, check=False, timeout=60)
        save_logs(name)
    for proc in (provider, upstream):
        if proc is not None:
            proc.stop()
    if not KEEP:
        for name in containers:
            podman("rm", "-f", "-v", name, check=False)  # -v: the anonymous /data volumes too
        podman("volume", "rm", "-f", volume, check=False)

    passed = sum(1 for _, ok, _ in RESULTS if ok)
    failed = len(RESULTS) - passed
    print(f"image size: {size / 1e6:.1f} MB ({IMAGE})")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
