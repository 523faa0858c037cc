#!/usr/bin/env python3
"""Self-check of e2e/idpyoidc_provider.py with plain `requests` (no Gatehouse).

Starts the provider three times as a subprocess on free loopback ports:
  A: --par --refresh-resource   code flow + PKCE, token exchange, refresh
     rotation, refresh with resource, PAR, userinfo, introspection, logout, /_stats
  B: --dpop --implicit-consent --always-refresh
     DPoP-bound code flow, userinfo with DPoP, token exchange with DPoP, and
     idpyoidc's native (ignored) `resource` on the refresh grant
  C: --dpop --dpop-rfc-ath --require-pkce
     PKCE required; RFC 9449 `ath` accepted at userinfo
Prints one line per check; exits 0 only when every check passes.

    python e2e/idpyoidc_selfcheck.py [-v]
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import uuid
from urllib.parse import parse_qs, urlsplit

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
PROVIDER = os.path.join(HERE, "idpyoidc_provider.py")
CLIENT_ID = "gatehouse"
CLIENT_SECRET = "s3cret"
REDIRECT = "http://127.0.0.1:8080/callback"
LOGOUT_REDIRECT = "http://127.0.0.1:8080/logged-out"
TE = "urn:ietf:params:oauth:grant-type:token-exchange"
TT_ACCESS = "urn:ietf:params:oauth:token-type:access_token"
VERBOSE = "-v" in sys.argv

FAILURES: list[str] = []
COUNT = 0


def check(name: str, cond: bool, detail: str = "") -> bool:
    global COUNT
    COUNT += 1
    print(f"{'PASS' if cond else 'FAIL'}: {name}" + (f" -- {detail[:600]}" if detail and (not cond or VERBOSE) else ""))
    if not cond:
        FAILURES.append(name)
    return cond


def info(msg: str) -> None:
    print(f"      {msg}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt_claims(token: str) -> dict:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def jwt_header(token: str) -> dict:
    part = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def pkce() -> tuple[str, str]:
    verifier = b64url(secrets.token_bytes(32))
    return verifier, b64url(hashlib.sha256(verifier.encode()).digest())


class Provider:
    def __init__(self, *extra: str):
        self.port = free_port()
        cmd = [sys.executable, PROVIDER, "--port", str(self.port), "--client-id", CLIENT_ID,
               "--client-secret", CLIENT_SECRET, "--redirect-uri", REDIRECT,
               "--post-logout-redirect-uri", LOGOUT_REDIRECT, "--audience", "orders-api",
               "--resource", "https://orders.example", *extra]
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=None if VERBOSE else subprocess.DEVNULL,
                                     text=True)
        deadline = time.time() + 60
        line = ""
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith("READY ") or not line and self.proc.poll() is not None:
                break
        if not line.startswith("READY "):
            self.proc.kill()
            raise SystemExit(f"provider did not start: {cmd} -> {line!r}")
        self.base = line.split()[1]
        # what this client sent / got, per grant type, to compare with /_stats
        self.sent = {k: {"authorization_code": 0, "refresh_token": 0, "token-exchange": 0, "other": 0}
                     for k in ("token", "token_ok", "token_error")}
        self.meta = requests.get(self.base + "/.well-known/openid-configuration", timeout=5).json()

    def stop(self) -> int:
        self.proc.terminate()
        try:
            return self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return -9

    # -- protocol helpers --------------------------------------------------

    def authorize(self, scope="openid profile email offline_access", challenge=None, consent=True, **extra):
        q = {"response_type": "code", "client_id": CLIENT_ID, "redirect_uri": REDIRECT,
             "scope": scope, "state": secrets.token_urlsafe(8), "nonce": secrets.token_urlsafe(8)}
        if consent and "offline_access" in scope.split() and "prompt" not in extra:
            q["prompt"] = "consent"  # idpyoidc refuses offline_access without prompt=consent
        if challenge:
            q.update(code_challenge=challenge, code_challenge_method="S256")
        q.update(extra)
        r = requests.get(self.meta["authorization_endpoint"], params=q, allow_redirects=False, timeout=5)
        return r, q

    def token(self, data, auth="basic", headers=None):
        data = dict(data)
        kw = {}
        if auth == "basic":
            kw["auth"] = (CLIENT_ID, CLIENT_SECRET)
        elif auth == "post":
            data.update(client_id=CLIENT_ID, client_secret=CLIENT_SECRET)
        r = requests.post(self.meta["token_endpoint"], data=data, headers=headers or {}, timeout=5, **kw)
        key = {"authorization_code": "authorization_code", "refresh_token": "refresh_token",
               TE: "token-exchange"}.get(data.get("grant_type"), "other")
        self.sent["token"][key] += 1
        self.sent["token_ok" if r.status_code == 200 else "token_error"][key] += 1
        return r

    def stats(self):
        return requests.get(self.base + "/_stats", timeout=5).json()


def redirect_params(r) -> dict:
    loc = r.headers.get("Location", "")
    return {k: v[0] for k, v in parse_qs(urlsplit(loc).query).items()}


def code_flow(op: Provider, auth="basic", **extra):
    verifier, challenge = pkce()
    r, q = op.authorize(challenge=challenge, **extra)
    p = redirect_params(r)
    t = op.token({"grant_type": "authorization_code", "code": p.get("code", ""), "redirect_uri": REDIRECT,
                  "code_verifier": verifier}, auth=auth)
    return r, q, p, t


def show(label, r):
    info(f"{label}: HTTP {r.status_code} {r.text[:300]}")


# ---------------------------------------------------------------------------


def run_a() -> None:
    print("== provider A: --par --refresh-resource")
    op = Provider("--par", "--refresh-resource")
    info(" ".join(op.cmd))
    try:
        m = op.meta
        check("discovery issuer", m.get("issuer") == op.base, m.get("issuer"))
        check("discovery grant types", {"authorization_code", "refresh_token", TE} <= set(m.get("grant_types_supported", [])))
        check("discovery PKCE S256", m.get("code_challenge_methods_supported") == ["S256"])
        check("discovery authorization_response_iss_parameter_supported",
              m.get("authorization_response_iss_parameter_supported") is True)
        check("discovery lists PAR endpoint (--par)",
              m.get("pushed_authorization_request_endpoint") == op.base + "/par")
        check("discovery has no DPoP without --dpop", "dpop_signing_alg_values_supported" not in m)
        jwks = requests.get(m["jwks_uri"], timeout=5).json()
        check("jwks has public keys", len(jwks.get("keys", [])) >= 2 and all("d" not in k for k in jwks["keys"]))

        # --- code flow with PKCE ----------------------------------------
        r, q = op.authorize(challenge=pkce()[1], consent=False)
        p = redirect_params(r)
        check("offline_access without prompt=consent -> error redirect (idpyoidc rule)",
              r.status_code == 302 and p.get("error") == "invalid_request" and p.get("state") == q["state"], str(p))
        verifier, challenge = pkce()
        r, q = op.authorize(challenge=challenge)
        p = redirect_params(r)
        check("authorization 302 to redirect_uri", r.status_code == 302 and r.headers["Location"].startswith(REDIRECT + "?"),
              f"{r.status_code} {r.headers.get('Location')}")
        check("authorization response has code, state, iss",
              bool(p.get("code")) and p.get("state") == q["state"] and p.get("iss") == op.base, str(p))
        code = p["code"]
        bad = op.token({"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                        "code_verifier": "x" * 43})
        check("token with wrong code_verifier refused", bad.status_code == 400 and bad.json().get("error") == "invalid_grant",
              bad.text)
        t = op.token({"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                      "code_verifier": verifier})
        # the failed PKCE attempt above did not consume the code (idpyoidc checks PKCE first)
        check("code exchange (client_secret_basic, PKCE)", t.status_code == 200, t.text)
        tok = t.json()
        if VERBOSE:
            show("code grant", t)
        check("code grant returns access, id and refresh token",
              all(k in tok for k in ("access_token", "id_token", "refresh_token")) and tok.get("token_type") == "Bearer"
              and isinstance(tok.get("expires_in"), int), str(sorted(tok)))
        idt = jwt_claims(tok["id_token"])
        info(f"id_token claims: {sorted(idt)}")
        check("id_token claims", idt.get("iss") == op.base and idt.get("aud") == [CLIENT_ID]
              and idt.get("sub") == "alice" and idt.get("nonce") == q["nonce"]
              and idt.get("email") == "alice@example.com" and idt.get("groups") == ["admins", "users"], json.dumps(idt))
        at = jwt_claims(tok["access_token"])
        info(f"access_token claims: {json.dumps({k: at[k] for k in sorted(at) if k != 'sid'})}")
        check("access token is a JWT for the client", at.get("sub") == "alice" and at.get("aud") == [CLIENT_ID]
              and at.get("iss") == op.base, json.dumps(at))

        ui = requests.get(m["userinfo_endpoint"], headers={"Authorization": f"Bearer {tok['access_token']}"}, timeout=5)
        check("userinfo (Bearer)", ui.status_code == 200 and ui.json().get("sub") == "alice"
              and ui.json().get("preferred_username") == "alice" and ui.json().get("groups") == ["admins", "users"], ui.text)
        ui_bad = requests.get(m["userinfo_endpoint"], headers={"Authorization": "Bearer nope"}, timeout=5)
        check("userinfo with bad token 401", ui_bad.status_code == 401, ui_bad.text)

        # --- second user, client_secret_post ----------------------------
        _, _, _, tb = code_flow(op, auth="post", login_hint="bob")
        ok = tb.status_code == 200 and jwt_claims(tb.json()["id_token"]).get("sub") == "bob"
        check("login_hint=bob + client_secret_post", ok, tb.text)
        badc = op.token({"grant_type": "refresh_token", "refresh_token": tok["refresh_token"]}, auth=None,
                        headers={"Authorization": "Basic " + base64.b64encode(b"gatehouse:wrong").decode()})
        check("wrong client secret -> 401 invalid_client", badc.status_code == 401 and badc.json().get("error") == "invalid_client",
              f"{badc.status_code} {badc.text}")
        _, _, pn, tn = code_flow(op, scope="openid profile", prompt="none", max_age="0", acr_values="urn:x")
        check("prompt=none/max_age/acr_values accepted (auto login)", tn.status_code == 200, f"{pn} {tn.text}")
        _, _, pl, tl = code_flow(op, scope="openid", prompt="login")
        check("prompt=login accepted (fresh auto login)", tl.status_code == 200, f"{pl} {tl.text}")
        rb, _ = op.authorize(redirect_uri="http://evil.example/cb")
        check("unregistered redirect_uri -> 400, no redirect", rb.status_code == 400 and "Location" not in rb.headers,
              f"{rb.status_code} {rb.text}")
        noscope = op.authorize(challenge=pkce()[1], scope="openid profile")[0]
        tno = op.token({"grant_type": "authorization_code", "code": redirect_params(noscope).get("code", ""),
                        "redirect_uri": REDIRECT})
        check("PKCE verifier missing -> refused", tno.status_code == 400, tno.text)
        _, _, _, tno = code_flow(op, scope="openid profile")
        check("no offline_access -> no refresh token", tno.status_code == 200 and "refresh_token" not in tno.json(), tno.text)

        # --- token exchange ----------------------------------------------
        te = op.token({"grant_type": TE, "subject_token": tok["access_token"], "subject_token_type": TT_ACCESS,
                       "audience": "orders-api"})
        show("token exchange audience=orders-api", te)
        ok = te.status_code == 200 and te.json().get("issued_token_type") == TT_ACCESS
        check("token exchange audience=orders-api", ok, te.text)
        if ok:
            xat = jwt_claims(te.json()["access_token"])
            info(f"exchanged access_token aud={xat.get('aud')} scope={xat.get('scope')} sub={xat.get('sub')}")
            check("exchanged token audience is orders-api", "orders-api" in xat.get("aud", []), json.dumps(xat))
            check("exchange returns no refresh token", "refresh_token" not in te.json())
        te_bad = op.token({"grant_type": TE, "subject_token": tok["access_token"], "subject_token_type": TT_ACCESS,
                           "audience": "evil"})
        show("token exchange audience=evil", te_bad)
        check("token exchange audience=evil refused 400 invalid_target",
              te_bad.status_code == 400 and te_bad.json().get("error") == "invalid_target", te_bad.text)
        te_res = op.token({"grant_type": TE, "subject_token": tok["access_token"], "subject_token_type": TT_ACCESS,
                           "resource": "https://orders.example"}, auth="post")
        show("token exchange resource=https://orders.example (no audience)", te_res)
        aud = jwt_claims(te_res.json()["access_token"]).get("aud") if te_res.status_code == 200 else None
        info(f"  -> aud={aud}")
        check("token exchange resource alone: 200 but aud NOT set to it (idpyoidc 5.0.0 bug)",
              te_res.status_code == 200 and aud == [CLIENT_ID], te_res.text)
        te_both = op.token({"grant_type": TE, "subject_token": tok["access_token"], "subject_token_type": TT_ACCESS,
                            "resource": "https://orders.example", "audience": "orders-api",
                            "requested_token_type": TT_ACCESS, "scope": "openid profile"}, auth="post")
        show("token exchange resource + audience + scope=openid profile + requested_token_type", te_both)
        ok = te_both.status_code == 200
        xb = jwt_claims(te_both.json()["access_token"]) if ok else {}
        info(f"  -> aud={xb.get('aud')} scope={xb.get('scope')} response scope={te_both.json().get('scope') if ok else None}")
        check("token exchange resource + audience -> aud has both, scope narrowed",
              ok and set(xb.get("aud", [])) == {"orders-api", "https://orders.example"}
              and set(xb.get("scope", "").split()) == {"openid", "profile"}, te_both.text)
        te_res_bad = op.token({"grant_type": TE, "subject_token": tok["access_token"], "subject_token_type": TT_ACCESS,
                               "resource": "https://evil.example"})
        check("token exchange unknown resource refused 400 invalid_target",
              te_res_bad.status_code == 400 and te_res_bad.json().get("error") == "invalid_target", te_res_bad.text)
        te_two = op.token({"grant_type": TE, "subject_token": tok["access_token"], "subject_token_type": TT_ACCESS,
                           "audience": ["orders-api", "evil"]})
        check("token exchange audience=orders-api&audience=evil refused",
              te_two.status_code == 400 and te_two.json().get("error") == "invalid_target", te_two.text)
        te_garbage = op.token({"grant_type": TE, "subject_token": "garbage", "subject_token_type": TT_ACCESS,
                               "audience": "orders-api"})
        show("token exchange with garbage subject_token", te_garbage)
        check("token exchange bad subject_token refused 400", te_garbage.status_code == 400, te_garbage.text)

        # --- refresh rotation ------------------------------------------------
        rt1 = tok["refresh_token"]
        r1 = op.token({"grant_type": "refresh_token", "refresh_token": rt1})
        if VERBOSE:
            show("refresh", r1)
        ok = r1.status_code == 200 and r1.json().get("refresh_token") not in (None, rt1)
        check("refresh returns new access + rotated refresh token", ok, r1.text)
        rt2 = r1.json().get("refresh_token", "") if ok else ""
        if ok:
            check("refresh also returns a new id_token", "id_token" in r1.json())
        old = op.token({"grant_type": "refresh_token", "refresh_token": rt1})
        show("reuse of rotated refresh token", old)
        check("old refresh token refused after rotation", old.status_code == 400, old.text)

        # --- refresh with resource (--refresh-resource extension) ----------
        r2 = op.token({"grant_type": "refresh_token", "refresh_token": rt2, "resource": "https://orders.example"})
        show("refresh resource=https://orders.example", r2)
        ok = r2.status_code == 200 and "refresh_token" in r2.json()
        check("refresh with resource=https://orders.example", ok, r2.text)
        rt3 = r2.json().get("refresh_token", "") if ok else ""
        if ok:
            aud = jwt_claims(r2.json()["access_token"]).get("aud")
            check("refreshed access token audience restricted to the resource", aud == ["https://orders.example"], str(aud))
        r3 = op.token({"grant_type": "refresh_token", "refresh_token": rt3, "resource": "https://evil.example"})
        show("refresh resource=https://evil.example", r3)
        check("refresh with unknown resource refused 400 invalid_target",
              r3.status_code == 400 and r3.json().get("error") == "invalid_target", r3.text)
        r4 = op.token({"grant_type": "refresh_token", "refresh_token": rt3})
        check("refresh token still usable after an invalid_target refusal", r4.status_code == 200, r4.text)

        # --- code replay (own flow: replay revokes what the code minted) ----
        _, _, pr_, t_ = code_flow(op)
        replay = op.token({"grant_type": "authorization_code", "code": pr_.get("code", ""), "redirect_uri": REDIRECT,
                           "code_verifier": "irrelevant-" * 4})
        check("code replay refused", replay.status_code == 400 and replay.json().get("error") == "invalid_grant", replay.text)
        rr = op.token({"grant_type": "refresh_token", "refresh_token": t_.json().get("refresh_token", "")})
        check("code replay revokes the tokens minted from that code", rr.status_code == 400, rr.text)

        # --- introspection ---------------------------------------------------
        it = requests.post(m["introspection_endpoint"], data={"token": tok["access_token"]},
                           auth=(CLIENT_ID, CLIENT_SECRET), timeout=5)
        check("introspection of an access token", it.status_code == 200 and it.json().get("active") is True, it.text)

        # --- PAR -----------------------------------------------------------
        verifier, challenge = pkce()
        par_q = {"response_type": "code", "client_id": CLIENT_ID, "redirect_uri": REDIRECT, "scope": "openid offline_access",
                 "prompt": "consent",
                 "state": "par-state", "nonce": "par-nonce", "code_challenge": challenge, "code_challenge_method": "S256"}
        pr = requests.post(m["pushed_authorization_request_endpoint"], data=par_q, auth=(CLIENT_ID, CLIENT_SECRET), timeout=5)
        show("PAR", pr)
        check("PAR returns 201 request_uri + expires_in", pr.status_code == 201 and pr.json().get("request_uri", "").startswith("urn:uuid:")
              and "expires_in" in pr.json(), pr.text)
        if pr.status_code == 201:
            ra = requests.get(m["authorization_endpoint"], params={"client_id": CLIENT_ID, "request_uri": pr.json()["request_uri"]},
                              allow_redirects=False, timeout=5)
            pp = redirect_params(ra)
            check("authorization with PAR request_uri -> code", ra.status_code == 302 and pp.get("state") == "par-state"
                  and bool(pp.get("code")), f"{ra.status_code} {ra.headers.get('Location')} {ra.text[:200]}")
            tp = op.token({"grant_type": "authorization_code", "code": pp.get("code", ""), "redirect_uri": REDIRECT,
                           "code_verifier": verifier})
            check("token for PAR code", tp.status_code == 200 and jwt_claims(tp.json()["id_token"]).get("nonce") == "par-nonce", tp.text)
            ra2 = requests.get(m["authorization_endpoint"], params={"client_id": CLIENT_ID, "request_uri": pr.json()["request_uri"]},
                               allow_redirects=False, timeout=5)
            check("PAR request_uri is one-time", ra2.status_code >= 400 or "error=" in ra2.headers.get("Location", ""),
                  f"{ra2.status_code} {ra2.text[:200]}")
        pr_bad = requests.post(m["pushed_authorization_request_endpoint"], data=par_q, auth=(CLIENT_ID, "wrong"), timeout=5)
        check("PAR with wrong client secret 401", pr_bad.status_code == 401, f"{pr_bad.status_code} {pr_bad.text}")

        # --- RP-initiated logout -------------------------------------------
        lo = requests.get(m["end_session_endpoint"], params={"id_token_hint": tok["id_token"],
                                                              "post_logout_redirect_uri": LOGOUT_REDIRECT, "state": "bye"},
                          allow_redirects=False, timeout=5)
        ok = lo.status_code == 302 and "/verify_logout?" in lo.headers.get("Location", "")
        check("end_session -> OP logout confirmation", ok, f"{lo.status_code} {lo.headers.get('Location')} {lo.text[:200]}")
        if ok:
            lo2 = requests.get(lo.headers["Location"], allow_redirects=False, timeout=5)
            check("logout confirmed -> post_logout_redirect_uri?state=bye",
                  lo2.status_code == 302 and lo2.headers.get("Location") == LOGOUT_REDIRECT + "?state=bye",
                  f"{lo2.status_code} {lo2.headers.get('Location')} {lo2.text[:200]}")
            gone = op.token({"grant_type": "refresh_token", "refresh_token": r4.json().get("refresh_token", "")})
            # logout revokes that session's grant: its tokens stop working
            check("refresh token of the logged-out session refused", gone.status_code == 400, gone.text)
        lo_bad = requests.get(m["end_session_endpoint"], params={"id_token_hint": tok["id_token"],
                                                                  "post_logout_redirect_uri": "http://evil.example/"},
                              allow_redirects=False, timeout=5)
        check("end_session with unregistered post_logout_redirect_uri refused", lo_bad.status_code == 400, lo_bad.text)

        # --- stats -----------------------------------------------------------
        st = op.stats()
        info(f"/_stats: {json.dumps(st)}")
        info(f"client-side tally: {json.dumps(op.sent)}")
        check("/_stats token counts by grant_type match what was sent", st["token"] == op.sent["token"]
              and min(st["token"][k] for k in ("authorization_code", "refresh_token", "token-exchange")) >= 5,
              f"got {st['token']} sent {op.sent['token']}")
        check("/_stats ok/error split matches the responses", st["token_ok"] == op.sent["token_ok"]
              and st["token_error"] == op.sent["token_error"], json.dumps(st))
        requests.post(op.base + "/_stats/reset", timeout=5)
        check("/_stats/reset", op.stats()["token"]["authorization_code"] == 0)
    finally:
        rc = op.stop()
        check("provider A exits 0 on SIGTERM", rc == 0, f"rc={rc}")


# ---------------------------------------------------------------------------


def dpop_proof(key, htm, htu, ath=None):
    from cryptojwt.jws.jws import JWS

    payload = {"jti": uuid.uuid4().hex, "htm": htm, "htu": htu, "iat": int(time.time())}
    if ath:
        payload["ath"] = ath
    key.kid = ""
    jwk = {k: v for k, v in key.serialize(private=False).items() if k != "kid"}
    return JWS(json.dumps(payload), alg="ES256").sign_compact(keys=[key], typ="dpop+jwt", jwk=jwk)


def run_b() -> None:
    from cryptojwt.jwk.ec import new_ec_key

    print("== provider B: --dpop --implicit-consent --always-refresh")
    op = Provider("--dpop", "--implicit-consent", "--always-refresh")
    info(" ".join(op.cmd))
    try:
        m = op.meta
        check("discovery lists dpop_signing_alg_values_supported (--dpop)",
              "ES256" in m.get("dpop_signing_alg_values_supported", []), str(m.get("dpop_signing_alg_values_supported")))
        check("no PAR endpoint without --par", "pushed_authorization_request_endpoint" not in m)
        key = new_ec_key("P-256")
        jkt = key.thumbprint("SHA-256").decode()  # cryptojwt returns the base64url RFC 7638 thumbprint

        verifier, challenge = pkce()
        r, q = op.authorize(challenge=challenge, consent=False)  # --implicit-consent adds it
        code = redirect_params(r).get("code", "")
        check("--implicit-consent: offline_access without prompt=consent -> code", bool(code), r.headers.get("Location"))
        nodpop = op.token({"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                           "code_verifier": verifier})
        show("token without DPoP proof", nodpop)
        check("token request without DPoP proof refused", nodpop.status_code == 400, nodpop.text)
        wrong_htu = op.token({"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                              "code_verifier": verifier},
                             headers={"DPoP": dpop_proof(key, "POST", op.base + "/elsewhere")})
        check("DPoP proof with wrong htu refused", wrong_htu.status_code == 400, wrong_htu.text)
        t = op.token({"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "code_verifier": verifier},
                     headers={"DPoP": dpop_proof(key, "POST", m["token_endpoint"])})
        show("token with DPoP proof", t)
        check("token with DPoP proof -> token_type DPoP", t.status_code == 200 and t.json().get("token_type") == "DPoP", t.text)
        if t.status_code != 200:
            return
        tok = t.json()
        cnf = jwt_claims(tok["access_token"]).get("cnf", {})
        info(f"access token cnf={cnf}, client jkt={jkt}")
        check("access token bound: cnf.jkt == key thumbprint", cnf.get("jkt") == jkt, f"{cnf} vs {jkt}")

        at = tok["access_token"]
        ath_b64 = b64url(hashlib.sha256(at.encode()).digest())   # RFC 9449
        ath_hex = hashlib.sha256(at.encode()).hexdigest()        # what idpyoidc 5.0.0 compares
        u_rfc = requests.get(m["userinfo_endpoint"], timeout=5, headers={
            "Authorization": f"DPoP {at}", "DPoP": dpop_proof(key, "GET", m["userinfo_endpoint"], ath_b64)})
        show("userinfo DPoP, RFC 9449 ath (base64url)", u_rfc)
        u_hex = requests.get(m["userinfo_endpoint"], timeout=5, headers={
            "Authorization": f"DPoP {at}", "DPoP": dpop_proof(key, "GET", m["userinfo_endpoint"], ath_hex)})
        show("userinfo DPoP, hex ath", u_hex)
        check("userinfo DPoP: idpyoidc wants a HEX ath (RFC 9449 base64url refused)",
              u_hex.status_code == 200 and u_rfc.status_code == 401, f"{u_rfc.text} / {u_hex.text}")
        u_nop = requests.get(m["userinfo_endpoint"], timeout=5, headers={"Authorization": f"DPoP {at}"})
        check("userinfo without DPoP proof refused", u_nop.status_code == 401, u_nop.text)

        # what idpyoidc does NOT check (informational, not pass/fail)
        other = new_ec_key("P-256")
        u_other = requests.get(m["userinfo_endpoint"], timeout=5, headers={
            "Authorization": f"DPoP {at}", "DPoP": dpop_proof(other, "GET", m["userinfo_endpoint"], ath_hex)})
        info(f"userinfo with a proof from ANOTHER key (cnf.jkt not compared): HTTP {u_other.status_code}")
        same = dpop_proof(key, "GET", m["userinfo_endpoint"], ath_hex)
        u_r1 = requests.get(m["userinfo_endpoint"], timeout=5, headers={"Authorization": f"DPoP {at}", "DPoP": same})
        u_r2 = requests.get(m["userinfo_endpoint"], timeout=5, headers={"Authorization": f"DPoP {at}", "DPoP": same})
        info(f"same DPoP proof twice (no jti replay check): HTTP {u_r1.status_code}, {u_r2.status_code}")

        # idpyoidc's own refresh grant: `resource` is ignored (no --refresh-resource)
        r = op.token({"grant_type": "refresh_token", "refresh_token": tok["refresh_token"],
                      "resource": "https://orders.example"},
                     headers={"DPoP": dpop_proof(other, "POST", m["token_endpoint"])})
        show("refresh with resource, plain idpyoidc, proof from ANOTHER key", r)
        ok = r.status_code == 200
        check("refresh with DPoP proof", ok and r.json().get("token_type") == "DPoP", r.text)
        if ok:
            rc_ = jwt_claims(r.json()["access_token"])
            info(f"refreshed token cnf={rc_.get('cnf')} (original key {jkt}): refresh token not bound to the key")
            check("plain idpyoidc ignores resource on refresh (aud unchanged)", rc_.get("aud") == [CLIENT_ID], str(rc_.get("aud")))

        v2, c2 = pkce()
        r2, _ = op.authorize(scope="openid profile", challenge=c2)
        ta = op.token({"grant_type": "authorization_code", "redirect_uri": REDIRECT, "code_verifier": v2,
                       "code": redirect_params(r2).get("code", "")},
                      headers={"DPoP": dpop_proof(key, "POST", m["token_endpoint"])})
        check("--always-refresh: refresh token without offline_access", ta.status_code == 200 and "refresh_token" in ta.json(),
              ta.text)

        te = op.token({"grant_type": TE, "subject_token": at, "subject_token_type": TT_ACCESS, "audience": "orders-api"},
                      headers={"DPoP": dpop_proof(key, "POST", m["token_endpoint"])})
        show("token exchange with DPoP", te)
        check("token exchange with DPoP -> DPoP token", te.status_code == 200 and te.json().get("token_type") == "DPoP", te.text)
    finally:
        rc = op.stop()
        check("provider B exits 0 on SIGTERM", rc == 0, f"rc={rc}")


def run_c() -> None:
    from cryptojwt.jwk.ec import new_ec_key

    print("== provider C: --dpop --dpop-rfc-ath --require-pkce")
    op = Provider("--dpop", "--dpop-rfc-ath", "--require-pkce")
    try:
        m = op.meta
        r, q = op.authorize(scope="openid")
        p = redirect_params(r)
        check("--require-pkce: authorization without code_challenge -> error redirect",
              r.status_code == 302 and p.get("error") == "invalid_request" and p.get("state") == q["state"], str(p))
        key = new_ec_key("P-256")
        verifier, challenge = pkce()
        r, _ = op.authorize(scope="openid profile", challenge=challenge)
        t = op.token({"grant_type": "authorization_code", "code": redirect_params(r).get("code", ""),
                      "redirect_uri": REDIRECT, "code_verifier": verifier},
                     headers={"DPoP": dpop_proof(key, "POST", m["token_endpoint"])})
        check("DPoP code grant", t.status_code == 200 and t.json().get("token_type") == "DPoP", t.text)
        if t.status_code != 200:
            return
        at = t.json()["access_token"]
        ath_b64 = b64url(hashlib.sha256(at.encode()).digest())
        u = requests.get(m["userinfo_endpoint"], timeout=5, headers={
            "Authorization": f"DPoP {at}", "DPoP": dpop_proof(key, "GET", m["userinfo_endpoint"], ath_b64)})
        check("--dpop-rfc-ath: userinfo accepts RFC 9449 ath", u.status_code == 200 and u.json().get("sub") == "alice", u.text)
        u = requests.get(m["userinfo_endpoint"], timeout=5, headers={
            "Authorization": f"DPoP {at}", "DPoP": dpop_proof(key, "GET", m["userinfo_endpoint"], b64url(b"x" * 32))})
        check("--dpop-rfc-ath: wrong ath still refused", u.status_code == 401, u.text)
        u = requests.get(m["userinfo_endpoint"], timeout=5, headers={
            "Authorization": f"DPoP {at}", "DPoP": dpop_proof(key, "POST", m["userinfo_endpoint"], ath_b64)})
        check("--dpop-rfc-ath: wrong htm still refused", u.status_code == 401, u.text)
    finally:
        rc = op.stop()
        check("provider C exits 0 on SIGTERM", rc == 0, f"rc={rc}")


def main() -> int:
    started = time.time()
    run_a()
    run_b()
    run_c()
    print(f"{COUNT - len(FAILURES)} passed, {len(FAILURES)} failed ({time.time() - started:.1f}s)")
    if FAILURES:
        for f in FAILURES:
            print(f"  failed: {f}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
