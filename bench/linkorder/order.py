"""Turn callgrind's record of a run into lld's --symbol-ordering-file.

Usage: order.py BINARY LINK_MAP OUTPUT CALLGRIND_OUT...

- The functions callgrind saw run in BINARY (its own object, not shared libraries), in first-seen
  order, without callgrind's recursion marks ('2).
- Each one's siblings: the other pieces the compiler split the same function into (async
  continuations `TQn_`/`TYn_`, coroutine `.resume.n`, partial applications `TA`), which run
  depending on timing (an `await` that suspended in one run returns at once in another).
- Functions that live in their own section come first; those inside a large section shared with
  many others (Swift's runtime library, BoringSSL's C code: built without one section per
  function) follow, grouped by section, so the densely used small sections sit together.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict

BINARY, LINK_MAP, OUTPUT = sys.argv[1:4]
RECORDS = sys.argv[4:]
LARGE_SECTION = 32 * 1024
SPLIT_SUFFIX = re.compile(r"(?:TQ\d*_|TY\d*_|TA|\.resume\.\d+)+$")
ENTRY = re.compile(r"^(ob|cob|fn|cfn)=\((\d+)\)(?: (.*))?$")


def executed(record: str, binary_name: str) -> list[str]:
    names: dict[str, str] = {}
    objects: dict[str, str] = {}
    current_object = None
    seen: list[str] = []
    with open(record, errors="replace") as lines:
        for line in lines:
            match = ENTRY.match(line.rstrip("\n"))
            if not match:
                continue
            kind, ident, name = match.groups()
            if kind in ("ob", "cob"):
                if name:
                    objects[ident] = name
                if kind == "ob":
                    current_object = objects.get(ident)
            else:
                if name:
                    names[ident] = name
                if kind == "fn" and current_object and current_object.endswith("/" + binary_name):
                    seen.append(ident)
    result = []
    for ident in seen:
        name = re.sub(r"'\d+$", "", names.get(ident, ""))
        if name and not name.startswith("0x"):
            result.append(name)
    return result


def text_symbols(binary: str) -> list[str]:
    listing = subprocess.run(["nm", "--defined-only", binary], check=True, capture_output=True, text=True).stdout
    return [parts[2] for parts in (line.split(None, 2) for line in listing.splitlines())
            if len(parts) == 3 and parts[1] in "tTwW"]


def section_sizes(link_map: str) -> dict[str, int]:
    """Largest .text input section each symbol is defined in (lld -Map format)."""
    largest: dict[str, int] = {}
    in_text = False
    size = 0
    with open(link_map) as lines:
        for line in lines:
            parts = line.split(None, 4)
            if len(parts) < 5 or not re.fullmatch(r"[0-9a-f]+", parts[0]):
                continue
            label = parts[4].strip()
            if not label.startswith(("/", "<")) and ":(" not in label and parts[3] != "1":
                in_text = label == ".text"  # an output section
                continue
            if not in_text:
                continue
            if ":(" in label:
                size = int(parts[2], 16)
            elif parts[3] == "1":
                largest[label] = max(largest.get(label, 0), size)
    return largest


def main() -> None:
    binary_name = BINARY.rsplit("/", 1)[-1]
    ran: list[str] = []
    seen: set[str] = set()
    for record in RECORDS:
        for name in executed(record, binary_name):
            if name not in seen:
                seen.add(name)
                ran.append(name)
    symbols = text_symbols(BINARY)
    defined = set(symbols)
    siblings: dict[str, list[str]] = defaultdict(list)
    for name in symbols:
        siblings[SPLIT_SUFFIX.sub("", name)].append(name)
    ordered: list[str] = []
    placed: set[str] = set()
    for name in ran:
        for candidate in [name] + siblings.get(SPLIT_SUFFIX.sub("", name), []):
            if candidate in defined and candidate not in placed:
                placed.add(candidate)
                ordered.append(candidate)
    sizes = section_sizes(LINK_MAP)
    small = [name for name in ordered if sizes.get(name, 0) < LARGE_SECTION]
    large = [name for name in ordered if sizes.get(name, 0) >= LARGE_SECTION]
    with open(OUTPUT, "w") as out:
        out.write("\n".join(small + large) + "\n")
    print(f"order: {len(ran)} functions ran, {len(ordered)} with their split pieces "
          f"({len(large)} inside sections of {LARGE_SECTION // 1024} KiB or more, placed last) -> {OUTPUT}")


if __name__ == "__main__":
    main()
