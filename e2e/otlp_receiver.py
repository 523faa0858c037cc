"""A small OTLP/HTTP trace receiver for the end-to-end suite (the collector side of the
gateway's OpenTelemetry export).

`OtlpReceiver` is a threaded stdlib HTTP server on 127.0.0.1 (an ephemeral port unless
told). Every POST is recorded (path, headers, raw body, when); a POST to a traces path
(`/v1/traces` unless `paths` says otherwise; `paths=None` takes any path) is decoded as an
`opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest` (opentelemetry-proto,
PyPI) into a flat list of `Span`s. How it answers is its `mode`:

  ok           200, Content-Type application/x-protobuf, an empty ExportTraceServiceResponse
  unavailable  503
  slow         sleeps `slow_seconds` (default 10), then answers like `ok`

The body is read and recorded before the answer in every mode. `wait_for(predicate,
timeout)` polls the spans received so far until the predicate gives something truthy.

Run alone for manual work: `python e2e/otlp_receiver.py --port 4318` prints each span.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

MODES = ("ok", "unavailable", "slow")

SPAN_KIND_SERVER = trace_pb2.Span.SpanKind.SPAN_KIND_SERVER
SPAN_KIND_CLIENT = trace_pb2.Span.SpanKind.SPAN_KIND_CLIENT
SPAN_KIND_INTERNAL = trace_pb2.Span.SpanKind.SPAN_KIND_INTERNAL
STATUS_UNSET = trace_pb2.Status.StatusCode.STATUS_CODE_UNSET
STATUS_OK = trace_pb2.Status.StatusCode.STATUS_CODE_OK
STATUS_ERROR = trace_pb2.Status.StatusCode.STATUS_CODE_ERROR


def any_value(v) -> object:
    """An OTLP AnyValue as a Python value (int, float, str, bool, bytes, list, dict, None)."""
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which)


def attributes(kvs) -> dict:
    return {kv.key: any_value(kv.value) for kv in kvs}


@dataclass
class Span:
    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_span_id: str  # "" for a root span
    name: str
    kind: int  # trace_pb2.Span.SpanKind
    attributes: dict
    status_code: int  # trace_pb2.Status.StatusCode
    status_message: str
    resource: dict
    scope_name: str
    scope_version: str = ""
    start_ns: int = 0
    end_ns: int = 0
    flags: int = 0
    trace_state: str = ""
    events: list = field(default_factory=list)  # [(name, {attributes})]
    links: list = field(default_factory=list)  # [(trace_id, span_id, {attributes})]
    request_index: int = -1  # which export request carried it

    @property
    def kind_name(self) -> str:
        return trace_pb2.Span.SpanKind.Name(self.kind)

    @property
    def status_name(self) -> str:
        return trace_pb2.Status.StatusCode.Name(self.status_code)

    def short(self) -> str:
        return (f"{self.kind_name.removeprefix('SPAN_KIND_')} {self.name!r} trace={self.trace_id} "
                f"span={self.span_id} parent={self.parent_span_id or '-'} "
                f"status={self.status_name.removeprefix('STATUS_CODE_')} attrs={self.attributes}")

    def strings(self):
        """Every string carried by this span (name, attribute, event, link and resource values,
        status message), for scans."""
        yield ("name", self.name)
        yield ("status.message", self.status_message)
        yield ("trace_state", self.trace_state)
        for where, attrs in [("attr", self.attributes), ("resource", self.resource)] + \
                [(f"event {n!r}", a) for n, a in self.events] + \
                [("link", a) for _, _, a in self.links]:
            for k, v in attrs.items():
                for s in _strings_of(v):
                    yield (f"{where} {k}", s)
        for n, _ in self.events:
            yield ("event name", n)


def _strings_of(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, bytes):
        yield v.decode("latin-1")
    elif isinstance(v, list):
        for x in v:
            yield from _strings_of(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings_of(x)
    elif v is not None:
        yield str(v)


def decode_spans(body: bytes, request_index: int = -1) -> list[Span]:
    req = trace_service_pb2.ExportTraceServiceRequest()
    req.ParseFromString(body)
    out: list[Span] = []
    for rs in req.resource_spans:
        resource = attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(Span(
                    trace_id=s.trace_id.hex(), span_id=s.span_id.hex(),
                    parent_span_id=s.parent_span_id.hex(), name=s.name, kind=s.kind,
                    attributes=attributes(s.attributes), status_code=s.status.code,
                    status_message=s.status.message, resource=resource,
                    scope_name=ss.scope.name, scope_version=ss.scope.version,
                    start_ns=s.start_time_unix_nano, end_ns=s.end_time_unix_nano,
                    flags=s.flags, trace_state=s.trace_state,
                    events=[(e.name, attributes(e.attributes)) for e in s.events],
                    links=[(l.trace_id.hex(), l.span_id.hex(), attributes(l.attributes))
                           for l in s.links],
                    request_index=request_index))
    return out


@dataclass
class ExportRequest:
    method: str
    path: str  # the request target as received (path and query)
    headers: dict  # lower-case name -> [values]
    body: bytes  # as received (possibly compressed)
    payload: bytes  # decompressed
    at: float
    mode: str  # how it was answered
    status: int = 0
    spans: list = field(default_factory=list)
    error: str | None = None  # why the body could not be decoded

    def header(self, name: str) -> str | None:
        v = self.headers.get(name.lower())
        return v[0] if v else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "e2e-otlp-receiver/1"
    receiver: "OtlpReceiver"  # set on the per-receiver subclass

    def log_message(self, fmt, *args):
        if self.receiver.verbose:
            sys.stderr.write("%s otlp-receiver %s\n" % (time.strftime("%H:%M:%S"), fmt % args))

    def _read_body(self) -> bytes:
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            data = b""
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    break
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data += self.rfile.read(size)
                self.rfile.readline(3)
            return data
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _answer(self, status: int, body: bytes = b"", ctype: str = "application/x-protobuf"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_POST(self):
        r = self.receiver
        body = self._read_body()
        headers: dict[str, list[str]] = {}
        for k, v in self.headers.items():
            headers.setdefault(k.lower(), []).append(v)
        mode = r.mode
        payload, error, spans = body, None, []
        enc = (self.headers.get("Content-Encoding") or "").lower().strip()
        try:
            if enc == "gzip":
                payload = gzip.decompress(body)
            elif enc == "deflate":
                payload = zlib.decompress(body)
        except Exception as e:  # noqa: BLE001
            error = f"cannot decompress ({enc}): {e!r}"
        path = self.path.split("?", 1)[0]
        is_traces = r.paths is None or path in r.paths
        with r.lock:
            index = len(r.requests)
            if error is None and is_traces:
                try:
                    spans = decode_spans(payload, index)
                except Exception as e:  # noqa: BLE001
                    error = f"not an ExportTraceServiceRequest: {e!r}"
            req = ExportRequest(self.command, self.path, headers, body, payload, time.time(), mode,
                                spans=spans, error=error)
            r.requests.append(req)
            r.spans.extend(spans)
            r.cond.notify_all()
        if not is_traces:
            req.status = 404
            return self._answer(404, b"not found", "text/plain")
        if error is not None:
            req.status = 400
            return self._answer(400, error.encode(), "text/plain")
        if mode == "unavailable":
            req.status = 503
            return self._answer(503, b"unavailable", "text/plain")
        if mode == "slow":
            time.sleep(r.slow_seconds)
        req.status = 200
        try:
            self._answer(200, trace_service_pb2.ExportTraceServiceResponse().SerializeToString())
        except (BrokenPipeError, ConnectionResetError):
            pass  # the exporter gave up waiting (its timeout)

    def do_GET(self):
        self._read_body()
        self._answer(405, b"POST only", "text/plain")

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


class OtlpReceiver:
    """A threaded OTLP/HTTP (protobuf) trace receiver. Use as a context manager or
    start()/stop(). `endpoint` is the value for OTEL_EXPORTER_OTLP_ENDPOINT."""

    def __init__(self, mode: str = "ok", slow_seconds: float = 10.0, host: str = "127.0.0.1",
                 port: int = 0, paths: set[str] | None = frozenset({"/v1/traces"}),
                 verbose: bool = False):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self._mode = mode
        self.slow_seconds = slow_seconds
        self.paths = None if paths is None else set(paths)
        self.verbose = verbose
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.requests: list[ExportRequest] = []
        self.spans: list[Span] = []
        handler = type("Handler", (_Handler,), {"receiver": self})
        self._server = _Server((host, port), handler)
        self.host = host
        self.port = self._server.server_address[1]
        self._thread: threading.Thread | None = None

    # -- lifecycle --
    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    url = endpoint

    @property
    def traces_url(self) -> str:
        return self.endpoint + "/v1/traces"

    def start(self) -> "OtlpReceiver":
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- state --
    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, value: str):
        if value not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self._mode = value

    def clear(self):
        with self.lock:
            self.requests.clear()
            self.spans.clear()

    def snapshot(self) -> list[Span]:
        with self.lock:
            return list(self.spans)

    def request_snapshot(self) -> list[ExportRequest]:
        with self.lock:
            return list(self.requests)

    def wait_for(self, predicate, timeout: float = 10.0, what: str = "spans"):
        """Wait until predicate(spans so far) is truthy; return its value. On timeout an
        AssertionError lists what was received."""
        deadline = time.time() + timeout
        with self.cond:
            while True:
                value = predicate(list(self.spans))
                if value:
                    return value
                left = deadline - time.time()
                if left <= 0:
                    break
                self.cond.wait(min(left, 0.1))
            spans = list(self.spans)
            n_requests = len(self.requests)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}; received "
                             f"{n_requests} export request(s), {len(spans)} span(s):\n"
                             + describe(spans))

    def wait_for_requests(self, n: int = 1, timeout: float = 10.0) -> list[ExportRequest]:
        deadline = time.time() + timeout
        with self.cond:
            while len(self.requests) < n:
                left = deadline - time.time()
                if left <= 0:
                    raise AssertionError(f"timed out after {timeout}s waiting for {n} export "
                                         f"request(s); got {len(self.requests)}")
                self.cond.wait(min(left, 0.1))
            return list(self.requests)


def describe(spans: list[Span], limit: int = 80) -> str:
    lines = [s.short() for s in spans[:limit]]
    if len(spans) > limit:
        lines.append(f"... and {len(spans) - limit} more")
    return "\n".join(lines) or "(none)"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=4318)
    p.add_argument("--mode", choices=MODES, default="ok")
    p.add_argument("--slow-seconds", type=float, default=10.0)
    args = p.parse_args(argv)
    rcv = OtlpReceiver(args.mode, args.slow_seconds, port=args.port, verbose=True).start()
    print(f"OTEL_EXPORTER_OTLP_ENDPOINT={rcv.endpoint}", flush=True)
    seen = 0
    try:
        while True:
            time.sleep(0.2)
            spans = rcv.snapshot()
            for s in spans[seen:]:
                print(s.short(), flush=True)
            seen = len(spans)
    except KeyboardInterrupt:
        rcv.stop()


if __name__ == "__main__":
    main()
