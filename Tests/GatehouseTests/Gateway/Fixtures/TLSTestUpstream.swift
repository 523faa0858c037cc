import Foundation

/// A small HTTPS upstream for the TLSUpstream tests: Python's `http.server` wrapped with `ssl`,
/// serving a certificate generated per run. Kept as a string so the test target has no resource files.
enum TLSTestUpstream {
    /// Size of `/big`.
    static let bigSize = 32 << 20

    static let script = #"""
import gzip, hashlib, http.server, json, random, ssl, sys, threading, time

CERT, KEY, BIG = sys.argv[1], sys.argv[2], int(sys.argv[3])
BIG_BODY = random.Random(7).randbytes(BIG)
BIG_SHA = hashlib.sha256(BIG_BODY).hexdigest()
GZIP_BODY = gzip.compress(b"hello, " * 1000)
GZIP_SHA = hashlib.sha256(GZIP_BODY).hexdigest()
CONNECTIONS = [0]
CONNECTIONS_LOCK = threading.Lock()

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        # One handler per accepted TCP connection: its number tells requests on it apart.
        super().setup()
        with CONNECTIONS_LOCK:
            CONNECTIONS[0] += 1
            self.connection_number = CONNECTIONS[0]

    def stream_body(self):
        """Reads the body without keeping it: (length, sha256, chunked)."""
        digest, length = hashlib.sha256(), 0
        chunked = self.headers.get("Transfer-Encoding", "").lower() == "chunked"

        def take(remaining):
            nonlocal length
            while remaining > 0:
                data = self.rfile.read(min(remaining, 1 << 16))
                if not data:
                    raise ConnectionError("body cut short")
                digest.update(data)
                length += len(data)
                remaining -= len(data)

        if chunked:
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                take(size)
                self.rfile.readline()
        else:
            take(int(self.headers.get("Content-Length", "0")))
        return length, digest.hexdigest(), chunked

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def send_body(self, status, body, content_type="application/json", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_any(self):
        path = self.path.split("?")[0]
        # Through the gateway the route keeps its prefix (`/api=https://…`).
        if path.startswith("/api/"):
            path = path[len("/api"):]
        if path == "/upload":
            length, sha, chunked = self.stream_body()
            answer = {"bodyLength": length, "bodySHA256": sha, "chunked": chunked,
                      "connection": self.connection_number}
            self.send_body(200, json.dumps(answer).encode())
            return
        body = self.read_body()
        if path == "/sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(5):
                event = ("data: event %d\n\n" % i).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
                time.sleep(0.3)
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/big":
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(BIG_BODY)))
            self.send_header("X-Body-SHA256", BIG_SHA)
            self.end_headers()
            view = memoryview(BIG_BODY)
            for start in range(0, len(view), 65536):
                self.wfile.write(view[start:start + 65536])
        elif path == "/slow":
            time.sleep(3)
            self.send_body(200, b"{}")
        elif path == "/redirect":
            self.send_body(302, b"moved", "text/plain", [("Location", "/echo")])
        elif path == "/gzip":
            self.send_body(200, GZIP_BODY, "text/plain", [("Content-Encoding", "gzip"), ("X-Body-SHA256", GZIP_SHA)])
        elif path == "/cut":
            # Promises 1 MiB, sends 100 kB, then drops the connection.
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(1 << 20))
            self.send_header("X-Connection", str(self.connection_number))
            self.end_headers()
            self.wfile.write(b"x" * 100000)
            self.wfile.flush()
            self.close_connection = True
        elif path == "/close":
            # Each answer ends its connection: the next request needs a new TCP and TLS connection.
            self.send_body(200, json.dumps({"connection": self.connection_number,
                                            "resumed": self.request.session_reused}).encode(),
                           extra=[("Connection", "close")])
            self.close_connection = True
        elif path == "/cookie":
            self.send_body(200, b"{}", extra=[("Set-Cookie", "upstream=1"), ("X-Upstream", "yes")])
        else:
            answer = {"method": self.command, "target": self.path, "bodyLength": len(body),
                      "bodySHA256": hashlib.sha256(body).hexdigest(), "connection": self.connection_number,
                      "headers": {k.lower(): v for k, v in self.headers.items()}}
            self.send_body(200, json.dumps(answer).encode())

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_any

class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

server = Server(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(CERT, KEY)
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"""#
}
