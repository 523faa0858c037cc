"""Verify a Gatehouse identity assertion in a Python API (joserfc: `pip install joserfc`).

Run: GATEHOUSE_JWKS_URL=https://app.example.com/.well-known/jwks.json GATEHOUSE_URL=https://app.example.com \
     API_AUDIENCE=orders-api python verify.py "$ASSERTION"
In an API, take the assertion from the `Gatehouse-Assertion` request header and answer 401 when
`verify` raises. Keep the key set and fetch it again when an assertion names a `kid` it lacks
(the keys change only when the gateway's secret key is rotated).
"""
import json
import os
import sys
import urllib.request

from joserfc import jwt
from joserfc.jwk import KeySet

JWKS_URL = os.environ.get("GATEHOUSE_JWKS_URL", "https://app.example.com/.well-known/jwks.json")
ISSUER = os.environ.get("GATEHOUSE_URL", "https://app.example.com")  # GATEHOUSE_PUBLIC_URL
AUDIENCE = os.environ.get("API_AUDIENCE", "orders-api")  # the route's audience=, else the upstream's origin


def load_keys() -> KeySet:
    with urllib.request.urlopen(JWKS_URL, timeout=5) as answer:
        return KeySet.import_key_set(json.load(answer))


def verify(assertion: str, keys: KeySet) -> dict:
    token = jwt.decode(assertion, keys, algorithms=["ES256"])  # signature, by the header's kid
    jwt.JWTClaimsRegistry(
        iss={"essential": True, "value": ISSUER},
        aud={"essential": True, "value": AUDIENCE},
        exp={"essential": True},
        sub={"essential": True},
    ).validate(token.claims)  # issuer, audience, expiry
    return token.claims


if __name__ == "__main__":
    claims = verify(sys.argv[1], load_keys())
    print(claims["sub"], claims.get("email", ""), claims["idp"])
