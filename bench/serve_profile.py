"""`gatehouse serve` as an operator runs it: start time, idle memory, CPU per login.

Usage: serve_profile.py WORK_DIR [LOGINS] [IDLE_CONNECTIONS]   (GATEHOUSE_BIN names the binary)

Runs with the e2e virtualenv's Python (bench/run passes it): the provider is e2e/provider_server.py
(Authlib, a real third-party OpenID provider) in its own process, so the gateway's CPU counts the
gateway alone. The gateway is configured like a deployment: provider, one route (to an address
where nothing listens: no request is proxied here), a SQLite file, log level warning.

Prints the lines bench/run puts in its report:
  start      five starts on the same database, milliseconds from exec to the first 200 from /healthz
  memory     VmRSS and PSS (smaps_rollup) once /readyz answers and 2 s later, then holding N idle
             keep-alive connections (each sent one request and read its answer)
  login      N full logins (/login → provider form → /callback), the gateway's user and system CPU
             (utime, stime of /proc/PID/stat) divided by N

The provider answers `Connection: close`, so both of the gateway's calls per login (token, userinfo)
open a new TCP connection, and that cost counts here; a provider that keeps connections open saves
it. The machine's load moves the login figure by a few tenths of a millisecond: compare binaries in
alternating runs.

Standalone: GATEHOUSE_BIN=.build/release/gatehouse .venv/bin/python bench/serve_profile.py /tmp/sp 200
"""

from __future__ import annotations

import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

WORK = Path(sys.argv[1])
LOGINS = int(sys.argv[2]) if len(sys.argv) > 2 else 200
IDLE_CONNECTIONS = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
os.environ.setdefault("E2E_ARTIFACTS", str(WORK / "artifacts"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "e2e"))

import requests  # noqa: E402  (the e2e virtualenv has it)

import harness  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> tuple[int, int]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


def memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) in KiB."""
    rollup = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, rest = line.partition(":")
        rollup[name] = int(rest.split()[0])
    return rollup["Rss"], rollup["Pss"]


def mib(kib: int) -> str:
    return f"{kib / 1024:.1f} MiB"


def healthz_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            return sock.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def timed_start(gateway: harness.Gateway) -> float:
    """Milliseconds from exec to the first 200 from /healthz (polled every 0.5 ms)."""
    began = time.perf_counter()
    gateway.start(wait_ready=False)
    deadline = began + 30
    while time.perf_counter() < deadline:
        if healthz_answers(gateway.port):
            return (time.perf_counter() - began) * 1000
        if not gateway.proc.alive():
            raise SystemExit(f"gatehouse serve exited: {gateway.proc.log_text()[-2000:]}")
        time.sleep(0.0005)
    raise SystemExit("gatehouse serve did not answer /healthz within 30 s")


def hold_idle_connections(port: int, count: int) -> list[socket.socket]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = count + 64
    if hard == resource.RLIM_INFINITY or hard >= want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    held = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(request)
        held.append(sock)
    for sock in held:
        answer = b""
        while not answer.endswith(b"ok\n"):
            chunk = sock.recv(4096)
            if not chunk:
                raise SystemExit("a held connection was closed before its answer")
            answer += chunk
    return held


def main() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    provider = harness.Provider(WORK / "provider")
    gateway = harness.Gateway(provider, None, WORK / "gateway", start=False, env={
        "GATEHOUSE_LOG_LEVEL": "warning",
        "GATEHOUSE_ROUTES": f"/api=http://127.0.0.1:{harness.free_port()}",
    })
    try:
        starts = []
        for _ in range(5):
            starts.append(timed_start(gateway))
            gateway.wait_ready()
            gateway.stop()
        print(f"start      exec to /healthz 200: median {statistics.median(starts):.0f} ms "
              f"(runs: {', '.join(f'{s:.0f}' for s in starts)} ms; the first creates the database)")

        timed_start(gateway)
        gateway.wait_ready()
        pid = gateway.proc.pid
        ready_rss, ready_pss = memory_kib(pid)
        time.sleep(2)
        idle_rss, idle_pss = memory_kib(pid)
        held = hold_idle_connections(gateway.port, IDLE_CONNECTIONS)
        time.sleep(1)
        held_rss, held_pss = memory_kib(pid)
        for sock in held:
            sock.close()
        print(f"memory     idle RSS {mib(idle_rss)}, PSS {mib(idle_pss)} (at /readyz: RSS {mib(ready_rss)}, "
              f"PSS {mib(ready_pss)}); holding {len(held)} idle keep-alive connections: RSS {mib(held_rss)} "
              f"({held_rss - idle_rss:+d} KiB), PSS {mib(held_pss)} ({held_pss - idle_pss:+d} KiB)")

        harness.login(gateway, provider)  # warm: discovery, JWKS, first store write
        user0, system0 = cpu_ticks(pid)
        began = time.perf_counter()
        for i in range(LOGINS):
            harness.login(gateway, provider, username=f"bench{i}")
        elapsed = time.perf_counter() - began
        user1, system1 = cpu_ticks(pid)
        per_login = lambda ticks: ticks * 1000 / CLOCK_TICKS / LOGINS  # noqa: E731
        user, system = per_login(user1 - user0), per_login(system1 - system0)
        print(f"login      {LOGINS} logins in {elapsed:.1f} s: gateway CPU {user + system:.2f} ms per login "
              f"(user {user:.2f}, system {system:.2f}; the provider's CPU is not counted)")
    finally:
        gateway.stop()
        provider.stop()


if __name__ == "__main__":
    main()
