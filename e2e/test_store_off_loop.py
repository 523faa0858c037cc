"""No event loop waits on a database (issue 12).

Another process holds SQLite's write lock (`BEGIN IMMEDIATE`, as an admin command, a large purge or
a slow fsync would). While it is held, `/login` (which writes a pending login) must wait for it, but
static files served by the same gateway must not: the store's calls run on the gateway's store
threads, never on the event loops. Before the fix, the waiting `/login` blocked its loop thread for
the whole busy timeout (and, through the store's one connection, the other loop too), so every
static request stalled with it.

No timing threshold: the assertion is an ordering. Thirty static requests, one after another, all
complete while every `/login` is still waiting on the lock (which the test releases only afterwards).
"""

from __future__ import annotations

import subprocess
import sys
import threading

import requests

from harness import REPO, Gateway, Proc  # noqa: F401

LOCK_HOLDER = r"""
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
print("released", flush=True)
"""


class WriteLock:
    """A separate process holding SQLite's write lock on `path` until `release()`."""

    def __init__(self, path: str):
        self.proc = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, path], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "locked"

    def release(self):
        if self.proc.poll() is None:
            self.proc.stdin.write("go\n")
            self.proc.stdin.flush()
            assert self.proc.stdout.readline().strip() == "released"
        self.proc.wait(timeout=30)


def test_a_held_write_lock_delays_only_the_requests_that_need_the_store(provider, upstream, tmp_path):
    gw = Gateway(provider, upstream, tmp_path / "gw", name="gateway-store-lock")
    try:
        # Warm: the static file answers, a login can be started.
        assert requests.get(gw.url + "/app.js", timeout=30).status_code == 200
        assert requests.get(gw.url + "/login", allow_redirects=False, timeout=30).status_code == 302

        lock = WriteLock(gw.db)
        login_results: list[int | str] = []
        finished = threading.Event()
        done_count = [0]
        guard = threading.Lock()

        def one_login():
            try:
                r = requests.get(gw.url + "/login", allow_redirects=False, timeout=60)
                outcome: int | str = r.status_code
            except requests.RequestException as e:
                outcome = f"error: {e!r}"
            with guard:
                login_results.append(outcome)
                done_count[0] += 1
                if done_count[0] == 8:
                    finished.set()

        # Several logins, so that whichever loop a static request lands on has one waiting.
        logins = [threading.Thread(target=one_login, daemon=True) for _ in range(8)]
        try:
            for t in logins:
                t.start()
            statics = []
            for _ in range(30):
                with requests.Session() as fresh:  # a new connection each time: both loops serve some
                    r = fresh.get(gw.url + "/app.js", timeout=60)
                statics.append(r.status_code)
            pending_when_statics_done = 8 - done_count[0]
        finally:
            lock.release()
        assert statics == [200] * 30
        assert pending_when_statics_done == 8, (
            f"a /login finished before the statics did: {login_results} — the statics were held up by the lock")

        # After the release every login ends: a redirect to the provider, or a clean error if it
        # gave up at the store's timeout (SQLite's 5 s busy timeout); none hangs.
        assert finished.wait(timeout=60), "a /login never finished"
        for t in logins:
            t.join(timeout=5)
        assert all(outcome in (302, 500, 503) for outcome in login_results), login_results
        assert requests.get(gw.url + "/login", allow_redirects=False, timeout=30).status_code == 302
    finally:
        gw.stop()
