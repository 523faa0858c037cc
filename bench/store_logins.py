"""How many logins/s the session store's SQL admits on one PostgreSQL (docs/scaling.md).

    .venv/bin/python bench/store_logins.py [--pending 10000] [--seconds 10]

A throwaway PostgreSQL (e2e/pg_server.py; note its fsync=off), the schema of Migrations/postgres,
`--pending` pending logins already stored (logins in progress at the provider), then pgbench with
1 and 8 clients on three scripts in bench/pgbench/: a login as the store runs it (`login.sql`), the
same without the global advisory lock (`login-nolock.sql`), and without the overall eviction either
(`login-noevict.sql`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "e2e"))

from pg_server import PgServer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--seconds", type=int, default=10)
    args = ap.parse_args()
    pg = PgServer(name="postgres-logins")
    try:
        pg.psql("CREATE DATABASE b")
        pg.psql((BENCH.parent / "Migrations/postgres/0001_initial.sql").read_text(), database="b")
        prefix = ["runuser", "-u", "postgres", "--"] if pg.as_root else []
        for script in ("login.sql", "login-nolock.sql", "login-noevict.sql"):
            for clients in (1, 8):
                pg.psql("TRUNCATE pending_logins, sessions", database="b")
                pg.psql(f"""INSERT INTO pending_logins (state_hash, binding_hash, sealed, created_at, expires_at)
                            SELECT md5(g::text) || md5((g + 1)::text), md5(g::text), decode(repeat('ab', 180), 'hex'),
                                   1, 2000000000 FROM generate_series(1, {args.pending}) g""", database="b")
                pg.psql("VACUUM ANALYZE pending_logins", database="b")
                cp = subprocess.run(prefix + [str(pg.bin / "pgbench"), "-n", "-h", str(pg.dir), "-p", str(pg.port),
                                              "-U", "gatehouse", "-f", str(BENCH / "pgbench" / script),
                                              "-c", str(clients), "-j", "2", "-T", str(args.seconds), "b"],
                                    capture_output=True, text=True)
                tps = next((line.split("=")[1].split()[0] for line in cp.stdout.splitlines()
                            if line.startswith("tps")), "failed: " + cp.stderr[-200:])
                print(f"{script:<20} {clients} clients, {args.pending} pending: {tps} logins/s")
        print("PostgreSQL", pg.psql("SHOW server_version").strip(), "fsync", pg.psql("SHOW fsync").strip())
    finally:
        pg.destroy()


if __name__ == "__main__":
    main()
