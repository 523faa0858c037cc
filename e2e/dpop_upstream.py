"""A resource server that accepts only DPoP-bound tokens (RFC 9449 §7), for the end-to-end suite.

Every request must carry `Authorization: DPoP <token>` and a `DPoP` proof: a JWT of type
`dpop+jwt`, ES256, signed by the key in its own header (`jwk`), with `htm` = the method, `htu` =
this server's URL of the request (no query), a fresh `iat`, an unseen `jti`, `ath` = the token's
SHA-256, and the server's current nonce (RFC 9449 §9: without it the answer is 401
`WWW-Authenticate: DPoP error="use_dpop_nonce"` with a `DPoP-Nonce`). The token (a JWT from the test
provider, not verified here) must be bound to the proof's key: its `cnf.jkt` is the key's RFC 7638
thumbprint.

Answers 200 `{"ok": true, "sub", "jkt"}`; `GET /__stats` the counts of accepted calls, nonce
challenges and refusals (with reasons); `GET /__last` the last accepted request's `Authorization` and
proof (what an eavesdropper could try to replay); `POST /__rotate` a new nonce (the next call without
it is challenged, as a server whose nonce expired would). Run: `python dpop_upstream.py --port-file F`.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from joserfc import jws
from joserfc.jwk import ECKey

STATE = {"nonce": secrets.token_urlsafe(12), "seen": set(), "accepted": 0, "challenges": 0, "refused": [], "last": {}}
LOCK = threading.Lock()


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def thumbprint(jwk: dict) -> str:
    canonical = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
    return b64(hashlib.sha256(canonical.encode()).digest())


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status: int, body: dict, headers: dict | None = None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def refuse(self, why: str, status: int = 401):
        with LOCK:
            STATE["refused"].append(why)
        self.answer(status, {"error": "invalid_token", "why": why}, {"WWW-Authenticate": f'DPoP error="invalid_token"'})

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if self.path == "/__stats":
            with LOCK:
                return self.answer(200, {k: (v if not isinstance(v, set) else len(v)) for k, v in STATE.items()})
        if self.path == "/__rotate":
            with LOCK:
                STATE["nonce"] = secrets.token_urlsafe(12)
                return self.answer(200, {"rotated": True})
        if self.path == "/__last":
            # What an attacker who saw the last accepted request could replay.
            with LOCK:
                return self.answer(200, STATE["last"])
        authorization = self.headers.get("Authorization", "")
        proof = self.headers.get("DPoP")
        if not authorization.startswith("DPoP ") or not proof:
            return self.refuse("not a DPoP request: " + authorization.split(" ")[0])
        token = authorization[5:]
        try:
            header = json.loads(unb64(proof.split(".")[0]))
            if header.get("typ") != "dpop+jwt" or header.get("alg") != "ES256" or "d" in header.get("jwk", {}):
                return self.refuse("bad proof header")
            key = ECKey.import_key(header["jwk"])
            claims = json.loads(jws.deserialize_compact(proof, key, algorithms=["ES256"]).payload)
        except Exception as e:  # noqa: BLE001
            return self.refuse(f"proof not verified: {e}")
        url = f"http://{self.headers['Host']}{self.path.split('?')[0]}"
        if claims.get("htm") != self.command or claims.get("htu") != url:
            return self.refuse(f"htm/htu {claims.get('htm')} {claims.get('htu')} != {self.command} {url}")
        if abs(claims.get("iat", 0) - time.time()) > 60:
            return self.refuse("stale iat")
        if claims.get("ath") != b64(hashlib.sha256(token.encode()).digest()):
            return self.refuse("ath does not match the token")
        with LOCK:
            if claims.get("jti") in STATE["seen"]:
                STATE["refused"].append("replayed jti")
                return self.answer(401, {"error": "invalid_dpop_proof"})
            STATE["seen"].add(claims.get("jti"))
            if claims.get("nonce") != STATE["nonce"]:
                STATE["challenges"] += 1
                return self.answer(401, {"error": "use_dpop_nonce"},
                                   {"WWW-Authenticate": 'DPoP error="use_dpop_nonce"', "DPoP-Nonce": STATE["nonce"]})
        try:
            token_claims = json.loads(unb64(token.split(".")[1]))
        except Exception:  # noqa: BLE001
            return self.refuse("token is not a JWT")
        jkt = thumbprint(header["jwk"])
        if token_claims.get("cnf", {}).get("jkt") != jkt:
            return self.refuse("token not bound to the proof's key")
        with LOCK:
            STATE["accepted"] += 1
            STATE["last"] = {"authorization": authorization, "dpop": proof, "path": self.path}
        self.answer(200, {"ok": True, "sub": token_claims.get("sub"), "jkt": jkt})

    do_GET = do_POST = do_PUT = do_DELETE = handle_any


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
