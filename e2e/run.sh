#!/usr/bin/env bash
# Runs the end-to-end suite against the gatehouse binary.
#   GATEHOUSE_BIN  the binary (default <repo>/.build/debug/gatehouse; built with
#                  `swift build` when missing and swift is available)
#   E2E_SLOW=1     also run the 60-second keep-alive test
#   extra arguments go to pytest (e.g. e2e/run.sh -k login)
set -uo pipefail
E2E_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$E2E_DIR/.." && pwd)"
CALLER_DIR="$PWD"
cd "$REPO"

bash "$E2E_DIR/setup.sh" || exit $?

export GATEHOUSE_BIN="${GATEHOUSE_BIN:-$REPO/.build/debug/gatehouse}"
# Tests start the binary from temporary directories: a relative path must not depend on the cwd.
case $GATEHOUSE_BIN in /*) ;; *) GATEHOUSE_BIN="$CALLER_DIR/$GATEHOUSE_BIN" ;; esac
if [ ! -x "$GATEHOUSE_BIN" ] && [ "$GATEHOUSE_BIN" = "$REPO/.build/debug/gatehouse" ] && command -v swift >/dev/null 2>&1; then
  echo "run.sh: building gatehouse"
  swift build --product gatehouse || exit $?
fi
if [ ! -x "$GATEHOUSE_BIN" ]; then
  echo "run.sh: no gatehouse binary at $GATEHOUSE_BIN" >&2
  exit 2
fi
export E2E_REQUIRE_GATEWAY=1
mkdir -p "$REPO/test-artifacts"
"$REPO/.venv/bin/python" -m pytest "$E2E_DIR" -ra -q -p no:cacheprovider \
  -W ignore::DeprecationWarning --durations=15 --timeout=300 \
  --junitxml="$REPO/test-artifacts/e2e-junit.xml" "$@"
exit $?
