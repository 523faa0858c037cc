"""A hostile upstream for the proxy-abuse tests: raw sockets, answers written byte for byte.

    python3 hostile_upstream.py [--tls CERT KEY] [--port-file PATH]
    # prints its port on the first line of stdout (and writes it to PATH)

Used by e2e/test_proxy_abuse.py (plain http) and by the Swift TLS hardening scenarios (with
--tls). Every request it reads is counted (GET /_stats; POST /_reset clears), by method and path,
with the number of the TCP connection that carried it.

Paths (any prefix before the last segment is ignored, so /api/x and /x are the same):
  /echo          JSON: method, target, headers (name/value pairs), body length, connection number
  /tunnel        200 with no length, as if CONNECT had opened a tunnel; every later request on that
                 connection is answered with the TUNNEL_SECRET answer (bytes "from the tunnel")
  /switch        101 Switching Protocols (asked for or not), then the same as /tunnel
  /drop-first    the first request to it on a reused connection: counted, then the connection is
                 closed without an answer; after that (and on fresh connections): 200 "done"
  /cl-conflict   Content-Length: 5 and Content-Length: 12, 12 bytes
  /cl-list       Content-Length: 5, 12
  /cl-sign       Content-Length: +5
  /cl-te         Content-Length and Transfer-Encoding: chunked
  /bad-chunk     chunked with a malformed chunk size after a first good chunk
  /head-length   Content-Length: 42 and (for GET) 42 bytes; HEAD gets the head alone
  /no-content    204 followed by bytes that look like another answer
  /interim       100 Continue and 103 Early Hints, then 200 "final"
  /longer        Content-Length: 5 followed by 5 bytes and the SMUGGLED answer right behind
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import sys
import threading

TUNNEL_SECRET = b"TUNNEL-SECRET-OF-ANOTHER-USER"
SMUGGLED = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 8\r\n\r\nSMUGGLED")

lock = threading.Lock()
stats = {"requests": [], "connections": 0}
drop_done = {"done": False}


def answer(status: int, body: bytes, reason="OK", extra=(), content_type="text/plain") -> bytes:
    head = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
    head += [f"{k}: {v}" for k, v in extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def tunnel_answer() -> bytes:
    return answer(200, TUNNEL_SECRET)


class Conn:
    def __init__(self, sock, number):
        self.sock = sock
        self.number = number
        self.buf = b""
        self.served = 0
        self.tunnel = False

    def fill(self) -> bool:
        data = self.sock.recv(65536)
        if not data:
            return False
        self.buf += data
        return True

    def read_head(self):
        while b"\r\n\r\n" not in self.buf:
            if not self.fill():
                return None
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = (lines[0].split(" ") + ["", ""])[:3]
        headers = []
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers.append([name.strip(), value.strip()])
        return method, target, headers

    def read_body(self, headers) -> bytes:
        lower = {k.lower(): v for k, v in headers}
        if "chunked" in lower.get("transfer-encoding", "").lower():
            body = b""
            while True:
                while b"\r\n" not in self.buf:
                    if not self.fill():
                        return body
                line, self.buf = self.buf.split(b"\r\n", 1)
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    while b"\r\n\r\n" not in b"\r\n" + self.buf:
                        if not self.fill():
                            return body
                    _, self.buf = (b"\r\n" + self.buf).split(b"\r\n\r\n", 1)
                    return body
                while len(self.buf) < size + 2:
                    if not self.fill():
                        return body
                body += self.buf[:size]
                self.buf = self.buf[size + 2:]
        length = int(lower.get("content-length", "0") or "0")
        while len(self.buf) < length:
            if not self.fill():
                break
        body, self.buf = self.buf[:length], self.buf[length:]
        return body


def serve(conn: Conn):
    try:
        while True:
            request = conn.read_head()
            if request is None:
                return
            method, target, headers = request
            body = conn.read_body(headers)
            path = target.split("?")[0]
            name = "/" + path.rstrip("/").rsplit("/", 1)[-1]
            reused = conn.served > 0
            conn.served += 1
            with lock:
                stats["requests"].append({"method": method, "path": path, "connection": conn.number,
                                          "reused": reused, "tunnel": conn.tunnel})
            if name == "/_stats":
                with lock:
                    conn.sock.sendall(answer(200, json.dumps(stats).encode(), content_type="application/json"))
                continue
            if name == "/_reset":
                with lock:
                    stats["requests"].clear()
                    drop_done["done"] = False
                conn.sock.sendall(answer(200, b"{}", content_type="application/json"))
                continue
            if conn.tunnel:
                # The connection is a tunnel now: whatever comes is "tunnel traffic", answered with
                # bytes that belong to whoever opened it.
                conn.sock.sendall(tunnel_answer())
                continue
            if name == "/echo":
                echo = {"method": method, "target": target, "headers": headers, "bodyLength": len(body),
                        "connection": conn.number}
                conn.sock.sendall(answer(200, json.dumps(echo).encode(), content_type="application/json"))
            elif name == "/tunnel":
                conn.tunnel = True
                conn.sock.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            elif name == "/switch":
                conn.tunnel = True
                conn.sock.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: tunnel\r\n\r\n")
            elif name == "/drop-first":
                with lock:
                    drop = reused and not drop_done["done"]
                    if drop:
                        drop_done["done"] = True
                if drop:
                    conn.sock.shutdown(socket.SHUT_RDWR)
                    return
                conn.sock.sendall(answer(200, b"done"))
            elif name == "/cl-conflict":
                conn.sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 12\r\n\r\nhello world!")
            elif name == "/cl-list":
                conn.sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5, 12\r\n\r\nhello world!")
            elif name == "/cl-sign":
                conn.sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello")
            elif name == "/cl-te":
                conn.sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  b"5\r\nhello\r\n0\r\n\r\n")
            elif name == "/bad-chunk":
                conn.sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  b"5\r\nhello\r\nzz\r\n" + SMUGGLED + b"\r\n0\r\n\r\n")
            elif name == "/head-length":
                data = b"x" * 42
                conn.sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 42\r\n\r\n"
                                  + (b"" if method == "HEAD" else data))
            elif name == "/no-content":
                conn.sock.sendall(b"HTTP/1.1 204 No Content\r\n\r\n" + SMUGGLED)
            elif name == "/interim":
                conn.sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
                                  + answer(200, b"final"))
            elif name == "/longer":
                conn.sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" + SMUGGLED)
            else:
                conn.sock.sendall(answer(404, b"unknown"))
    except (OSError, ValueError, ssl.SSLError):
        return
    finally:
        try:
            conn.sock.close()
        except OSError:
            pass


def main():
    context = None
    port_file = None
    args = sys.argv[1:]
    while args:
        if args[0] == "--tls" and len(args) >= 3:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(args[1], args[2])
            args = args[3:]
        elif args[0] == "--port-file" and len(args) >= 2:
            port_file = args[1]
            args = args[2:]
        else:
            sys.exit(f"unknown arguments: {args}")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    if port_file:
        with open(port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(port_file + ".tmp", port_file)
    print(port, flush=True)
    while True:
        sock, _ = listener.accept()
        with lock:
            stats["connections"] += 1
            number = stats["connections"]

        def start(sock=sock, number=number):
            if context is not None:
                try:
                    sock = context.wrap_socket(sock, server_side=True)
                except (OSError, ssl.SSLError):
                    sock.close()
                    return
            serve(Conn(sock, number))

        threading.Thread(target=start, daemon=True).start()


if __name__ == "__main__":
    main()
