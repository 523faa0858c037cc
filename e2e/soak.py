#!/usr/bin/env python3
"""e2e/soak.py — logins, API calls and refreshes for minutes while PostgreSQL restarts and the
provider fails now and then (issue 38's soak; not part of the suite: it runs 10 minutes).

    .venv/bin/python e2e/soak.py                      # 10 minutes, 8 browsers
    .venv/bin/python e2e/soak.py --minutes 2 --browsers 4
    GATEHOUSE_BIN=.build/release/gatehouse .venv/bin/python e2e/soak.py

What runs, all on loopback, with the test suite's own pieces (harness.py, pg_server.py,
fault_proxy.py; `bash e2e/setup.sh` makes the virtualenv):

* a throwaway PostgreSQL behind a fault proxy; every `--restart-every` seconds (default 60) all
  its connections are reset and, every other time, the server itself is stopped and started again
  on the same data;
* the OpenID provider (rotating refresh tokens: a token presented twice is refused) behind a
  second fault proxy that drops every connection for one second in every ten (a tenth of the
  provider's calls fail);
* the gateway (`serve`) on that PostgreSQL, access tokens living 20 s so refreshes keep happening;
* `--browsers` browsers, each signed in once and then calling `/api/hello` and `/user` in a loop.

What it checks, and prints at the end (exit 1 when one fails):

* no session lost: every browser's session still answers `/user` 200 at the end, and no call
  ever answered 401 (a lost session, or a refresh token used twice: the provider's refusal ends
  the session);
* the only other answers are the documented ones for an outage (502, 503, 504), counted;
* memory flat: the gateway's RSS every 30 s, first against last.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import requests  # noqa: E402

import harness  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from harness import Gateway, Provider, Upstream, login  # noqa: E402
from pg_server import PgServer  # noqa: E402


def rss_mib(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--browsers", type=int, default=8)
    parser.add_argument("--restart-every", type=float, default=60)
    args = parser.parse_args()
    if not harness.gatehouse_bin().exists():
        print(f"soak: no gatehouse binary at {harness.gatehouse_bin()} (set GATEHOUSE_BIN)", file=sys.stderr)
        return 2

    work = Path(os.environ.get("SOAK_WORK", "/tmp")) / f"gatehouse-soak-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    pg = PgServer(name="postgres-soak")
    pg_proxy = FaultProxy(("127.0.0.1", pg.port), name="postgres-soak")
    provider = Provider(work / "provider", name="provider-soak")
    idp_proxy = FaultProxy(("127.0.0.1", provider.port), name="provider-soak")
    upstream = Upstream(work / "upstream", name="upstream-soak")
    uri = pg.create_database()
    via = uri.replace(f"@127.0.0.1:{pg.port}/", f"@127.0.0.1:{pg_proxy.port}/")
    provider.config(access_ttl=20, refresh_access_ttl=20)
    gateway = Gateway(provider, upstream, work / "gateway", name="gateway-soak",
                      env={"GATEHOUSE_DATABASE": via, "GATEHOUSE_ISSUER": idp_proxy.url,
                           "GATEHOUSE_PROVIDER_TIMEOUT": "3s", "GATEHOUSE_LOG_LEVEL": "info"})
    counts: dict[str, int] = {}
    unauthenticated: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()
    memory: list[float] = []

    def count(key: str) -> None:
        with lock:
            counts[key] = counts.get(key, 0) + 1

    sessions: dict[int, requests.Session] = {}

    def sign_in(username: str) -> requests.Session:
        # The provider may be in one of its dropped seconds, or PostgreSQL restarting: try again.
        for attempt in range(60):
            try:
                return login(gateway, provider, username)
            except Exception:  # noqa: BLE001 - any failed step of a sign-in during a fault
                count("sign-in retried")
                time.sleep(1)
        raise RuntimeError(f"{username} could not sign in within a minute")

    def browser(index: int) -> None:
        session = sign_in(f"soak-{index}")
        sessions[index] = session
        while not stop.is_set():
            for path in ("/api/hello", "/user"):
                try:
                    r = gateway.get(session, path, timeout=30)
                except requests.RequestException as error:
                    count(f"{path} transport {type(error).__name__}")
                    continue
                count(f"{path} {r.status_code}")
                if r.status_code == 401:
                    with lock:
                        unauthenticated.append(f"soak-{index} {path}: {r.text[:200]}")
            time.sleep(0.05)

    def faults() -> None:
        restarts = 0
        next_restart = time.monotonic() + args.restart_every
        while not stop.is_set():
            second = int(time.monotonic()) % 10
            if second == 0:
                idp_proxy.drop(close_existing=True)
            else:
                idp_proxy.pass_through()
            if time.monotonic() >= next_restart:
                restarts += 1
                count("postgres restarts")
                pg_proxy.reset_all()
                if restarts % 2 == 0:
                    pg.stop_server()
                    time.sleep(2)
                    pg.start_server()
                pg_proxy.pass_through()
                next_restart = time.monotonic() + args.restart_every
            if int(time.monotonic()) % 30 == 0 and (not memory or time.monotonic() - memory_at[-1] > 20):
                memory.append(rss_mib(gateway.proc.pid))
                memory_at.append(time.monotonic())
            time.sleep(0.2)
        idp_proxy.pass_through()
        pg_proxy.pass_through()

    memory_at: list[float] = [0.0]
    threads = [threading.Thread(target=browser, args=(i,), daemon=True) for i in range(args.browsers)]
    fault_thread = threading.Thread(target=faults, daemon=True)
    try:
        for t in threads:
            t.start()
        fault_thread.start()
        time.sleep(args.minutes * 60)
        stop.set()
        for t in threads:
            t.join(60)
        fault_thread.join(30)
        # Every browser's session is still there once the faults stop, and a new sign-in works.
        time.sleep(5)
        survivors = sum(gateway.get(s, "/user").status_code == 200 for s in sessions.values())
        fresh = sign_in("after-the-soak")
        survivors += gateway.get(fresh, "/user").status_code == 200
        memory.append(rss_mib(gateway.proc.pid))
    finally:
        stop.set()
        for closer in (gateway.stop, upstream.stop, provider.stop, idp_proxy.stop, pg_proxy.stop, pg.destroy):
            try:
                closer()
            except Exception as error:  # noqa: BLE001 - teardown reports, never hides the result
                print(f"soak: teardown: {error}", file=sys.stderr)

    print(f"soak: {args.minutes:g} min, {args.browsers} browsers, PostgreSQL reset every {args.restart_every:g} s "
          f"(stopped and started every other time), the provider dropped 1 s in 10")
    for key in sorted(counts):
        print(f"  {key}: {counts[key]}")
    print(f"  gateway RSS (MiB, every 30 s): {', '.join(f'{m:.1f}' for m in memory)}")
    failed = False
    if unauthenticated:
        failed = True
        print(f"FAIL: {len(unauthenticated)} answers were 401 (a session lost):")
        for line in unauthenticated[:10]:
            print("   ", line)
    if survivors != args.browsers + 1:
        failed = True
        print(f"FAIL: {args.browsers + 1 - survivors} of the sessions (and one new sign-in) did not answer /user after the soak")
    if len(memory) >= 2 and memory[-1] > memory[0] * 1.5 + 8:
        failed = True
        print(f"FAIL: memory grew from {memory[0]:.1f} to {memory[-1]:.1f} MiB")
    print("soak: " + ("FAILED" if failed else "ok: no session lost, no refresh token refused, memory flat"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
