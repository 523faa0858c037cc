"""OpenTelemetry trace export (SPEC "OpenTelemetry traces"), against otlp_receiver.py as the
collector, the real provider and the echo upstream.

SPEC: `OTEL_EXPORTER_OTLP_ENDPOINT` (the gateway POSTs to `/v1/traces` there) or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is); `OTEL_EXPORTER_OTLP_HEADERS` sent on each
export; `OTEL_SERVICE_NAME` (default `gatehouse`); `OTEL_RESOURCE_ATTRIBUTES`; `OTEL_TRACES_SAMPLER`
(`always_on`, `always_off`, `traceidratio`, `parentbased_always_on` (default),
`parentbased_always_off`, `parentbased_traceidratio`) with `OTEL_TRACES_SAMPLER_ARG`;
`OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`,
`OTEL_EXPORTER_OTLP_TIMEOUT`. An invalid value stops `serve` with exit 64 naming the variable.
OTLP/HTTP protobuf bodies; remaining spans are flushed on SIGTERM.

One SERVER span per request (`"{METHOD} {http.route}"`, `http.request.method`, `http.route`,
`http.response.status_code`, `url.path`, `url.scheme`; ERROR when >= 500; an incoming sampled
`traceparent` gives its trace id and parent). A CLIENT span per upstream call (its id is the
parent id in the `traceparent` the upstream receives), per provider call (`gatehouse.provider`,
`gatehouse.operation`, ...) and per session-store operation (`db.system.name`,
`db.operation.name`) made while serving a request, each a child of the request's server span.
No attribute or event value holds a token, code, verifier, state, nonce, cookie value, query
string or the user's email. `/metrics` has `gatehouse_otel_spans_dropped_total`. A collector that
is down, slow or answers 503 changes no answer and adds no latency; spans that cannot be queued
are dropped and counted.
"""

from __future__ import annotations

import base64
import re
import secrets
import subprocess
import time

import pytest
import requests

from harness import (free_port, login, q1, run_cli, set_cookie_headers, parse_cookie)
from otlp_receiver import (SPAN_KIND_CLIENT, SPAN_KIND_SERVER, STATUS_ERROR, OtlpReceiver,
                           describe)

DROPPED = "gatehouse_otel_spans_dropped_total"
HEX32 = re.compile(r"^[0-9a-f]{32}$")
HEX16 = re.compile(r"^[0-9a-f]{16}$")
DB_SYSTEMS = {"sqlite", "postgresql"}
OPERATIONS = {"discovery", "jwks", "token", "refresh", "userinfo", "par", "revocation",
              "token_exchange"}


@pytest.fixture(autouse=True)
def _binary():
    from conftest import _require_binary
    _require_binary()


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def new_ids() -> tuple[str, str]:
    """A fresh (trace id, parent span id) pair, lower-case hex, never all zeros."""
    return secrets.token_hex(16), secrets.token_hex(8)


def traceparent(trace: str, parent: str, flags: str = "01") -> str:
    return f"00-{trace}-{parent}-{flags}"


def otel_env(endpoint: str, **extra) -> dict:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def open_routes(upstream) -> str:
    """/api (auth=user) and /open (auth=none) on the echo upstream."""
    return f"/api={upstream.url},/open={upstream.url}/api;auth=none"


def echo_headers(r: requests.Response) -> dict[str, list[str]]:
    assert r.status_code == 200, f"{r.status_code}: {r.text[:300]}"
    out: dict[str, list[str]] = {}
    for k, v in r.json()["headers"]:
        out.setdefault(k.lower(), []).append(v)
    return out


def servers(spans, trace: str | None = None, route: str | None = None, path: str | None = None):
    return [s for s in spans if s.kind == SPAN_KIND_SERVER
            and (trace is None or s.trace_id == trace)
            and (route is None or s.attributes.get("http.route") == route)
            and (path is None or s.attributes.get("url.path") == path)]


def children(spans, parent):
    return [s for s in spans if s.parent_span_id == parent.span_id and s.trace_id == parent.trace_id]


def one(found: list, what: str, spans):
    assert len(found) == 1, (f"expected exactly one {what}, found {len(found)}:\n{describe(found)}"
                             f"\n--- all spans received ---\n{describe(spans)}")
    return found[0]


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def metric_total(gw, name: str) -> float | None:
    """Sum of a metric's samples on /metrics (any labels); None when absent."""
    text = requests.get(gw.url + "/metrics", timeout=10).text
    found = None
    for line in text.splitlines():
        m = re.match(rf"^{re.escape(name)}(?:\{{[^}}]*\}})?\s+(\S+)", line)
        if m:
            found = (found or 0.0) + float(m.group(1))
    return found


def stop_and_collect(gw, rcv: OtlpReceiver, settle: float = 0.5):
    """SIGTERM the gateway (it flushes what is left), then give the receiver a moment."""
    rc = gw.stop()
    time.sleep(settle)
    return rc, rcv.snapshot()


@pytest.fixture
def receiver():
    rcv = OtlpReceiver().start()
    yield rcv
    rcv.stop()


# ---------------------------------------------------------------------------
# One gateway, one sign-in and a handful of requests; the tests below read what it exported.
# ---------------------------------------------------------------------------

SERVICE = "gatehouse-e2e"
HEADERS = {"x-e2e-collector-key": "e2e-hdr-" + secrets.token_hex(4), "x-tenant": "edge"}
RESOURCE = {"deployment.environment": "e2e", "service.namespace": "gatehouse-tests"}


@pytest.fixture(scope="module")
def scenario(provider, upstream, tmp_path_factory):
    from conftest import _require_binary
    import harness
    _require_binary()
    rcv = OtlpReceiver().start()
    env = otel_env(rcv.endpoint,
                   OTEL_SERVICE_NAME=SERVICE,
                   OTEL_RESOURCE_ATTRIBUTES=",".join(f"{k}={v}" for k, v in RESOURCE.items()),
                   OTEL_EXPORTER_OTLP_HEADERS=",".join(f"{k}={v}" for k, v in HEADERS.items()))
    gw = harness.Gateway(provider, upstream, tmp_path_factory.mktemp("gw-otel"), env=env,
                         name="gateway-otel-scenario")
    sc = {"rcv": rcv, "gw": gw, "provider": provider, "upstream": upstream}
    try:
        userinfo_before = provider.stats().get("userinfo", 0)
        s = login(gw, provider)
        sc["session"] = s
        sc["userinfo_at_login"] = provider.stats().get("userinfo", 0) - userinfo_before

        def call(key, path, flags="01", with_tp=True, sess=s, method="GET"):
            trace, parent = new_ids()
            headers = {"traceparent": traceparent(trace, parent, flags)} if with_tp else {}
            t0 = time.time()
            r = gw.request(sess, method, path, headers=headers)
            sc[key] = {"trace": trace, "parent": parent, "response": r, "path": path,
                       "at": t0, "elapsed": time.time() - t0}
            return r

        call("api", "/api/echo/traced?q=" + secrets.token_hex(8))
        # spans arrive on the schedule (200 ms), without a stop
        t0 = time.time()
        try:
            rcv.wait_for(lambda spans: servers(spans, sc["api"]["trace"]), timeout=10)
            sc["arrived_after"] = time.time() - t0
        except AssertionError as e:
            sc["arrived_after"] = None
            sc["arrival_error"] = str(e)
        call("api_root", "/api/echo/root?x=1", with_tp=False)
        call("user", "/user")
        call("error", "/api/status/503")
        call("not_found", "/api/status/404")
        call("post", "/api/echo/posted", method="POST")
        trace, parent = new_ids()
        t0 = time.time()
        sc["no_route"] = {"trace": trace, "parent": parent, "at": t0,
                          "response": requests.get(gw.url + "/nope-" + secrets.token_hex(4) + ".png",
                                                   headers={"traceparent": traceparent(trace, parent)},
                                                   timeout=10)}
        sc["metrics_dropped"] = metric_total(gw, DROPPED)
        sc["upstream_log"] = upstream.log()
        sc["rc"], sc["spans"] = stop_and_collect(gw, rcv)
        sc["requests"] = rcv.request_snapshot()
        (harness.ARTIFACTS / "otel-scenario-spans.txt").write_text(describe(sc["spans"], limit=10**6) + "\n")
        yield sc
    finally:
        gw.stop()
        rcv.stop()


def test_scenario_answers_are_normal(scenario):
    assert scenario["api"]["response"].status_code == 200
    assert scenario["api_root"]["response"].status_code == 200
    assert scenario["user"]["response"].status_code == 200
    assert scenario["error"]["response"].status_code == 503
    assert scenario["not_found"]["response"].status_code == 404
    assert scenario["post"]["response"].status_code == 200
    assert scenario["no_route"]["response"].status_code == 404


def test_spans_arrive_on_the_schedule_without_a_stop(scenario):
    # OTEL_BSP_SCHEDULE_DELAY=200 (ms): an /api call's spans are exported while the gateway runs.
    assert scenario["arrived_after"] is not None, scenario.get("arrival_error")
    assert scenario["arrived_after"] < 10


def test_exports_are_otlp_http_protobuf_with_the_configured_headers(scenario):
    reqs = scenario["requests"]
    assert reqs, "the receiver got no export request"
    for r in reqs:
        assert r.method == "POST"
        assert r.path == "/v1/traces", r.path
        assert (r.header("content-type") or "").split(";")[0].strip() == "application/x-protobuf", r.headers
        assert r.error is None, r.error
        for k, v in HEADERS.items():
            assert r.headers.get(k) == [v], f"{k}: {r.headers.get(k)} (headers {sorted(r.headers)})"


def test_resource_and_scope(scenario):
    spans = scenario["spans"]
    assert spans
    for s in spans:
        assert s.resource.get("service.name") == SERVICE, repr(s.resource)
        for k, v in RESOURCE.items():
            assert s.resource.get(k) == v, repr((k, s.resource))
        assert s.resource.get("telemetry.sdk.name") == "gatehouse", repr(s.resource)
        assert s.resource.get("telemetry.sdk.language") == "swift", repr(s.resource)
        assert s.scope_name == "gatehouse", s.short()


def test_ids_are_well_formed_and_unique(scenario):
    spans = scenario["spans"]
    assert spans
    for s in spans:
        assert HEX32.match(s.trace_id) and s.trace_id != "0" * 32, s.short()
        assert HEX16.match(s.span_id) and s.span_id != "0" * 16, s.short()
        assert s.parent_span_id == "" or (HEX16.match(s.parent_span_id)
                                          and s.parent_span_id != "0" * 16), s.short()
        assert s.end_ns >= s.start_ns > 0, s.short()
    ids = [s.span_id for s in spans]
    dupes = {i for i in ids if ids.count(i) > 1}
    assert not dupes, f"span ids exported twice: {dupes}\n{describe([s for s in spans if s.span_id in dupes])}"


def test_api_server_span_continues_the_incoming_traceparent(scenario):
    spans, api = scenario["spans"], scenario["api"]
    srv = one(servers(spans, api["trace"]), f"server span in trace {api['trace']}", spans)
    assert srv.parent_span_id == api["parent"], srv.short()
    assert srv.name == "GET /api", srv.short()
    a = srv.attributes
    assert a.get("http.request.method") == "GET"
    assert a.get("http.route") == "/api"
    assert a.get("http.response.status_code") == 200 and is_int(a["http.response.status_code"]), repr(a)
    assert a.get("url.path") == "/api/echo/traced", repr(a)
    assert a.get("url.scheme") == "http", repr(a)
    assert srv.status_code != STATUS_ERROR, srv.short()


def test_upstream_client_span_is_a_child_and_its_id_reaches_the_upstream(scenario):
    spans, api, upstream = scenario["spans"], scenario["api"], scenario["upstream"]
    srv = one(servers(spans, api["trace"]), "server span of the /api call", spans)
    ups = [c for c in children(spans, srv) if "gatehouse.route" in c.attributes]
    client = one(ups, "upstream client span (with gatehouse.route) under the /api server span", spans)
    assert client.kind == SPAN_KIND_CLIENT, client.short()
    assert client.name == "GET", client.short()
    a = client.attributes
    assert a.get("http.request.method") == "GET", repr(a)
    assert a.get("server.address") == "127.0.0.1", repr(a)
    assert a.get("server.port") == upstream.port and is_int(a.get("server.port")), repr(a)
    assert a.get("url.full") == upstream.url + "/api/echo/traced", repr(a)
    assert a.get("http.response.status_code") == 200 and is_int(a["http.response.status_code"]), repr(a)
    assert a.get("gatehouse.route") == "/api", repr(a)
    sent = echo_headers(api["response"]).get("traceparent")
    assert sent == [traceparent(api["trace"], client.span_id)], (
        f"upstream received {sent}, upstream span {client.span_id}")


def test_post_upstream_span_is_named_by_its_method(scenario):
    spans, post = scenario["spans"], scenario["post"]
    srv = one(servers(spans, post["trace"]), "server span of the POST /api call", spans)
    assert srv.name == "POST /api" and srv.attributes.get("http.request.method") == "POST", srv.short()
    client = one([c for c in children(spans, srv) if "gatehouse.route" in c.attributes],
                 "upstream span of the POST", spans)
    assert client.name == "POST" and client.attributes.get("http.request.method") == "POST", client.short()


def test_request_without_traceparent_is_a_root_span_with_a_fresh_trace(scenario):
    spans, r = scenario["spans"], scenario["api_root"]
    sent = echo_headers(r["response"]).get("traceparent") or []
    assert len(sent) == 1, sent
    _, trace, parent, flags = sent[0].split("-")
    srv = one(servers(spans, trace), f"server span in the trace the upstream was given ({sent[0]})", spans)
    assert srv.parent_span_id == "", srv.short()
    assert srv.attributes.get("url.path") == "/api/echo/root", srv.short()
    ours = {scenario[k]["trace"] for k in ("api", "api_root", "user", "error", "not_found", "post")}
    assert trace not in ours
    client = one([c for c in children(spans, srv) if "gatehouse.route" in c.attributes],
                 "upstream span of the root request", spans)
    assert parent == client.span_id and flags == "01", (sent, client.short())


def test_login_and_callback_server_spans(scenario):
    spans = scenario["spans"]
    login_span = one(servers(spans, route="/login"), "server span with http.route=/login", spans)
    cb = one(servers(spans, route="/callback"), "server span with http.route=/callback", spans)
    for s, path in ((login_span, "/login"), (cb, "/callback")):
        a = s.attributes
        assert s.name == f"GET {path}", s.short()
        assert a.get("http.request.method") == "GET"
        assert a.get("url.path") == path, repr(a)
        assert a.get("url.scheme") == "http", repr(a)
        assert a.get("http.response.status_code") == 302 and is_int(a["http.response.status_code"]), repr(a)
        assert s.parent_span_id == "", f"no traceparent was sent, yet: {s.short()}"
    assert login_span.trace_id != cb.trace_id, "two requests, one trace id"


def test_callback_provider_spans(scenario):
    spans, provider = scenario["spans"], scenario["provider"]
    cb = one(servers(spans, route="/callback"), "server span of /callback", spans)
    kids = children(spans, cb)
    prov = [c for c in kids if "gatehouse.operation" in c.attributes]
    assert prov, f"no provider span under /callback; its children:\n{describe(kids)}"
    for p in prov:
        a = p.attributes
        assert p.kind == SPAN_KIND_CLIENT, p.short()
        assert a.get("gatehouse.provider") == "default", repr(a)
        assert a.get("gatehouse.operation") in OPERATIONS, repr(a)
        assert a.get("http.request.method") in ("GET", "POST"), repr(a)
        assert a.get("server.address") == "127.0.0.1", repr(a)
        assert isinstance(a.get("url.full"), str) and a["url.full"].startswith(provider.issuer + "/"), repr(a)
        assert "?" not in a["url.full"], repr(a)
        assert is_int(a.get("http.response.status_code")), repr(a)
    token = one([p for p in prov if p.attributes["gatehouse.operation"] == "token"],
                "provider span with gatehouse.operation=token under /callback", spans)
    assert token.attributes["http.request.method"] == "POST"
    assert token.attributes["url.full"] == provider.discovery["token_endpoint"], repr(token.attributes)
    assert token.attributes["http.response.status_code"] == 200
    ops = [p.attributes["gatehouse.operation"] for p in prov]
    if scenario["userinfo_at_login"]:
        assert ops.count("userinfo") == scenario["userinfo_at_login"], (
            f"the provider answered {scenario['userinfo_at_login']} UserInfo call(s) during the login; "
            f"provider spans under /callback: {ops}")
        ui = next(p for p in prov if p.attributes["gatehouse.operation"] == "userinfo")
        assert ui.attributes["url.full"] == provider.discovery["userinfo_endpoint"], repr(ui.attributes)
    for p in prov:
        if p.attributes["gatehouse.operation"] == "jwks":
            assert p.attributes["url.full"] == provider.discovery["jwks_uri"], repr(p.attributes)


def test_callback_session_store_spans(scenario):
    spans = scenario["spans"]
    cb = one(servers(spans, route="/callback"), "server span of /callback", spans)
    kids = children(spans, cb)
    db = [c for c in kids if "db.system.name" in c.attributes]
    assert db, f"no session-store span under /callback (a session was saved); children:\n{describe(kids)}"
    for d in db:
        assert d.kind == SPAN_KIND_CLIENT, d.short()
        assert d.attributes["db.system.name"] == "sqlite", repr(d.attributes)
        op = d.attributes.get("db.operation.name")
        assert isinstance(op, str) and op, repr(d.attributes)
        # a low-cardinality name of the operation, never a key or a value
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_.]{0,40}", op), repr(d.attributes)


def test_every_store_span_is_a_child_of_a_server_span(scenario):
    spans = scenario["spans"]
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    db = [s for s in spans if "db.system.name" in s.attributes]
    for d in db:
        assert d.attributes["db.system.name"] in DB_SYSTEMS, d.short()
        parent = by_id.get((d.trace_id, d.parent_span_id))
        assert parent is not None and parent.kind == SPAN_KIND_SERVER, (
            f"store span without a server parent: {d.short()}")


def test_client_spans_with_a_parent_hang_under_a_server_span(scenario):
    spans = scenario["spans"]
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    for c in spans:
        if c.kind != SPAN_KIND_CLIENT or not c.parent_span_id:
            continue
        parent = by_id.get((c.trace_id, c.parent_span_id))
        assert parent is not None, f"parent of {c.short()} was not exported"
        assert parent.kind == SPAN_KIND_SERVER, f"{c.short()}\nparent: {parent.short()}"


def test_one_server_span_per_request(scenario):
    spans = scenario["spans"]
    for key in ("api", "user", "error", "not_found", "post", "no_route"):
        one(servers(spans, scenario[key]["trace"]), f"server span for {key}", spans)
    assert len(servers(spans, route="/login")) == 1
    assert len(servers(spans, route="/callback")) == 1


def test_own_endpoint_user_span(scenario):
    spans, u = scenario["spans"], scenario["user"]
    srv = one(servers(spans, u["trace"]), "server span of /user", spans)
    assert srv.name == "GET /user", srv.short()
    assert srv.parent_span_id == u["parent"]
    assert srv.attributes.get("http.route") == "/user"
    assert srv.attributes.get("url.path") == "/user"
    assert srv.attributes.get("http.response.status_code") == 200


def test_5xx_is_an_error_and_4xx_is_not(scenario):
    spans = scenario["spans"]
    err = one(servers(spans, scenario["error"]["trace"]), "server span of the 503", spans)
    assert err.attributes.get("http.response.status_code") == 503, err.short()
    assert err.status_code == STATUS_ERROR, err.short()
    assert err.name == "GET /api"
    up = one([c for c in children(spans, err) if "gatehouse.route" in c.attributes],
             "upstream span of the 503", spans)
    assert up.attributes.get("http.response.status_code") == 503, up.short()
    nf = one(servers(spans, scenario["not_found"]["trace"]), "server span of the 404", spans)
    assert nf.attributes.get("http.response.status_code") == 404, nf.short()
    assert nf.status_code != STATUS_ERROR, nf.short()


def test_request_matching_no_route_is_named_by_its_method(scenario):
    spans, nr = scenario["spans"], scenario["no_route"]
    srv = one(servers(spans, nr["trace"]), "server span of the unmatched request", spans)
    assert srv.name == "GET", srv.short()
    assert "http.route" not in srv.attributes, srv.short()
    assert srv.attributes.get("http.response.status_code") == 404, srv.short()
    assert srv.attributes.get("url.path", "").startswith("/nope-"), srv.short()


def test_metrics_has_the_dropped_counter(scenario):
    v = scenario["metrics_dropped"]
    assert v is not None, f"{DROPPED} missing from /metrics"
    assert v == 0, f"{DROPPED} = {v} with a healthy collector"


def test_url_attributes_carry_no_query(scenario):
    for s in scenario["spans"]:
        assert "url.query" not in s.attributes, s.short()
        for k, v in s.attributes.items():
            if k.startswith("url.") or k in ("http.target", "http.url"):
                assert "?" not in str(v), s.short()


# ---------------------------------------------------------------------------
# Endpoint forms, service name, batching, SIGTERM
# ---------------------------------------------------------------------------


def test_traces_endpoint_is_used_as_is_and_service_name_defaults(gateway_factory, upstream):
    rcv = OtlpReceiver(paths={"/custom/traces"}).start()
    try:
        gw = gateway_factory({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": rcv.url + "/custom/traces",
                              "OTEL_BSP_SCHEDULE_DELAY": "200",
                              "GATEHOUSE_ROUTES": open_routes(upstream)})
        trace, parent = new_ids()
        r = requests.get(gw.url + "/open/echo", headers={"traceparent": traceparent(trace, parent)},
                         timeout=10)
        assert r.status_code == 200
        rcv.wait_for(lambda spans: servers(spans, trace), timeout=10, what="the /open call's span")
        _, spans = stop_and_collect(gw, rcv)
        paths = {q.path for q in rcv.request_snapshot()}
        assert paths == {"/custom/traces"}, paths
        for s in spans:
            assert s.resource.get("service.name") == "gatehouse", repr(s.resource)
            assert s.resource.get("telemetry.sdk.name") == "gatehouse"
            assert s.resource.get("telemetry.sdk.language") == "swift"
        srv = one(servers(spans, trace), "server span", spans)
        assert srv.name == "GET /open" and srv.attributes.get("http.route") == "/open", srv.short()
    finally:
        rcv.stop()


def test_remaining_spans_are_flushed_on_sigterm(receiver, gateway_factory, upstream):
    gw = gateway_factory(otel_env(receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY=60000,
                                  GATEHOUSE_ROUTES=open_routes(upstream)))
    traces = []
    for _ in range(3):
        trace, parent = new_ids()
        traces.append(trace)
        r = requests.get(gw.url + "/open/echo", headers={"traceparent": traceparent(trace, parent)},
                         timeout=10)
        assert r.status_code == 200
    time.sleep(0.5)
    early = [t for t in traces if servers(receiver.snapshot(), t)]
    gw.stop()
    receiver.wait_for(lambda spans: all(servers(spans, t) for t in traces), timeout=5,
                      what="the three requests' spans after SIGTERM")
    spans = receiver.snapshot()
    for t in traces:
        srv = one(servers(spans, t), "server span", spans)
        assert [c for c in children(spans, srv) if "gatehouse.route" in c.attributes], srv.short()
    assert not early, f"exported before the 60 s schedule delay and before the stop: {early}"


def test_export_batches_respect_the_max_batch_size(receiver, gateway_factory, upstream):
    gw = gateway_factory(otel_env(receiver.endpoint, OTEL_BSP_MAX_EXPORT_BATCH_SIZE=2,
                                  GATEHOUSE_ROUTES=open_routes(upstream)))
    traces = []
    for _ in range(10):
        trace, parent = new_ids()
        traces.append(trace)
        assert requests.get(gw.url + "/open/echo", timeout=10,
                            headers={"traceparent": traceparent(trace, parent)}).status_code == 200
    _, spans = stop_and_collect(gw, receiver)
    for t in traces:
        one(servers(spans, t), "server span", spans)
    sizes = [len(q.spans) for q in receiver.request_snapshot()]
    assert sizes and max(sizes) <= 2, sizes


def test_unset_endpoint_exports_nothing(gateway_factory, provider):
    # No OTEL_EXPORTER_OTLP_*ENDPOINT: nothing is sent anywhere, not even to OTLP's usual
    # localhost:4318 (the receiver listens there when the port is free).
    try:
        rcv = OtlpReceiver(port=4318, paths=None).start()
    except OSError:
        rcv = OtlpReceiver(paths=None).start()
    try:
        gw = gateway_factory({"OTEL_SERVICE_NAME": "should-not-export", "OTEL_BSP_SCHEDULE_DELAY": "200",
                              "OTEL_TRACES_SAMPLER": "always_on"})
        s = login(gw, provider)
        trace, parent = new_ids()
        assert gw.get(s, "/api/hello", headers={"traceparent": traceparent(trace, parent)}).status_code == 200
        time.sleep(1.0)
        gw.stop()
        time.sleep(0.5)
        assert rcv.request_snapshot() == [], f"{len(rcv.requests)} request(s) on port {rcv.port}"
    finally:
        rcv.stop()


def test_postgresql_store_spans(receiver, gateway_factory, provider):
    # db.system.name `postgresql` when GATEHOUSE_DATABASE is a libpq URI; the URI's password is
    # in no span.
    from pg_server import PASSWORD, PgServer
    pg = PgServer(name="postgres-otel")
    try:
        uri = pg.create_database()
        gw = gateway_factory(otel_env(receiver.endpoint, GATEHOUSE_DATABASE=uri))
        s = login(gw, provider)
        assert gw.get(s, "/user").status_code == 200
        _, spans = stop_and_collect(gw, receiver)
    finally:
        pg.destroy()
    cb = one(servers(spans, route="/callback"), "server span of /callback", spans)
    db = [c for c in children(spans, cb) if "db.system.name" in c.attributes]
    assert db, f"no session-store span under /callback:\n{describe(children(spans, cb))}"
    systems = {d.attributes["db.system.name"] for d in spans if "db.system.name" in d.attributes}
    assert systems == {"postgresql"}, systems
    for sp in spans:
        for where, value in sp.strings():
            assert PASSWORD not in value and uri not in value, f"database URI/password in {where}: {sp.short()}"


def test_export_timeout_frees_the_exporter(gateway_factory, upstream):
    # OTEL_EXPORTER_OTLP_TIMEOUT=500 (ms) against a collector that answers after 5 s: the exporter
    # gives up on an export after about half a second, so exports keep coming every second or so
    # rather than one per 5 s.
    rcv = OtlpReceiver(mode="slow", slow_seconds=5.0).start()
    try:
        gw = gateway_factory(otel_env(rcv.endpoint, OTEL_EXPORTER_OTLP_TIMEOUT=500,
                                      GATEHOUSE_ROUTES=open_routes(upstream)))
        deadline = time.time() + 4.0
        while time.time() < deadline:
            assert requests.get(gw.url + "/open/echo", timeout=10).status_code == 200
            time.sleep(0.1)
        times = [q.at for q in rcv.request_snapshot()]
        assert len(times) >= 2, f"{len(times)} export request(s) in 4 s with a 500 ms timeout"
        gaps = [b - a for a, b in zip(times, times[1:])]
        assert min(gaps) < 2.5, f"gaps between exports: {gaps}"
        rcv.mode = "ok"
        gw.stop()
    finally:
        rcv.stop()


# ---------------------------------------------------------------------------
# Samplers
# ---------------------------------------------------------------------------

# (sampler, arg, {incoming: exported?}); incoming "none" = no traceparent, "01"/"00" = sampled flag.
SAMPLERS = [
    (None, None, {"none": True, "01": True, "00": False}),  # default parentbased_always_on
    ("always_on", None, {"none": True, "01": True, "00": True}),
    ("always_off", None, {"none": False, "01": False, "00": False}),
    ("parentbased_always_on", None, {"none": True, "01": True, "00": False}),
    ("parentbased_always_off", None, {"none": False, "01": True, "00": False}),
    ("traceidratio", "0", {"none": False, "01": False}),
    ("traceidratio", "1", {"none": True, "00": True}),
    ("parentbased_traceidratio", "0", {"none": False, "01": True, "00": False}),
    ("parentbased_traceidratio", "1", {"none": True, "01": True, "00": False}),
]


@pytest.mark.parametrize("sampler, arg, cases", SAMPLERS,
                         ids=[f"{s or 'default'}{'-' + a if a else ''}" for s, a, _ in SAMPLERS])
def test_sampler(receiver, gateway_factory, upstream, sampler, arg, cases):
    env = otel_env(receiver.endpoint, GATEHOUSE_ROUTES=open_routes(upstream))
    if sampler:
        env["OTEL_TRACES_SAMPLER"] = sampler
    if arg is not None:
        env["OTEL_TRACES_SAMPLER_ARG"] = arg
    gw = gateway_factory(env)
    sent = {}
    for incoming in cases:
        path = f"/open/echo/{incoming}-{secrets.token_hex(4)}"
        headers = {}
        trace = parent = None
        if incoming != "none":
            trace, parent = new_ids()
            headers["traceparent"] = traceparent(trace, parent, incoming)
        r = requests.get(gw.url + path, headers=headers, timeout=10)
        tps = echo_headers(r).get("traceparent") or []
        upstream_trace = tps[0].split("-")[1] if tps else None
        sent[incoming] = (path, trace, parent, upstream_trace)
    _, spans = stop_and_collect(gw, receiver)
    problems = []
    for incoming, want in cases.items():
        path, trace, parent, upstream_trace = sent[incoming]
        got = servers(spans, path=path)
        also = [s for s in spans if s.trace_id in {trace, upstream_trace} - {None}]
        if want:
            if len(got) != 1:
                problems.append(f"{incoming}: expected one exported server span for {path}, got {len(got)}")
            elif trace and (got[0].trace_id != trace or got[0].parent_span_id != parent):
                problems.append(f"{incoming}: {got[0].short()} does not continue {trace}/{parent}")
        elif got or also:
            problems.append(f"{incoming}: expected nothing exported for {path}, got:\n{describe(got + also)}")
    if sampler == "always_off":
        assert spans == [], f"always_off exported:\n{describe(spans)}"
    assert not problems, "\n".join(problems) + f"\n--- all spans ---\n{describe(spans)}"


# ---------------------------------------------------------------------------
# Provider spans of a refresh; secrets
# ---------------------------------------------------------------------------


def test_refresh_on_api_is_a_provider_span_under_the_request(receiver, gateway_factory, provider):
    provider.config(access_ttl=3)
    gw = gateway_factory(otel_env(receiver.endpoint))
    s = login(gw, provider)
    time.sleep(4)
    before = provider.refresh_count()
    userinfo_before = provider.stats().get("userinfo", 0)
    trace, parent = new_ids()
    r = gw.get(s, "/api/hello", headers={"traceparent": traceparent(trace, parent)})
    assert r.status_code == 200, r.text
    assert provider.refresh_count() == before + 1, "the gateway did not refresh on this call"
    userinfo_calls = provider.stats().get("userinfo", 0) - userinfo_before
    _, spans = stop_and_collect(gw, receiver)
    srv = one(servers(spans, trace), "server span of the /api call", spans)
    kids = children(spans, srv)
    refresh = one([c for c in kids if c.attributes.get("gatehouse.operation") == "refresh"],
                  "provider span with gatehouse.operation=refresh", spans)
    a = refresh.attributes
    assert refresh.kind == SPAN_KIND_CLIENT
    assert a.get("gatehouse.provider") == "default", repr(a)
    assert a.get("http.request.method") == "POST", repr(a)
    assert a.get("server.address") == "127.0.0.1", repr(a)
    assert a.get("url.full") == provider.discovery["token_endpoint"], repr(a)
    assert a.get("http.response.status_code") == 200, repr(a)
    ui = [c for c in kids if c.attributes.get("gatehouse.operation") == "userinfo"]
    assert len(ui) == userinfo_calls, (f"{userinfo_calls} UserInfo call(s) at the provider, "
                                       f"{len(ui)} span(s):\n{describe(kids)}")
    # the upstream span of the same call is there too
    one([c for c in kids if "gatehouse.route" in c.attributes], "upstream span", spans)


def test_no_secret_in_any_span(receiver, gateway_factory, provider):
    provider.config(access_ttl=3)
    gw = gateway_factory(otel_env(receiver.endpoint))
    n = len(provider.tokens())
    stats0 = provider.stats()
    s = login(gw, provider)
    lr = s.login_result
    query_secret = "qs-" + secrets.token_hex(12)
    found: dict[str, str] = {
        "authorization code": q1(lr.callback_url, "code"),
        "state (callback)": q1(lr.callback_url, "state"),
        "state (authorize)": q1(lr.authorize_url, "state"),
        "nonce": q1(lr.authorize_url, "nonce"),
        "session cookie": lr.cookie,
        "client secret": gw.env["GATEHOUSE_CLIENT_SECRET"],
        "client basic credentials": base64.b64encode(
            f"{provider.client_id}:{provider.client_secret}".encode()).decode(),
        "secret key": gw.env["GATEHOUSE_SECRET_KEY"],
        "query value": query_secret,
    }
    for i, h in enumerate(set_cookie_headers(lr.login_response) + lr.set_cookies):
        name, value, _ = parse_cookie(h)
        if len(value) >= 8:
            found[f"cookie {name} #{i}"] = value
    user = gw.get(s, "/user")
    assert user.status_code == 200
    found["email"] = user.json()["claims"]["email"]
    r = gw.get(s, f"/api/echo/q?token={query_secret}&x=1")
    assert r.status_code == 200
    bearer = dict((k.lower(), v) for k, v in r.json()["headers"])["authorization"]
    found["bearer sent upstream"] = bearer.split(" ", 1)[1]
    time.sleep(4)  # the access token expires: the next call refreshes
    r = gw.get(s, "/api/hello")
    assert r.status_code == 200
    out = gw.post(s, "/logout")
    assert out.status_code in (200, 302, 303), out.status_code
    gw.stop()
    time.sleep(0.5)
    stats1 = provider.stats()
    for t in provider.tokens()[n:]:
        found[f"{t['kind']} ({t.get('grant_type')}) {t['token'][:6]}"] = t["token"]
        if t["kind"] == "id_token":
            found[f"id_token signature {t['token'][:6]}"] = t["token"].split(".")[2]
    assert all(found.values()), {k: v for k, v in found.items() if not v}

    spans = receiver.snapshot()
    from harness import ARTIFACTS
    (ARTIFACTS / "otel-login-spans.txt").write_text(describe(spans, limit=10**6) + "\n")
    # not vacuous: the requests of the login, the API calls and the logout were exported
    for route in ("/login", "/callback", "/api", "/user", "/logout"):
        assert servers(spans, route=route), f"no server span for {route}:\n{describe(spans)}"
    assert any(sp.attributes.get("gatehouse.operation") == "refresh" for sp in spans), describe(spans)
    if len(stats1.get("revocations", [])) > len(stats0.get("revocations", [])):
        assert any(sp.attributes.get("gatehouse.operation") == "revocation" for sp in spans), (
            "the provider saw a revocation during the logout, but no revocation span was exported")

    leaks = []
    for sp in spans:
        for where, value in sp.strings():
            for what, secret in found.items():
                if secret in value:
                    leaks.append(f"{what} in {where} of {sp.name!r}: {value[:200]!r}")
        for k, v in sp.attributes.items():
            if k.startswith("url.") and "?" in str(v):
                leaks.append(f"query in {k} of {sp.name!r}: {v!r}")
    for i, q in enumerate(receiver.request_snapshot()):
        for what, secret in found.items():
            if secret.encode() in q.payload:
                leaks.append(f"{what} somewhere in export request body #{i}")
    assert not leaks, "\n".join(sorted(set(leaks)))


# ---------------------------------------------------------------------------
# Invalid settings
# ---------------------------------------------------------------------------

INVALID = [
    ({"OTEL_TRACES_SAMPLER": "sometimes"}, "OTEL_TRACES_SAMPLER"),
    ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, "OTEL_TRACES_SAMPLER_ARG"),
    ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "-0.5"}, "OTEL_TRACES_SAMPLER_ARG"),
    ({"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "half"},
     "OTEL_TRACES_SAMPLER_ARG"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://x"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": None, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "not a url"},
     "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    ({"OTEL_EXPORTER_OTLP_HEADERS": "no-equals-sign"}, "OTEL_EXPORTER_OTLP_HEADERS"),
    ({"OTEL_RESOURCE_ATTRIBUTES": "no-equals-sign"}, "OTEL_RESOURCE_ATTRIBUTES"),
    ({"OTEL_BSP_SCHEDULE_DELAY": "soon"}, "OTEL_BSP_SCHEDULE_DELAY"),
    ({"OTEL_BSP_SCHEDULE_DELAY": "-1"}, "OTEL_BSP_SCHEDULE_DELAY"),
    ({"OTEL_BSP_MAX_QUEUE_SIZE": "lots"}, "OTEL_BSP_MAX_QUEUE_SIZE"),
    ({"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "-5"}, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
    ({"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, "OTEL_EXPORTER_OTLP_TIMEOUT"),
]


@pytest.mark.parametrize("env, variable", INVALID,
                         ids=[f"{v}={e.get(v)}" for e, v in INVALID])
def test_invalid_setting_stops_serve_with_64(gateway_factory, env, variable):
    full = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    full.update(env)
    gw = gateway_factory(full, start=False)
    try:
        cp = run_cli(["serve"], env=gw.env, timeout=15)
    except subprocess.TimeoutExpired:
        pytest.fail(f"serve kept running with {env}")
    assert cp.returncode == 64, (cp.returncode, cp.stderr[-2000:])
    assert re.search(rf"\b{re.escape(variable)}\b", cp.stderr), cp.stderr[-2000:]


# ---------------------------------------------------------------------------
# A collector in trouble
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("trouble", ["down", "unavailable", "slow"])
def test_collector_trouble_changes_no_answer(gateway_factory, provider, trouble):
    rcv = None
    if trouble == "down":
        endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    else:
        rcv = OtlpReceiver(mode=trouble, slow_seconds=10.0).start()
        endpoint = rcv.endpoint
    try:
        # a small queue: while the slow collector holds the exporter, spans overflow it
        gw = gateway_factory(otel_env(endpoint, OTEL_BSP_MAX_QUEUE_SIZE=8,
                                      OTEL_BSP_MAX_EXPORT_BATCH_SIZE=4))
        t0 = time.time()
        s = login(gw, provider)
        login_seconds = time.time() - t0
        assert login_seconds < 5, f"a login took {login_seconds:.2f} s"
        slowest = 0.0
        for i in range(30):
            trace, parent = new_ids()
            t = time.time()
            r = gw.get(s, f"/api/echo/n{i}?i={i}", headers={"traceparent": traceparent(trace, parent)})
            dt = time.time() - t
            slowest = max(slowest, dt)
            assert r.status_code == 200, (i, r.status_code, r.text[:300])
            e = r.json()
            assert (e["method"], e["path"], e["query"]) == ("GET", f"/api/echo/n{i}", f"i={i}"), e
            assert dt < 1.0, f"call {i} took {dt:.2f} s"
        t = time.time()
        r = gw.get(s, "/api/status/503")
        assert r.status_code == 503 and r.json() == {"status": 503}, r.text
        assert gw.get(s, "/api/hello").json()["hello"] == "world"
        u = gw.get(s, "/user")
        assert u.status_code == 200 and u.json()["sub"] == "alice"
        assert time.time() - t < 3
        if rcv is not None:
            rcv.wait_for_requests(1, timeout=5)  # the gateway did try
        dropped = metric_total(gw, DROPPED)
        assert dropped is not None, f"{DROPPED} missing from /metrics"
        if trouble == "slow":
            # ~4 spans a call, 30 calls, a queue of 8 held by one 10 s export: most are dropped
            assert dropped > 0, f"{DROPPED} = {dropped} after overflowing a queue of 8"
            rcv.mode = "ok"  # let the stop's flush finish
        gw.stop()
    finally:
        if rcv is not None:
            rcv.stop()
