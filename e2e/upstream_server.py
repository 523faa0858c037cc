"""Upstream API used by the end-to-end suite: a real HTTP/1.1 server (threads,
keep-alive) that tells exactly what it received.

Endpoints (any method unless said):
  /api/echo, /echo/...   JSON: method, path (raw request target path), query (raw),
                         headers (list of [name, value] pairs as received),
                         body_length, body_sha256
  /api/hello             {"hello": "world", "authorization": <Authorization header>}
  /api/sse               text/event-stream, 5 events 300 ms apart, each flushed
  /api/big?mb=N          N MiB streamed (chunked), deterministic bytes; X-Sha256 trailer-free:
                         the sha256 is available at /__big_sha256?mb=N
  POST /api/upload       reads the body streaming: {"bytes": n, "sha256": hex}
  /api/slow?ms=N         waits N ms, then answers {"slept_ms": N}
  /api/setcookie         Set-Cookie + "Connection: X-Hop" + "X-Hop: 1" + Keep-Alive
  /api/status/<code>     answers that status
  /__log                 GET: recent requests [{method, target, headers}]; DELETE clears
Everything else under /api/ echoes too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LOG: list[dict] = []
LOG_LOCK = threading.Lock()
MIB = 1024 * 1024


def big_block() -> bytes:
    # 1 MiB of deterministic, not-too-compressible bytes
    out = bytearray()
    seed = b"gatehouse-e2e"
    i = 0
    while len(out) < MIB:
        out += hashlib.sha256(seed + i.to_bytes(4, "big")).digest()
        i += 1
    return bytes(out[:MIB])


BLOCK = big_block()


def big_sha256(mb: int) -> str:
    h = hashlib.sha256()
    for _ in range(mb):
        h.update(BLOCK)
    return h.hexdigest()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "e2e-upstream/1"

    def log_message(self, fmt, *args):
        sys.stderr.write("%s upstream %s\n" % (time.strftime("%H:%M:%S"), fmt % args))

    # -- body reading (Content-Length or chunked), streaming -------------
    def iter_body(self, bufsize=256 * 1024):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    return
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    # trailers
                    while True:
                        t = self.rfile.readline(65537)
                        if t in (b"\r\n", b"\n", b""):
                            return
                left = size
                while left:
                    chunk = self.rfile.read(min(left, bufsize))
                    if not chunk:
                        return
                    left -= len(chunk)
                    yield chunk
                self.rfile.readline(3)  # CRLF after the chunk
        else:
            left = int(self.headers.get("Content-Length") or 0)
            while left > 0:
                chunk = self.rfile.read(min(left, bufsize))
                if not chunk:
                    return
                left -= len(chunk)
                yield chunk

    def consume_body(self):
        h = hashlib.sha256()
        n = 0
        for chunk in self.iter_body():
            n += len(chunk)
            h.update(chunk)
        return n, h.hexdigest()

    def send_json(self, status, obj, extra=()):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def write_chunk(self, data: bytes):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # -- dispatch ---------------------------------------------------------
    def handle_any(self):
        target = self.path
        parts = urlsplit(target)
        path, query = parts.path, parts.query
        # raw query: everything after the first "?", byte for byte
        raw_query = target.split("?", 1)[1] if "?" in target else None
        entry = {"method": self.command, "target": target, "path": path,
                 "headers": [[k, v] for k, v in self.headers.items()], "at": time.time()}
        if path != "/__log":
            with LOG_LOCK:
                LOG.append(entry)
                del LOG[:-2000]
        qs = parse_qs(query)

        if path == "/__log":
            if self.command == "DELETE":
                with LOG_LOCK:
                    LOG.clear()
                return self.send_json(200, {"cleared": True})
            with LOG_LOCK:
                return self.send_json(200, list(LOG))
        if path == "/__big_sha256":
            return self.send_json(200, {"sha256": big_sha256(int(qs.get("mb", ["1"])[0]))})
        if path == "/__health":
            return self.send_json(200, {"ok": True})

        if path == "/api/hello":
            self.consume_body()
            return self.send_json(200, {"hello": "world",
                                        "authorization": self.headers.get("Authorization")})
        if path == "/api/sse":
            self.consume_body()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            for i in range(5):
                self.write_chunk(b"id: %d\nevent: tick\ndata: {\"n\": %d, \"t\": %.3f}\n\n"
                                 % (i, i, time.time()))
                if i < 4:
                    time.sleep(0.3)
            self.end_chunks()
            return
        if path == "/api/big":
            self.consume_body()
            mb = int(qs.get("mb", ["1"])[0])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            if qs.get("cl", ["0"])[0] == "1":
                self.send_header("Content-Length", str(mb * MIB))
                self.end_headers()
                for _ in range(mb):
                    self.wfile.write(BLOCK)
                self.wfile.flush()
            else:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for _ in range(mb):
                    self.write_chunk(BLOCK)
                self.end_chunks()
            return
        if path == "/api/upload":
            n, sha = self.consume_body()
            return self.send_json(200, {"bytes": n, "sha256": sha,
                                        "transfer_encoding": self.headers.get("Transfer-Encoding"),
                                        "content_length": self.headers.get("Content-Length")})
        if path == "/api/slow":
            self.consume_body()
            ms = int(qs.get("ms", ["1000"])[0])
            time.sleep(ms / 1000)
            return self.send_json(200, {"slept_ms": ms})
        if path == "/api/setcookie":
            self.consume_body()
            return self.send_json(200, {"ok": True}, extra=[
                ("Set-Cookie", "upstream=1; Path=/"),
                ("Set-Cookie", "other=2; Path=/; HttpOnly"),
                ("Connection", "X-Hop"),
                ("X-Hop", "1"),
                ("Keep-Alive", "timeout=5"),
                ("Proxy-Authenticate", "Basic realm=x"),
                ("X-Kept", "yes"),
            ])
        if path.startswith("/api/status/"):
            self.consume_body()
            code = int(path.rsplit("/", 1)[1])
            if code in (204, 304) or code < 200:
                self.send_response(code)
                self.end_headers()
                return
            return self.send_json(code, {"status": code})

        # echo (also the default for anything else)
        n, sha = self.consume_body()
        return self.send_json(200, {
            "method": self.command,
            "path": path,
            "target": target,
            "query": raw_query,
            "headers": [[k, v] for k, v in self.headers.items()],
            "body_length": n,
            "body_sha256": sha,
        })

    def do_GET(self):
        self.handle_any()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = do_GET


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    args = p.parse_args(argv)
    srv = Server((args.host, args.port), Handler)
    port = srv.server_address[1]
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(args.port_file + ".tmp", args.port_file)
    sys.stderr.write(f"upstream listening on http://{args.host}:{port}\n")
    sys.stderr.flush()
    srv.serve_forever()


if __name__ == "__main__":
    main()
