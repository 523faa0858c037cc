"""Start the suite's provider and upstream for manual work on the gateway, print the
environment for `gatehouse serve`, and run until Ctrl-C.

    .venv/bin/python e2e/dev_env.py [--gateway-port 8080]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import REPO, Provider, Upstream, random_secret_key  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gateway-port", type=int, default=8080)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gatehouse-dev-"))
    provider = Provider(work / "provider")
    upstream = Upstream(work / "upstream")
    url = f"http://127.0.0.1:{args.gateway_port}"
    provider.register_redirect(url + "/callback")
    print(f"""# provider log: {provider.proc.log_path}
# upstream log: {upstream.proc.log_path}
export GATEHOUSE_ISSUER={provider.issuer}
export GATEHOUSE_CLIENT_ID={provider.client_id}
export GATEHOUSE_CLIENT_SECRET={provider.client_secret}
export GATEHOUSE_PUBLIC_URL={url}
export GATEHOUSE_LISTEN=127.0.0.1:{args.gateway_port}
export GATEHOUSE_ROUTES=/api={upstream.url}
export GATEHOUSE_DATABASE={work}/gatehouse.sqlite
export GATEHOUSE_SECRET_KEY={random_secret_key()}
export GATEHOUSE_PUBLIC_DIR={REPO / 'Public'}
export GATEHOUSE_LOG_LEVEL=debug
# then: .build/debug/gatehouse serve   and open {url}/  (log in as any name, e.g. alice)
# provider test API: {provider.issuer}/_test/stats, /_test/tokens, POST /_test/config""", flush=True)
    try:
        while provider.proc.alive() and upstream.proc.alive():
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        provider.stop()
        upstream.stop()


if __name__ == "__main__":
    main()
