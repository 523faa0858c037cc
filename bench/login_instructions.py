"""bench/login_instructions.py — instructions the gateway executes per full login, under callgrind.

Usage: .venv/bin/python bench/login_instructions.py [--few 5] [--many 25] [--top 30] [--inclusive]
       (GATEHOUSE_BIN names the binary; default: the release build; `bash e2e/setup.sh` makes .venv)

The login row of bench/run (CPU per login) moves by a few tenths of a millisecond between runs; an
instruction count does not. This runs `gatehouse serve` under `valgrind --tool=callgrind` against e2e's
Authlib provider (in its own process, so its work is not counted), signs in `--few` and then, in a
second run, `--many` times as a browser would (/login → the provider's form → /callback), and divides
the difference by `--many` − `--few`: start-up and the first login's discovery and JWKS cancel out.
Work done per unit of time (the active-sessions gauge, the session sweep) is over-counted under
callgrind's slowness by up to ~50k instructions per login; compare builds, not absolute numbers.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "e2e"))


def load_instructions():
    """bench/instructions (a script without a .py suffix) as a module: its callgrind helpers."""
    loader = importlib.machinery.SourceFileLoader("instructions", str(REPO / "bench" / "instructions"))
    spec = importlib.util.spec_from_loader("instructions", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--few", type=int, default=5)
    parser.add_argument("--many", type=int, default=25)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--inclusive", action="store_true", help="list functions with their callees' instructions")
    args = parser.parse_args()
    if args.many <= args.few:
        parser.error("--many must be larger than --few")
    binary = Path(os.environ.get("GATEHOUSE_BIN") or REPO / ".build/x86_64-unknown-linux-gnu/release/gatehouse")
    if not binary.exists():
        raise SystemExit(f"login_instructions: no {binary}: swift build -c release --static-swift-stdlib --product gatehouse")
    with tempfile.TemporaryDirectory(prefix="gatehouse-login-instructions.") as tmp:
        work = Path(tmp)
        os.environ.setdefault("E2E_ARTIFACTS", str(work / "artifacts"))
        import harness  # noqa: E402  (the e2e virtualenv has its requirements)
        instructions = load_instructions()
        stripped = work / "gatehouse"
        subprocess.run(["strip", "--strip-debug", "-o", str(stripped), str(binary)], check=True)
        wrapper = work / "callgrind-gatehouse"
        wrapper.write_text("#!/bin/sh\nexec valgrind --quiet --tool=callgrind --dump-instr=no "
                           f"--callgrind-out-file=\"$CALLGRIND_OUT\" {stripped} \"$@\"\n")
        wrapper.chmod(0o755)
        os.environ["GATEHOUSE_BIN"] = str(wrapper)
        provider = harness.Provider(work / "provider")
        outputs = {}
        try:
            for count in (args.few, args.many):
                out = work / f"callgrind.{count}"
                gateway = harness.Gateway(provider, None, work / f"gateway-{count}", start=False, env={
                    "GATEHOUSE_LOG_LEVEL": "warning", "CALLGRIND_OUT": str(out),
                    "GATEHOUSE_ROUTES": f"/api=http://127.0.0.1:{harness.free_port()}"})
                gateway.start(wait_ready=False)
                gateway.wait_ready(timeout=120)
                harness.login(gateway, provider)  # discovery, JWKS, the first store write
                for i in range(count):
                    harness.login(gateway, provider, username=f"bench{i}")
                gateway.stop(timeout=120)
                outputs[count] = out
        finally:
            provider.stop()
        few = instructions.costs(outputs[args.few], args.inclusive)
        many = instructions.costs(outputs[args.many], args.inclusive)
    n = args.many - args.few
    per = {k: (many.get(k, 0) - few.get(k, 0)) / n for k in set(few) | set(many)}
    print(f"{binary}: {per.pop('TOTAL'):,.0f} instructions per login ({args.many} − {args.few} logins under callgrind)")
    top = sorted(per.items(), key=lambda kv: -kv[1])[:args.top]
    for (name, value), readable in zip(top, instructions.demangle([name for name, _ in top])):
        print(f"{value:12,.0f}  {readable[:140]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
