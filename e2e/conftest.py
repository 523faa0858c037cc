"""Fixtures of the Gatehouse end-to-end suite.

* ``provider`` (session): the third-party OpenID provider (oidc-provider-mock, see
  provider_server.py) on 127.0.0.1, with the confidential client ``gatehouse-e2e``.
* ``upstream`` (session): upstream_server.py.
* ``gateway_factory`` (function): ``make(env={...})`` starts ``$GATEHOUSE_BIN serve``
  on a free port, registers its redirect URI at the provider, waits for /healthz and
  /readyz; every gateway is stopped at teardown.
* ``gateway`` (module): one default gateway shared by the tests of a module.

Every process logs to test-artifacts/logs/*.log; when a test fails, what each process
logged during that test is attached to the report.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from harness import ARTIFACTS, Gateway, Provider, Upstream, gatehouse_bin, login  # noqa: E402,F401

_SESSION_PROVIDER: list[Provider] = []


def pytest_configure(config):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    logs = ARTIFACTS / "logs"
    if logs.exists() and not hasattr(config, "workerinput"):
        shutil.rmtree(logs, ignore_errors=True)  # logs of this run only
    logs.mkdir(parents=True, exist_ok=True)
    config.addinivalue_line("markers", "slow: takes more than ~10 s")
    config.addinivalue_line("markers", "gateway: needs the gatehouse binary")
    config.addinivalue_line("markers", "browser: needs chromium + chromedriver")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "test_infra" not in item.nodeid:
            item.add_marker(pytest.mark.gateway)


# ---------------------------------------------------------------------------
# logs of every managed process, attached to failing tests
# ---------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _log_offsets(request):
    request.node._log_offsets = {p.log_path: _size(p.log_path) for p in harness.ALL_PROCS}
    yield


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except FileNotFoundError:
        return 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed and rep.when in ("setup", "call"):
        offsets = getattr(item, "_log_offsets", {})
        for p in harness.ALL_PROCS:
            start = offsets.get(p.log_path, 0)
            try:
                with open(p.log_path, "rb") as f:
                    f.seek(start)
                    data = f.read()
            except FileNotFoundError:
                continue
            if not data:
                continue
            if len(data) > 12000:
                data = b"...(cut)...\n" + data[-12000:]
            rep.sections.append((f"log of {p.name} ({p.log_path})",
                                 data.decode("utf-8", "replace")))


# ---------------------------------------------------------------------------
# infrastructure
# ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def provider(tmp_path_factory):
    p = Provider(tmp_path_factory.mktemp("provider"))
    _SESSION_PROVIDER.append(p)
    yield p
    p.stop()


@pytest.fixture(autouse=True)
def _reset_provider_after_test():
    yield
    for p in _SESSION_PROVIDER:
        if p.proc.alive():
            try:
                p.reset()
            except Exception:
                pass


@pytest.fixture(scope="session")
def upstream(tmp_path_factory):
    u = Upstream(tmp_path_factory.mktemp("upstream"))
    yield u
    u.stop()


def _require_binary():
    b = gatehouse_bin()
    if not b.exists():
        msg = (f"gatehouse binary not found at {b} (set GATEHOUSE_BIN or run `swift build`)")
        if os.environ.get("E2E_REQUIRE_GATEWAY") == "1":
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture
def gateway_factory(provider, upstream, tmp_path, request):
    """make(env=None, upstream=<default>, name=None, start=True, wait_ready=True) -> Gateway.
    env values may contain {port} and {url}; a None value removes the variable."""
    _require_binary()
    made: list[Gateway] = []
    counter = [0]

    def make(env: dict | None = None, upstream_=upstream, name: str | None = None,
             start=True, wait_ready=True, register=True) -> Gateway:
        counter[0] += 1
        nm = name or f"gateway-{request.node.name}-{counter[0]}"
        gw = Gateway(provider, upstream_, tmp_path / f"gw{counter[0]}", env=env,
                     name=harness.safe_name(nm), start=start, wait_ready=wait_ready,
                     register=register)
        made.append(gw)
        return gw

    yield make
    for gw in made:
        gw.stop()


@pytest.fixture(scope="module")
def gateway(provider, upstream, tmp_path_factory, request):
    _require_binary()
    mod = request.module.__name__.rsplit(".", 1)[-1]
    gw = Gateway(provider, upstream, tmp_path_factory.mktemp(f"gw-{mod}"),
                 name=f"gateway-{mod}")
    yield gw
    gw.stop()
