"""What the session store costs PostgreSQL, measured (the figures of docs/scaling.md).

    .venv/bin/python bench/store_writes.py [--sessions 50] [--synthetic 100000]

Starts a throwaway PostgreSQL (e2e/pg_server.py) with `log_statement = 'mod'`, the e2e OpenID provider
and upstream, and one gateway on that database; then, phase by phase, `--sessions` browser logins,
API calls on the cached sessions, one access-token refresh per session, logouts. For each phase it
prints, per operation: write transactions (the next transaction id, read without taking one), the
INSERT/UPDATE/DELETE statements by table (PostgreSQL's statement log), and WAL bytes
(`pg_current_wal_insert_lsn`). Then the bytes per session: the average row (`pg_column_size`) and
table + indexes per row (`pg_total_relation_size`) after copying one real session row `--synthetic`
times (fresh id hashes, same sealed size).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "e2e"))

import requests  # noqa: E402

from harness import Gateway, Provider, Upstream, login  # noqa: E402
from pg_server import PgServer  # noqa: E402

WRITE = re.compile(r"(?:statement|execute [^:]*): \s*(INSERT INTO|UPDATE|DELETE FROM)\s+(\w+)(?: SET (\w+))?",
                   re.IGNORECASE)


class Meter:
    def __init__(self, pg: PgServer, database: str):
        self.pg = pg
        self.database = database

    def snapshot(self):
        row = self.pg.psql("SELECT pg_snapshot_xmax(pg_current_snapshot()), pg_current_wal_insert_lsn()",
                           database=self.database).strip().split("|")
        return int(row[0]), row[1], self.pg.log_path.stat().st_size

    def delta(self, before, after):
        wal = int(self.pg.psql(f"SELECT pg_wal_lsn_diff('{after[1]}', '{before[1]}')").strip())
        with open(self.pg.log_path, "rb") as f:
            f.seek(before[2])
            text = f.read(after[2] - before[2]).decode(errors="replace")
        statements = Counter(f"{m.group(1).split()[0].upper()} {m.group(2)}" + (f" ({m.group(3)})" if m.group(3) else "")
                             for m in WRITE.finditer(text))
        return after[0] - before[0], statements, wal


def report(name: str, count: int, delta):
    transactions, statements, wal = delta
    per = ", ".join(f"{k} {v / count:g}" for k, v in sorted(statements.items())) or "none"
    print(f"{name:<34} {count:>5} ops  write tx/op {transactions / count:5.2f}  "
          f"WAL bytes/op {wal / count:8.0f}  statements/op: {per}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--synthetic", type=int, default=100_000)
    args = ap.parse_args()
    work = Path(tempfile_dir())
    pg = PgServer(name="postgres-bench")
    provider = upstream = gateway = None
    try:
        pg.psql("ALTER SYSTEM SET log_statement = 'mod'")
        pg.psql("SELECT pg_reload_conf()")
        database = pg.create_database()
        name = database.rsplit("/", 1)[1]
        provider = Provider(work / "provider")
        upstream = Upstream(work / "upstream")
        provider.config(access_ttl=3, refresh_access_ttl=3600)
        gateway = Gateway(provider, upstream, work / "gw", env={"GATEHOUSE_DATABASE": database,
                                                                 "GATEHOUSE_LOG_LEVEL": "warning"})
        meter = Meter(pg, name)
        n = args.sessions

        before = meter.snapshot()
        sessions = [login(gateway, provider, f"user{i}") for i in range(n)]
        report("login (/login + /callback)", n, meter.delta(before, meter.snapshot()))

        time.sleep(4)  # the access tokens (3 s) expire: the next call of each session refreshes
        before = meter.snapshot()
        for s in sessions:
            assert gateway.get(s, "/api/hello").status_code == 200
        report("API call that refreshes", n, meter.delta(before, meter.snapshot()))

        before = meter.snapshot()
        for s in sessions:
            for _ in range(20):
                assert gateway.get(s, "/api/hello").status_code == 200
        report("authenticated API call (cached)", n * 20, meter.delta(before, meter.snapshot()))

        before = meter.snapshot()
        for s in sessions[: n // 2]:
            assert gateway.post(s, "/logout").status_code == 302
        report("logout (POST /logout)", n // 2, meter.delta(before, meter.snapshot()))

        print()
        q = lambda sql: pg.psql(sql, database=name).strip()  # noqa: E731
        print("sessions row (average pg_column_size):", q("SELECT avg(pg_column_size(s.*))::int FROM sessions s"),
              "bytes; sealed column:", q("SELECT avg(pg_column_size(sealed))::int FROM sessions"), "bytes")
        print("pending_logins row:", q("SELECT coalesce(avg(pg_column_size(p.*))::int, 0) FROM pending_logins p"),
              "bytes (rows left:", q("SELECT count(*) FROM pending_logins"), ")")
        q(f"""INSERT INTO sessions (id_hash, sub, sid, created_at, last_seen_at, idle_expires_at, expires_at,
                sealed, access_expires_at, version)
              SELECT md5(g::text) || md5((g + 1)::text), 'user' || g, md5(g::text), s.created_at,
                     s.last_seen_at, s.idle_expires_at + g % 3600, s.expires_at + g % 3600, s.sealed,
                     s.access_expires_at, 1
              FROM generate_series(1, {args.synthetic}) g,
                   (SELECT * FROM sessions LIMIT 1) s""")
        q("VACUUM ANALYZE sessions")
        rows = int(q("SELECT count(*) FROM sessions"))
        total = int(q("SELECT pg_total_relation_size('sessions')"))
        heap = int(q("SELECT pg_relation_size('sessions')"))
        indexes = int(q("SELECT pg_indexes_size('sessions')"))
        toast = total - heap - indexes
        print(f"sessions at {rows} rows: total {total} bytes = {total / rows:.0f} bytes/session "
              f"(heap {heap / rows:.0f}, indexes {indexes / rows:.0f}, toast+fsm+vm {toast / rows:.0f})")
        print("PostgreSQL", q("SHOW server_version"))
    finally:
        for p in (gateway, upstream, provider):
            if p is not None:
                p.stop()
        pg.destroy()


def tempfile_dir() -> str:
    import tempfile
    return tempfile.mkdtemp(prefix="gatehouse-store-writes-")


if __name__ == "__main__":
    main()
