"""The gateway's CPU per full login (`/login` + `/callback`), the provider excluded.

    .venv/bin/python bench/login_cpu.py [--logins 200] [--bin .build/release/gatehouse]

Starts the e2e suite's OpenID provider (a separate Python process, e2e/provider_server.py) and one
`gatehouse serve` against it (SQLite store in a temporary folder, GATEHOUSE_LOG_LEVEL=warning as in
bench/run), signs in once to warm up (discovery, JWKS, the first connection), then signs in
`--logins` times as a browser would (e2e/harness.py's `login`: /login, the provider's form,
/callback) and reads the gateway's utime and stime (/proc/PID/stat, all threads) before and after.
The provider answers `Connection: close`, so both of the gateway's calls per login (token,
userinfo) open a new TCP connection; its cost (netfilter included) counts here, and a provider that
keeps connections open saves it. The machine's load changes the result by a few tenths of a
millisecond: compare binaries in alternating runs. Prints one line:

    gatehouse login: 200 logins, 1.23 ms CPU per login (user 0.98, system 0.25)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "e2e"))

import harness  # noqa: E402
from harness import Gateway, Provider, login  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """utime and stime of the whole process (fields 14 and 15 of /proc/PID/stat), seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[11]) / TICKS, int(fields[12]) / TICKS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logins", type=int, default=200)
    ap.add_argument("--bin", help="the gatehouse binary (default: GATEHOUSE_BIN or .build/debug/gatehouse)")
    args = ap.parse_args()
    if args.bin:
        os.environ["GATEHOUSE_BIN"] = str(Path(args.bin).resolve())
    work = Path(tempfile.mkdtemp(prefix="gatehouse-login-cpu-"))
    os.environ.setdefault("E2E_ARTIFACTS", str(work / "artifacts"))
    harness.ARTIFACTS = Path(os.environ["E2E_ARTIFACTS"])
    provider = gateway = None
    try:
        provider = Provider(work / "provider")
        gateway = Gateway(provider, None, work / "gateway", env={"GATEHOUSE_LOG_LEVEL": "warning"})
        login(gateway, provider)
        pid = gateway.proc.pid
        user0, system0 = cpu_seconds(pid)
        for i in range(args.logins):
            login(gateway, provider, username=f"user{i}")
        user1, system1 = cpu_seconds(pid)
        user = (user1 - user0) * 1000 / args.logins
        system = (system1 - system0) * 1000 / args.logins
        print(f"gatehouse login: {args.logins} logins, {user + system:.2f} ms CPU per login "
              f"(user {user:.2f}, system {system:.2f})")
    finally:
        if gateway is not None and gateway.proc is not None:
            gateway.stop()
        if provider is not None:
            provider.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
