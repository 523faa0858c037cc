#!/usr/bin/env bash
# Installs what the end-to-end suite needs, idempotently:
#   Debian packages: chromium chromium-driver nginx-light wrk, and the libraries the build links
#   (libsqlite3-dev zlib1g-dev libssl-dev libpq-dev libyaml-dev), and postgresql (its server binaries,
#   started by the tests in temporary directories; the Debian cluster it may create is not used) and
#   pgbouncer (the gateway through PgBouncer in transaction mode), and gdb (scripts/bounded prints
#   the stacks of a test stage that hangs), and node-jose (with nodejs: the README's Node example of
#   verifying an identity assertion, run by e2e/test_identity_assertion.py) and caddy (an ingress
#   in front, asking /auth with forward_auth, beside nginx's auth_request) and pebble (Let's
#   Encrypt's test ACME server, with pebble-challtestsrv as its DNS: e2e/test_acme.py)
#   (only the missing ones)
#   a venv at <repo>/.venv with e2e/requirements.txt
set -euo pipefail
E2E_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$E2E_DIR/.." && pwd)"
VENV="${E2E_VENV:-$REPO/.venv}"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

want=(chromium chromium-driver nginx-light wrk python3-venv libsqlite3-dev zlib1g-dev libssl-dev libpq-dev libyaml-dev postgresql pgbouncer gdb node-jose caddy pebble)
missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    # nginx-light is only a flavour: any installed nginx will do
    if [ "$p" = nginx-light ] && command -v nginx >/dev/null 2>&1; then continue; fi
    # python3-venv: a python3 whose venv module works is enough (e.g. pyenv)
    if [ "$p" = python3-venv ] && python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then continue; fi
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
stamp="$VENV/.e2e-requirements.sha256"
sum="$(sha256sum "$E2E_DIR/requirements.txt" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$sum" ]; then
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$E2E_DIR/requirements.txt"
  echo "$sum" > "$stamp"
fi
echo "setup.sh: ready (venv $VENV)"
