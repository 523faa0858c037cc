"""Idle memory (issue 15): the gateway loads no part of Foundation beyond FoundationEssentials,
and no libcurl.

All of Foundation brings ICU's tables and FoundationNetworking (about 10 MiB of resident pages at
idle); the gateway needs neither: its text is UTF-8, its dates ISO 8601 in UTC, its HTTP its own.
libcurl brought some thirty libraries (Kerberos, LDAP, SSH, RTMP, GnuTLS…; about 4 MiB resident):
the gateway's TLS is OpenSSL alone, driven by its event loops. libpq (and through it Kerberos, LDAP,
SASL and GnuTLS, about 3 MiB) is loaded only by the PostgreSQL engine: a gateway on SQLite never
maps it (test_postgres_store.py runs gateways that do).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness import gatehouse_bin

UNWANTED = ("libFoundation.so", "libFoundationInternationalization.so", "libFoundationNetworking.so",
            "lib_FoundationICU.so", "libFoundationXML.so", "libcurl.so.4", "libcurl-gnutls.so.4")


def needed_libraries(binary: Path) -> list[str]:
    out = subprocess.run(["readelf", "-d", str(binary)], check=True, capture_output=True, text=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def test_binary_needs_no_foundation_beyond_essentials_and_no_libcurl():
    needed = needed_libraries(gatehouse_bin())
    assert "libc.so.6" in needed, needed  # the listing was read
    assert [name for name in needed if name in UNWANTED] == []
    assert "libpq.so.5" not in needed, "libpq is loaded at run time, by the PostgreSQL engine only"


def test_running_gateway_maps_no_foundation_beyond_essentials_and_no_libcurl(gateway):
    # What is mapped, not only what is linked: a library opened at run time would show here.
    maps = Path(f"/proc/{gateway.proc.pid}/maps").read_text()
    mapped = {line.split()[-1].rsplit("/", 1)[-1] for line in maps.splitlines() if "/" in line}
    assert "libc.so.6" in mapped, sorted(mapped)
    assert sorted(name for name in mapped if name in UNWANTED) == []
    # The fixture's gateway keeps its sessions in SQLite.
    assert not any(name.startswith(("libpq.so", "libgssapi_krb5", "libldap", "libgnutls")) for name in mapped), sorted(mapped)
