"""The release link order does not rot (issue 33): scripts/check-link-order against $GATEHOUSE_BIN.

Sources/GatehouseCLI/gatehouse.order names the functions the release link places first; lld skips a
name that no longer exists without a word (`--no-warn-symbol-ordering`), so a renamed function drops
out of the order silently. The check compares the names a debug build must define too (this
package's Swift functions, by their origin when the optimizer specialized them) with the binary.
These tests run it on the real file, and prove it fails on a copy with a block of names renamed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness import REPO, gatehouse_bin

CHECK = REPO / "scripts" / "check-link-order"
ORDER = REPO / "Sources" / "GatehouseCLI" / "gatehouse.order"
RENAMED = 200


@pytest.fixture(autouse=True)
def _binary():
    from conftest import _require_binary
    _require_binary()


def check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), *args], capture_output=True, text=True, timeout=120)


def defined_symbols(binary: Path) -> set[str]:
    out = subprocess.run(["nm", "--defined-only", "-P", str(binary)], check=True, capture_output=True,
                         text=True).stdout
    return {line.split(" ", 1)[0] for line in out.splitlines()}


def test_order_file_names_exist_in_the_binary():
    done = check(str(gatehouse_bin()))
    assert done.returncode == 0, done.stdout + done.stderr
    checked = int(re.search(r"^  checked: (\d+)", done.stdout, re.M).group(1))
    assert checked > 1000, done.stdout  # the file's own functions were found and compared


def test_check_fails_when_a_block_of_names_is_renamed(tmp_path):
    # The first identifier after the module, one letter's case changed: what renaming a type or a
    # function does to its mangled name. Only names the binary has, so each rename makes one go missing.
    present = defined_symbols(gatehouse_bin())
    names = ORDER.read_text().splitlines()
    rename = re.compile(r"^(\$s9Gatehouse[1-9]\d*)([A-Za-z])")
    targets = [i for i, name in enumerate(names) if rename.match(name) and name in present]
    assert len(targets) >= 120, len(targets)  # so that half of them is well past the 2 % allowed
    renamed = min(RENAMED, len(targets) // 2)
    start = (len(targets) - renamed) // 2
    for i in targets[start:start + renamed]:
        names[i] = rename.sub(lambda m: m.group(1) + m.group(2).swapcase(), names[i])
    corrupted = tmp_path / "gatehouse.order"
    corrupted.write_text("\n".join(names) + "\n")

    done = check("--order", str(corrupted), str(gatehouse_bin()))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL" in done.stdout and "bench/linkorder/record" in done.stderr, done.stdout + done.stderr
    missing = int(re.search(r"^  missing: (\d+)", done.stdout, re.M).group(1))
    assert missing >= renamed // 2, done.stdout
    assert "Gatehouse." in done.stdout, done.stdout  # the missing functions are shown demangled


def test_check_passes_on_the_names_the_binary_has(tmp_path):
    present = defined_symbols(gatehouse_bin())
    kept = tmp_path / "gatehouse.order"
    kept.write_text("\n".join(name for name in ORDER.read_text().splitlines() if name in present) + "\n")
    done = check("--order", str(kept), "--max-stale", "0", str(gatehouse_bin()))
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^  missing: 0 ", done.stdout, re.M), done.stdout


def test_self_test_and_usage_errors(tmp_path):
    done = check("--self-test", str(gatehouse_bin()))
    assert done.returncode == 0, done.stdout + done.stderr
    assert check(str(tmp_path / "no-such-binary")).returncode == 2
    assert check("--order", str(tmp_path / "no-such-order"), str(gatehouse_bin())).returncode == 2
    assert check("--no-such-option").returncode == 2
