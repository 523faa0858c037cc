"""Gatehouse's additions to the shared OIDF RP runner (drive.py), without editing it.

scripts/conformance copies the shared run.sh next to this file's copy (as drive.py) and the shared
drive.py as drive_shared.py; this wrapper then classifies the tests Gatehouse supports beyond the
shared runner's table and runs its main().
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import drive_shared as drive  # noqa: E402

# Gatehouse authenticates with client_secret_jwt (GATEHOUSE_CLIENT_AUTH_METHOD=client_secret_jwt):
# the runner registers the client with that method and passes it on.
EXTRA = {
    "rp-token_endpoint-client_secret_jwt": {"mode": "accept", "auth": "client_secret_jwt"},
}

for test_id, spec in EXTRA.items():
    drive.SKIP.pop(test_id, None)
    drive.TESTS[test_id] = spec
    if test_id not in drive.DEFAULT_TESTS:
        drive.DEFAULT_TESTS.append(test_id)

if __name__ == "__main__":
    sys.exit(drive.main())
