"""A TCP fault proxy for the end-to-end suite (issue 38, "Hold under faults and overload").

Placed between the gateway and one of its dependencies (PostgreSQL, the OpenID provider, an upstream
API): it listens on a free loopback port, forwards every connection to a loopback target, and on
command makes that dependency misbehave the way networks and servers do. Standard library only
(asyncio on one daemon thread of the test process); the tests call it directly:

    with FaultProxy(("127.0.0.1", pg.port), name="pg") as proxy:   # proxy.port, proxy.url
        ...                                  # pass-through
        proxy.blackhole()                    # a partition
        proxy.pass_through()                 # healed

Faults (each call replaces the previous one; it has taken effect when the call returns):

| call | new connections | connections already open |
|---|---|---|
| `pass_through()` | forwarded | forwarded |
| `latency(s, at="chunk", direction="both")` | forwarded, every chunk delayed `s` | every chunk delayed `s` |
| `latency(s, at="connect")` | the target is dialled `s` late | forwarded |
| `drop(close_existing=False)` | accepted and closed at once, nothing forwarded (FIN; the kernel sends RST instead when the client's first bytes had already arrived) | kept (`close_existing`: closed with FIN) |
| `reset()` | accepted and reset at once (RST: `SO_LINGER` 0) | reset, both sides |
| `blackhole()` | accepted, never answered, never forwarded (bytes read and discarded) | a connection that carries a byte while the hole lasts is dead from then on (that byte and all later ones, both ways, are discarded; it is never answered again); an idle one survives, as through a short partition |
| `cut_after(n, direction="down", how="close", once=True)` | forwarded | forwarded until `n` more bytes (counted from the call, per connection) have passed in `direction` (`"down"`: target → client, `"up"`: client → target); exactly those are forwarded, then both sides are closed (`how="close"`: FIN, sent in one segment with the last bytes, as by a server that wrote them and exited) or reset (`"reset"`; the kernel may then drop bytes still in flight, as on a real network). `once`: only the first connection to get there is cut, then the proxy passes through again |

`reset_all()` resets every open connection now without changing the fault (what a crashed and
restarted server looks like); `close_all()` closes them with FIN.

Bounded and deterministic: loopback only (listen and target), at most `max_connections` open
connections (more are reset at once), a target that does not accept within `connect_timeout` resets
the client; everything is stopped by `stop()` (the fixture's teardown), at interpreter exit, or by the
proxy itself after `lifetime` seconds. Every connection's fate and byte counts are kept
(`connections()`, `events()`) and written to `test-artifacts/logs/fault-proxy-NAME.log` at `stop()`.
"""

from __future__ import annotations

import asyncio
import atexit
import ipaddress
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

try:
    from harness import ARTIFACTS
except ImportError:  # used outside the suite
    ARTIFACTS = Path("test-artifacts")

PASS, LATENCY, DROP, RESET, BLACKHOLE, CUT = "pass", "latency", "drop", "reset", "blackhole", "cut"
UP, DOWN = "up", "down"  # client → target, target → client

_LIVE: list["FaultProxy"] = []


@atexit.register
def _stop_live():
    for proxy in list(_LIVE):
        proxy.stop()


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _arm_rst(sock: socket.socket | None):
    """Make the coming close() send RST (SO_LINGER on, timeout 0)."""
    if sock is None:
        return
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass


def _send_fin(sock: socket.socket | None):
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _close(sock: socket.socket | None):
    if sock is None:
        return
    try:
        sock.close()
    except OSError:
        pass


@dataclass
class Fault:
    kind: str = PASS
    delay: float = 0.0
    at: str = "chunk"          # latency: "chunk" or "connect"
    direction: str = "both"    # latency: "up", "down", "both"; cut: "up" or "down"
    n: int = 0                 # cut: bytes to let through first
    how: str = "close"         # cut: "close" (FIN) or "reset" (RST)
    once: bool = True          # cut: the first connection only
    spent: bool = False        # cut: a `once` cut happened

    def applies(self, direction: str) -> bool:
        return self.direction in ("both", direction)


@dataclass
class Connection:
    """What the proxy knows of one accepted connection (read it; the proxy's thread writes it)."""
    id: int
    opened: float
    fault_at_accept: str
    # What the fault did to it: open, forwarded, dropped, reset, blackholed (accepted into the hole),
    # dead (fell into the hole), cut, over_limit, target_unreachable, or how it ended otherwise.
    fate: str = "open"
    ended: str | None = None   # how it was closed: closed, reset_all, cut, proxy stopped, ...
    sent: dict = field(default_factory=lambda: {UP: 0, DOWN: 0})       # bytes forwarded
    discarded: dict = field(default_factory=lambda: {UP: 0, DOWN: 0})  # bytes swallowed
    closed: float | None = None
    dead: bool = False         # black-holed: never forwards again
    cut_base: dict = field(default_factory=lambda: {UP: 0, DOWN: 0})
    client: socket.socket | None = field(default=None, repr=False)
    target: socket.socket | None = field(default=None, repr=False)
    tasks: list = field(default_factory=list, repr=False)

    @property
    def is_open(self) -> bool:
        return self.closed is None


class FaultProxy:
    def __init__(self, target: tuple[str, int], name: str = "fault-proxy", listen_host: str = "127.0.0.1",
                 max_connections: int = 256, connect_timeout: float = 5.0, lifetime: float = 900.0,
                 start: bool = True):
        host, port = target
        if not _is_loopback(host) or not _is_loopback(listen_host):
            raise ValueError(f"fault proxy is loopback only (target {host}, listen {listen_host})")
        self.target = (host, int(port))
        self.name = name
        self.listen_host = listen_host
        self.max_connections = max_connections
        self.connect_timeout = connect_timeout
        self.lifetime = lifetime
        self.port: int | None = None
        self._fault = Fault()
        self._conns: dict[int, Connection] = {}
        self._history: list[Connection] = []
        self._events: list[tuple[float, str]] = []
        self._next_id = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._listener: socket.socket | None = None
        self._accept_task: asyncio.Task | None = None
        self._stopped = threading.Event()
        self._t0 = time.monotonic()
        if start:
            self.start()

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        return f"http://{self.listen_host}:{self.port}"

    def start(self) -> "FaultProxy":
        listener = socket.socket(socket.AF_INET6 if ":" in self.listen_host else socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.listen_host, 0))
        listener.listen(128)
        listener.setblocking(False)
        self._listener = listener
        self.port = listener.getsockname()[1]
        ready = threading.Event()

        def run():
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            accept = self._accept_task = loop.create_task(self._accept_loop())
            expiry = loop.call_later(self.lifetime, lambda: loop.create_task(self._shutdown("lifetime over")))
            loop.call_soon(ready.set)
            try:
                loop.run_forever()
            finally:
                expiry.cancel()
                accept.cancel()
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for t in pending:
                    t.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.close()

        self._thread = threading.Thread(target=run, name=f"fault-proxy-{self.name}", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fault proxy did not start")
        _LIVE.append(self)
        self._event(f"listening on {self.listen_host}:{self.port} -> {self.target[0]}:{self.target[1]}")
        return self

    def stop(self):
        """Closes the listener and resets every connection; idempotent."""
        if self._stopped.is_set():
            return
        loop = self._loop
        if loop is not None and loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown("stopped"), loop).result(10)
            except Exception:  # noqa: BLE001 - best effort at teardown
                loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._stopped.set()
        if self in _LIVE:
            _LIVE.remove(self)
        self._write_log()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    async def _shutdown(self, why: str):
        self._event(f"shutdown: {why}")
        if self._accept_task is not None:
            self._accept_task.cancel()
        if self._listener is not None:
            self._loop.call_soon(_close, self._listener)
        for conn in list(self._conns.values()):
            self._kill(conn, "reset", "proxy stopped")
        self._loop.call_soon(self._loop.stop)

    # ------------------------------------------------------------------ commands (any thread)

    def pass_through(self):
        self._set(Fault(PASS))

    def latency(self, seconds: float, at: str = "chunk", direction: str = "both"):
        assert at in ("chunk", "connect") and direction in ("up", "down", "both")
        assert 0 <= seconds <= 120, "bounded latency only"
        self._set(Fault(LATENCY, delay=seconds, at=at, direction=direction))

    def drop(self, close_existing: bool = False):
        self._set(Fault(DROP), existing="close" if close_existing else None)

    def reset(self):
        self._set(Fault(RESET), existing="reset")

    def blackhole(self):
        self._set(Fault(BLACKHOLE))

    def cut_after(self, n: int, direction: str = DOWN, how: str = "close", once: bool = True):
        assert n >= 0 and direction in (UP, DOWN) and how in ("close", "reset")
        self._set(Fault(CUT, n=n, direction=direction, how=how, once=once))

    def reset_all(self):
        self._call(self._kill_all("reset"))

    def close_all(self):
        self._call(self._kill_all("close"))

    # ------------------------------------------------------------------ observation (any thread)

    @property
    def fault(self) -> str:
        return self._fault.kind

    def connections(self) -> list[Connection]:
        """Every connection accepted so far, oldest first (snapshots of live objects)."""
        return list(self._history)

    def open_connections(self) -> list[Connection]:
        return [c for c in self._history if c.is_open]

    def accepted(self) -> int:
        return len(self._history)

    def events(self) -> list[str]:
        return [f"{t:8.3f} {what}" for t, what in self._events]

    def wait_for(self, predicate, timeout: float = 10.0, interval: float = 0.02) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self):
                return True
            time.sleep(interval)
        return bool(predicate(self))

    # ------------------------------------------------------------------ internals (the proxy's thread)

    def _event(self, what: str):
        self._events.append((time.monotonic() - self._t0, what))
        if len(self._events) > 10_000:
            del self._events[:5_000]

    def _call(self, coro):
        if self._loop is None or not self._loop.is_running():
            coro.close()
            raise RuntimeError("fault proxy is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    def _set(self, fault: Fault, existing: str | None = None):
        self._call(self._apply(fault, existing))

    async def _apply(self, fault: Fault, existing: str | None):
        self._fault = fault
        self._event(f"fault -> {fault.kind} {self._describe(fault)}")
        if fault.kind == CUT:
            for conn in self._conns.values():
                conn.cut_base = dict(conn.sent)
        if existing:
            await self._kill_all(existing)

    @staticmethod
    def _describe(f: Fault) -> str:
        if f.kind == LATENCY:
            return f"{f.delay}s at {f.at} ({f.direction})"
        if f.kind == CUT:
            return f"after {f.n} bytes {f.direction}, {f.how}{' once' if f.once else ''}"
        return ""

    async def _kill_all(self, how: str):
        for conn in list(self._conns.values()):
            self._kill(conn, how, f"{how}_all")

    def _kill(self, conn: Connection, how: str, fate: str):
        if not conn.is_open:
            return
        current = asyncio.current_task()
        for t in conn.tasks:
            if t is not current:
                t.cancel()
        prepare = _arm_rst if how == "reset" else _send_fin
        prepare(conn.client)
        prepare(conn.target)
        # The close itself runs after the cancelled reads and writes have unregistered their file
        # descriptors (their callbacks were scheduled by cancel(), before this one), so a
        # descriptor number reused by the next accepted connection is never unregistered by mistake.
        self._loop.call_soon(_close, conn.client)
        self._loop.call_soon(_close, conn.target)
        if conn.fate in ("open", "forwarded"):
            conn.fate = fate  # a black-holed or dead connection keeps that fate
        conn.ended = fate
        conn.closed = time.monotonic()
        self._conns.pop(conn.id, None)
        self._event(f"#{conn.id} {fate} (up {conn.sent[UP]}, down {conn.sent[DOWN]}, "
                    f"discarded {conn.discarded[UP]}/{conn.discarded[DOWN]})")

    async def _accept_loop(self):
        loop = asyncio.get_running_loop()
        while True:
            try:
                client, _ = await loop.sock_accept(self._listener)
            except (OSError, asyncio.CancelledError):
                return
            client.setblocking(False)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._next_id += 1
            conn = Connection(self._next_id, time.monotonic(), self._fault.kind, client=client)
            self._history.append(conn)
            self._conns[conn.id] = conn
            task = loop.create_task(self._serve(conn))
            conn.tasks.append(task)

    async def _serve(self, conn: Connection):
        loop = asyncio.get_running_loop()
        fault = self._fault
        if len(self._conns) > self.max_connections:
            return self._kill(conn, "reset", "over_limit")
        if fault.kind == DROP:
            return self._kill(conn, "close", "dropped")
        if fault.kind == RESET:
            return self._kill(conn, "reset", "reset")
        if fault.kind == BLACKHOLE:
            conn.dead = True
            conn.fate = "blackholed"
            self._event(f"#{conn.id} accepted into the black hole")
            return await self._swallow(conn)
        if fault.kind == LATENCY and fault.at == "connect":
            await asyncio.sleep(fault.delay)
            if not conn.is_open:
                return
        target = socket.socket(socket.AF_INET6 if ":" in self.target[0] else socket.AF_INET, socket.SOCK_STREAM)
        target.setblocking(False)
        conn.target = target
        try:
            await asyncio.wait_for(loop.sock_connect(target, self.target), self.connect_timeout)
        except (OSError, asyncio.TimeoutError) as e:
            self._event(f"#{conn.id} target refused: {e!r}")
            return self._kill(conn, "reset", "target_unreachable")
        target.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.fate = "forwarded"
        self._event(f"#{conn.id} forwarded")
        up = loop.create_task(self._pump(conn, UP, conn.client, target))
        down = loop.create_task(self._pump(conn, DOWN, target, conn.client))
        conn.tasks += [up, down]
        await asyncio.gather(up, down, return_exceptions=True)
        if conn.is_open:
            self._kill(conn, "close", "closed")

    async def _swallow(self, conn: Connection):
        """A black-holed new connection: read and discard until the client gives up."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                data = await loop.sock_recv(conn.client, 65536)
            except OSError:
                data = b""
            if not data:
                return self._kill(conn, "close", "blackholed")
            conn.discarded[UP] += len(data)

    async def _pump(self, conn: Connection, direction: str, src: socket.socket, dst: socket.socket):
        loop = asyncio.get_running_loop()
        while True:
            try:
                data = await loop.sock_recv(src, 65536)
            except ConnectionResetError:
                # A reset on one side is passed on as a reset to the other.
                return self._kill(conn, "reset", f"reset_by_{'client' if direction == UP else 'target'}")
            except OSError:
                data = b""
            if not data:
                if conn.dead:
                    return self._kill(conn, "close", "dead")
                try:
                    dst.shutdown(socket.SHUT_WR)  # pass the half-close on
                except OSError:
                    pass
                return
            fault = self._fault
            if fault.kind == BLACKHOLE and not conn.dead:
                conn.dead = True
                conn.fate = "dead"
                self._event(f"#{conn.id} fell into the black hole ({direction})")
            if conn.dead:
                conn.discarded[direction] += len(data)
                continue
            if fault.kind == LATENCY and fault.at == "chunk" and fault.applies(direction):
                await asyncio.sleep(fault.delay)
            if fault.kind == CUT and fault.direction == direction and not fault.spent:
                budget = fault.n - (conn.sent[direction] - conn.cut_base[direction])
                if len(data) >= budget:
                    head = data[:max(0, budget)]
                    if fault.how == "close":
                        # Corked, the last bytes wait in the send queue and the FIN is tacked onto
                        # them: they arrive in one segment, as from a server that wrote its last
                        # bytes and exited (and the receiver cannot read them before the FIN).
                        try:
                            dst.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
                        except OSError:
                            pass
                    if head and not await self._send(conn, direction, dst, head):
                        return
                    if fault.once:
                        fault.spent = True
                        self._fault = Fault(PASS)
                    self._event(f"#{conn.id} cut after {fault.n} bytes {direction} ({fault.how})")
                    return self._kill(conn, fault.how, "cut")
            if not await self._send(conn, direction, dst, data):
                return

    async def _send(self, conn: Connection, direction: str, dst: socket.socket, data: bytes) -> bool:
        try:
            await asyncio.get_running_loop().sock_sendall(dst, data)
        except OSError:
            self._kill(conn, "reset", f"send_failed_{direction}")
            return False
        conn.sent[direction] += len(data)
        return True

    def _write_log(self):
        try:
            logs = Path(ARTIFACTS) / "logs"
            logs.mkdir(parents=True, exist_ok=True)
            with open(logs / f"fault-proxy-{self.name}.log", "a") as f:
                f.write("\n".join(self.events()) + "\n")
        except OSError:
            pass
