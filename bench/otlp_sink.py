"""An OTLP/HTTP collector stand-in for bench/run's traced rows: takes each POST /v1/traces, counts
its bytes and answers 200 with an empty ExportTraceServiceResponse. It decodes nothing (the e2e
suite checks the spans); it only has to keep up, so the gateway's exports succeed.

    python3 bench/otlp_sink.py PORT
"""
import http.server
import sys


class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    received = 0

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        Sink.received += len(self.rfile.read(length))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        body = str(Sink.received).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
