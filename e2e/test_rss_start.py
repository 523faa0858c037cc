"""Start (issue 15): `serve` answers /healthz within tens of milliseconds, and a SIGTERM sent the
moment it does is acted on (the signal handling is in place before the listener opens).
"""

from __future__ import annotations

import http.client
import signal
import subprocess

import pytest

STARTS = 10


def healthz_once(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", "/healthz")
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except OSError:
        return False


def test_sigterm_as_soon_as_healthz_answers_stops_the_gateway(gateway_factory):
    gw = gateway_factory(start=False)
    for attempt in range(STARTS):
        gw.start(wait_ready=False)
        popen = gw.proc.popen
        # Polled without a pause: the signal must arrive as early after readiness as possible.
        for _ in range(200_000):
            if healthz_once(gw.port) or popen.poll() is not None:
                break
        assert popen.poll() is None, f"start {attempt}: serve exited with {popen.returncode}"
        popen.send_signal(signal.SIGTERM)
        try:
            code = popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"start {attempt}: SIGTERM right after /healthz answered was lost; serve kept running")
        assert code == 0, f"start {attempt}: exit {code}"
        gw.stop()
