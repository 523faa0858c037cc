#!/usr/bin/env bash
# Checks the suite's own infrastructure (provider, upstream, Chromium) without a gateway.
set -uo pipefail
E2E_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$E2E_DIR/.." && pwd)"
cd "$REPO"
bash "$E2E_DIR/setup.sh" || exit $?
"$REPO/.venv/bin/python" -m pytest "$E2E_DIR/test_infra.py" -ra -q -p no:cacheprovider \
  -W ignore::DeprecationWarning "$@"
