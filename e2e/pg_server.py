"""A throwaway PostgreSQL server for the end-to-end tests (the Python twin of
Tests/TestSupport/PostgresTestServer.swift).

`initdb` in a fresh temporary directory, `postgres` on a free loopback port with password (SCRAM)
authentication over TCP, stopped and deleted by `destroy()`. initdb refuses to run as root, so under
root the directory is given to the `postgres` user of the Debian package and the binaries run through
`runuser -u postgres --`. The server binaries come from Debian `postgresql` (`e2e/setup.sh` installs
it); without them `PgServer()` raises with a clear message (the tests fail rather than skip).

    pg = PgServer()                  # initdb + start
    uri = pg.create_database()       # postgresql://gatehouse:…@127.0.0.1:PORT/t_…
    pg.stop_server(); pg.start_server()   # a restart on the same port and data
    pg.destroy()

Run as a script it starts a server, prints its URI and waits for Ctrl-C (manual work).
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from harness import ARTIFACTS, free_port

USER = "gatehouse"
PASSWORD = "pg-e2e-S3cret-pw"


class PgServerError(RuntimeError):
    pass


# Servers (and bouncers) not destroyed yet: stopped and deleted when the Python process exits (postgres runs under
# runuser in its own session, so the harness's process-group cleanup would not reach it).
_LIVE: list = []


@atexit.register
def _destroy_live():
    for server in list(_LIVE):
        server.destroy()


def find_binaries() -> Path:
    """The newest /usr/lib/postgresql/*/bin with initdb (or $GATEHOUSE_PG_BIN)."""
    override = os.environ.get("GATEHOUSE_PG_BIN")
    if override:
        if not (Path(override) / "initdb").exists():
            raise PgServerError(f"GATEHOUSE_PG_BIN={override} holds no initdb: install the Debian package `postgresql`")
        return Path(override)
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    if not candidates:
        raise PgServerError(
            "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin (initdb, postgres): "
            "install the Debian package `postgresql` (`bash e2e/setup.sh` does) or set GATEHOUSE_PG_BIN")
    return Path(candidates[-1]).parent


class PgServer:
    def __init__(self, name: str = "postgres"):
        self.bin = find_binaries()
        self.as_root = os.geteuid() == 0
        self.dir = Path(tempfile.mkdtemp(prefix="gatehouse-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.name = name
        self.proc: subprocess.Popen | None = None
        log_dir = ARTIFACTS / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"{name}.log"
        (self.dir / "pwfile").write_text(PASSWORD)
        if self.as_root:
            subprocess.run(["chown", "-R", "postgres:postgres", str(self.dir)], check=True)
        try:
            self._run([str(self.bin / "initdb"), "-D", str(self.data), "-U", USER,
                       "--pwfile", str(self.dir / "pwfile"), "--auth-local=trust",
                       "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync"], as_postgres=True)
            self.start_server()
        except Exception:
            self.destroy()
            raise
        _LIVE.append(self)

    # -- URIs and SQL --
    def uri(self, database: str = "postgres", password: str | None = PASSWORD) -> str:
        auth = f"{USER}:{password}" if password is not None else USER
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        name = "t_" + uuid.uuid4().hex
        self.psql(f"CREATE DATABASE {name}")
        return self.uri(name)

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Runs SQL as the superuser on the server's socket; returns psql's unaligned output."""
        cp = self._run([str(self.bin / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                        "-h", str(self.dir), "-p", str(self.port), "-U", USER, "-d", database, "-c", sql])
        return cp.stdout

    # -- lifecycle --
    def start_server(self, timeout: float = 60.0):
        """Starts postgres (again) on the same port and data; returns once it accepts connections."""
        argv = self._prefix() + [
            str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.dir),
            "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
            "-c", "full_page_writes=off", "-c", "max_connections=200"]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            ready = subprocess.run([str(self.bin / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)])
            if ready.returncode == 0:
                return self
            time.sleep(0.1)
        tail = self.log_path.read_text(errors="replace")[-2000:] if self.log_path.exists() else ""
        raise PgServerError(f"PostgreSQL did not start on port {self.port}:\n{tail}")

    def stop_server(self, timeout: float = 30.0):
        """Fast shutdown (open connections are closed); waits for the postmaster to exit."""
        if self.proc is None:
            return
        pid = self._postmaster_pid()
        try:
            if pid:
                os.kill(pid, signal.SIGINT)
            else:
                self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            if pid:
                try:
                    os.kill(pid, signal.SIGQUIT)
                except ProcessLookupError:
                    pass
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def destroy(self):
        self.stop_server()
        shutil.rmtree(self.dir, ignore_errors=True)
        if self in _LIVE:
            _LIVE.remove(self)

    # -- helpers --
    def _prefix(self) -> list[str]:
        return ["runuser", "-u", "postgres", "--"] if self.as_root else []

    def _postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def _run(self, argv: list[str], as_postgres: bool = False) -> subprocess.CompletedProcess:
        cp = subprocess.run((self._prefix() if as_postgres else []) + argv, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=120)
        if cp.returncode != 0:
            raise PgServerError(f"{' '.join(argv)} failed ({cp.returncode}): {cp.stdout}{cp.stderr}")
        return cp


class PgBouncer:
    """PgBouncer (Debian `pgbouncer`) in transaction mode in front of `server`, on a free loopback
    port, with ONE server connection per database: every client transaction runs on that shared
    connection, so anything a client left on it (a session SET, a named prepared statement, a
    session advisory lock) would be seen by the next client. `uri(database)` goes through it."""

    def __init__(self, server: PgServer, name: str = "pgbouncer", pool_size: int = 1):
        binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
        if not Path(binary).exists():
            raise PgServerError("pgbouncer not found: install the Debian package `pgbouncer` (`bash e2e/setup.sh` does)")
        self.server = server
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="gatehouse-pgbouncer-"))
        self.log_path = ARTIFACTS / "logs" / f"{name}.log"
        (self.dir / "userlist.txt").write_text(f'"{USER}" "{PASSWORD}"\n')
        (self.dir / "pgbouncer.ini").write_text(f"""[databases]
* = host=127.0.0.1 port={server.port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = {self.dir}/userlist.txt
pool_mode = transaction
default_pool_size = {pool_size}
max_client_conn = 200
pidfile = {self.dir}/pgbouncer.pid
""")
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", "postgres:postgres", str(self.dir)], check=True)
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(prefix + [binary, str(self.dir / "pgbouncer.ini")], stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            ready = subprocess.run([str(server.bin / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)])
            if ready.returncode == 0:
                _LIVE.append(self)
                return
            time.sleep(0.1)
        self.destroy()
        raise PgServerError(f"pgbouncer did not start on port {self.port}: {self.log_path.read_text(errors='replace')[-2000:]}")

    def uri(self, database: str) -> str:
        return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def destroy(self):
        if self.proc.poll() is None:
            pid = None
            try:
                pid = int((self.dir / "pgbouncer.pid").read_text().strip())
            except (OSError, ValueError):
                pass
            try:
                # SIGTERM: immediate shutdown (SIGINT waits for clients in PgBouncer 1.18).
                os.kill(pid, signal.SIGTERM) if pid else self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)
        if self in _LIVE:
            _LIVE.remove(self)


if __name__ == "__main__":
    server = PgServer()
    print(server.create_database(), flush=True)
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        server.destroy()
