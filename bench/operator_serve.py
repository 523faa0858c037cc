"""`gatehouse serve` configured as an operator would, signed in once, kept up for bench/run's rounds.

Usage: operator_serve.py WORK_DIR UPSTREAM_URL [--env NAME=VALUE]…   (GATEHOUSE_BIN names the binary)

Runs with the e2e virtualenv's Python (bench/run passes it). Starts:
  provider   e2e/provider_server.py (Authlib, a real third-party OpenID provider) in its own process,
             as harness.Provider starts it for the e2e suite;
  gateway    `gatehouse serve` (not `demo`) configured like a deployment: that provider, a SQLite file
             (GATEHOUSE_DATABASE), one route GATEHOUSE_ROUTES=/api=UPSTREAM_URL, and otherwise the
             defaults: no GATEHOUSE_LOG_LEVEL (so info, the access log on) and no GATEHOUSE_LOG_FORMAT
             (so json), its output (stdout and stderr) going to a file as a container runtime collects
             it (WORK_DIR/artifacts/logs/gateway.log). Started in this script's session (bench/run's),
             not one of its own as harness.Gateway starts it: see start_in_this_session.
Then signs in once through the provider's form (harness.login) and writes, in WORK_DIR:
  url        the gateway's base URL (http://127.0.0.1:PORT)
  pid        the gateway process's pid (the one whose CPU a row counts; not this script's)
  cookie     the request header carrying the session: "Cookie: gatehouse=…"
  ready      written last: the three above are complete
and stays up until SIGTERM or SIGINT, when it stops the gateway and the provider (a few seconds at most,
within bench/run's cleanup).

--env NAME=VALUE sets (or, with an empty VALUE, removes) one more variable of the gateway's, to measure
one difference at a time (e.g. --env GATEHOUSE_LOG_LEVEL=warning); bench/run passes only
GATEHOUSE_CPU_AFFINITY, when it is set, as it passes it to its demos.

The provider's access tokens live an hour (e2e/provider_server.py's default), so the measured path is
the plain proxy path, no refresh.

Standalone: GATEHOUSE_BIN=.build/release/gatehouse .venv/bin/python bench/operator_serve.py /tmp/os \
    http://127.0.0.1:8081
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

if len(sys.argv) < 3:
    sys.exit(__doc__)
WORK = Path(sys.argv[1]).resolve()
UPSTREAM_URL = sys.argv[2].rstrip("/")
EXTRA_ENV: dict[str, str | None] = {}
_rest = sys.argv[3:]
while _rest:
    if _rest[0] != "--env" or len(_rest) < 2 or "=" not in _rest[1]:
        sys.exit(f"operator_serve.py: unexpected arguments {_rest!r} (--env NAME=VALUE)")
    _name, _, _value = _rest[1].partition("=")
    EXTRA_ENV[_name] = _value or None
    _rest = _rest[2:]

os.environ.setdefault("E2E_ARTIFACTS", str(WORK / "artifacts"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "e2e"))

import harness  # noqa: E402  (the e2e virtualenv has its dependencies)


class Stop(Exception):
    pass


def _stop(signum, frame):
    raise Stop()


def write_file(name: str, text: str) -> None:
    path = WORK / name
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text + "\n")
    os.replace(tmp, path)


def start_in_this_session(gateway: harness.Gateway) -> None:
    """`gatehouse serve` as harness.Gateway.start runs it (its environment, the repository as working
    directory, stdout and stderr to the log file), but in this process's session, not one of its own.

    With the kernel's autogroup scheduling (sched_autogroup_enabled, on by default) every session is
    a scheduling group of its own, and a gateway in its own group beside wrk, the upstream and the
    nginx rows (all in bench/run's session) was preempted about three times as often per request
    (involuntary context switches 1.1 per request instead of 0.35) and spent about 20 % more CPU per
    request for it (44.6 µs instead of 35.7 at log level warning; a demo put in a session of its
    own: 38.1 instead of 32.4; see bench/README.md). That is the bench's arrangement, not the
    gateway's configuration: in the same group as the other rows, the row differs from them only
    in how the gateway is configured."""
    argv = [str(harness.gatehouse_bin()), "serve"]
    proc = harness.Proc(gateway.name, argv, env=gateway.env, cwd=harness.REPO)
    proc._log = open(proc.log_path, "ab", buffering=0)  # what Proc.start opens, and Proc.stop closes
    proc._log.write(f"=== start {time.strftime('%H:%M:%S')}: {' '.join(argv)}\n".encode())
    proc.popen = subprocess.Popen(argv, env=gateway.env, cwd=harness.REPO, stdout=proc._log,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    gateway.proc = proc
    gateway.wait_ready()


def main() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    for name in ("ready", "url", "pid", "cookie"):
        (WORK / name).unlink(missing_ok=True)
    # Our own handlers (harness's SIGTERM handler kills the children outright): stop both gracefully.
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    provider = gateway = None
    try:
        provider = harness.Provider(WORK / "provider")
        # harness.Gateway's environment is the e2e suite's (GATEHOUSE_LOG_LEVEL=debug): the operator
        # leaves the log level to its default, so it is removed, not set to anything.
        env: dict[str, str | None] = {
            "GATEHOUSE_LOG_LEVEL": None,
            "GATEHOUSE_LOG_FORMAT": None,
            "GATEHOUSE_ROUTES": f"/api={UPSTREAM_URL}",
        }
        env.update(EXTRA_ENV)
        gateway = harness.Gateway(provider, None, WORK / "gateway", env=env, start=False)
        start_in_this_session(gateway)
        session = harness.login(gateway, provider, username="bench")
        cookie = session.cookies.get(gateway.cookie_name)
        write_file("url", gateway.url)
        write_file("pid", str(gateway.proc.pid))
        write_file("cookie", f"Cookie: {gateway.cookie_name}={cookie}")
        write_file("ready", "1")
        print(f"operator_serve: gateway {gateway.url} (pid {gateway.proc.pid}), provider {provider.issuer}, "
              f"log {gateway.proc.log_path}", file=sys.stderr, flush=True)
        while gateway.proc.alive() and provider.proc.alive():
            time.sleep(0.5)
        which = gateway if not gateway.proc.alive() else provider
        print(f"operator_serve: {which.proc.name} exited: {which.proc.log_text()[-2000:]}", file=sys.stderr)
        sys.exit(1)
    except Stop:
        pass
    finally:
        # Short waits: bench/run's cleanup sends this script SIGKILL 5 s after SIGTERM, and nothing
        # else stops its children (the provider runs in a session of its own), so they must be gone
        # before then.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if gateway is not None and gateway.proc is not None:
            gateway.proc.stop(timeout=2)
        if provider is not None:
            provider.proc.stop(timeout=1)


if __name__ == "__main__":
    main()
