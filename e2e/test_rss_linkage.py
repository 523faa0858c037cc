"""Idle memory (issue 15): the gateway loads no part of Foundation beyond FoundationEssentials.

All of Foundation brings ICU's tables and FoundationNetworking (about 10 MiB of resident pages at
idle); the gateway needs neither: its text is UTF-8, its dates ISO 8601 in UTC, its HTTP its own
and libcurl's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness import gatehouse_bin

UNWANTED = ("libFoundation.so", "libFoundationInternationalization.so", "libFoundationNetworking.so",
            "lib_FoundationICU.so", "libFoundationXML.so")


def needed_libraries(binary: Path) -> list[str]:
    out = subprocess.run(["readelf", "-d", str(binary)], check=True, capture_output=True, text=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def test_binary_needs_no_foundation_beyond_essentials():
    needed = needed_libraries(gatehouse_bin())
    assert "libc.so.6" in needed, needed  # the listing was read
    assert [name for name in needed if name in UNWANTED] == []


def test_running_gateway_maps_no_foundation_beyond_essentials(gateway):
    # What is mapped, not only what is linked: a library opened at run time would show here.
    maps = Path(f"/proc/{gateway.proc.pid}/maps").read_text()
    mapped = {line.split()[-1].rsplit("/", 1)[-1] for line in maps.splitlines() if "/" in line}
    assert "libc.so.6" in mapped, sorted(mapped)
    assert sorted(name for name in mapped if name in UNWANTED) == []
