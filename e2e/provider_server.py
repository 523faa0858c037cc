"""The OpenID provider used by the end-to-end suite.

It is the third-party `oidc-provider-mock` (PyPI, 0.3.x: Flask + Authlib) run as a
separate process, with a few things that a real provider has and the mock lacks
added around it, all with Authlib's own building blocks:

* registered clients only (client id, secret, auth method, exact redirect URIs);
* PKCE enforced, S256 only (Authlib's ``CodeChallenge`` extension);
* RFC 7009 token revocation at ``/oauth2/revoke``;
* RFC 9207 ``iss`` in the authorization response (advertised in discovery);
* refresh-token rotation (configurable) and separately configurable lifetimes
  of the first access token and of refreshed ones;
* a ``sid`` claim in ID tokens and signed back-channel ``logout_token``s;
* the RFC 6749 §4.4 client-credentials grant for confidential clients (any scope,
  an optional ``audience``), counted per request.
* (off unless asked for) encrypted ID tokens and UserInfo answers (OIDC Core §10.2):
  ``--encrypt-id-token ALG:ENC``, ``--encrypt-userinfo ALG:ENC`` and ``--sign-userinfo``; the
  JWEs are made with joserfc, a JOSE implementation independent of the gateway's, to the
  client's ``use: enc`` key fetched from its JWKS (``--encryption-jwks-url`` or
  ``POST /_test/encryption``).

Test-only endpoints under ``/_test/`` expose counters and every issued token
so that the tests can check what the gateway did without seeing its memory.

Run: ``python provider_server.py --port 0 --port-file F`` (prints nothing
useful on stdout; logs every request).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import html
import json
import logging
import os
import secrets
import sys
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")

import flask  # noqa: E402
import werkzeug.serving  # noqa: E402
from authlib.jose import JsonWebToken  # noqa: E402
from authlib.oauth2.rfc6749 import InvalidRequestError  # noqa: E402
from authlib.oauth2.rfc6749.grants import ClientCredentialsGrant  # noqa: E402
from authlib.oauth2.rfc6750 import BearerTokenGenerator  # noqa: E402
from authlib.oauth2.rfc7009 import RevocationEndpoint  # noqa: E402
from authlib.oauth2.rfc7636 import CodeChallenge  # noqa: E402
from authlib.common.security import generate_token  # noqa: E402

import oidc_provider_mock  # noqa: E402
from oidc_provider_mock import _app as mock_app  # noqa: E402
from oidc_provider_mock._storage import AccessToken, Client, User  # noqa: E402

log = logging.getLogger("provider")

# --------------------------------------------------------------------------
# Runtime configuration, changeable through POST /_test/config
# --------------------------------------------------------------------------

CONFIG = {
    "access_ttl": 3600,  # lifetime of the access token from the code exchange
    "refresh_access_ttl": 3600,  # lifetime of access tokens from refresh grants
    "rotate_refresh_tokens": True,  # refresh grant returns a new refresh token, old one dies
    "token_delay_ms": 0,  # delay of refresh_token grants (to make refreshes overlap)
    "fail_refresh": None,  # e.g. "invalid_grant": refresh grants answer that error
    "iss_param": True,  # RFC 9207 iss in the authorization response
    "kid_header": True,  # `kid` in the ID token header
    # make the next code-exchange answers carry a bad ID token: one of
    # "aud", "nonce", "iss", "exp", "iat_future", "sig", "alg_none", "other_key", "azp"
    "id_token_tamper": None,
    # refresh answers carry an ID token (OIDC Core 12.2): None (none, the default), "valid",
    # "other_sub" (names another user), "auth_time" (a new auth_time), "sig" (bad signature)
    "refresh_id_token": None,
    # UserInfo answers: "userinfo_sub" replaces `sub`; "userinfo_extra" (an object) adds claims
    "userinfo_sub": None,
    "userinfo_extra": None,
    # client-credentials grants: token lifetime, delay (to make concurrent callers overlap),
    # and an OAuth error to answer instead (e.g. "invalid_client")
    "client_access_ttl": 3600,
    "client_token_delay_ms": 0,
    "fail_client_credentials": None,
}
DEFAULTS = dict(CONFIG)

LOCK = threading.Lock()
STATS: dict = {}
TOKENS: list[dict] = []  # every token issued: kind, token, sub, client_id, grant_type, ...
CHALLENGES: dict[str, tuple[str, str | None]] = {}  # auth code -> (challenge, method)
SIDS: dict[str, str] = {}  # access token -> sid of the ID token issued with it


def reset_stats():
    with LOCK:
        STATS.clear()
        STATS.update(
            {
                "token_requests": {},  # grant_type -> count (every POST /oauth2/token)
                "token_errors": {},  # grant_type -> count of non-200
                "token_auth_methods": {},  # client_secret_basic/post/none -> count
                "authorize_requests": [],  # query params of each GET /oauth2/authorize
                "revocations": [],  # each POST /oauth2/revoke
                "end_session": [],  # params of each end_session call
                "userinfo": 0,
                "client_credentials": [],  # {scope, audience, auth} of each client_credentials request
            }
        )


reset_stats()


def _now() -> float:
    return time.time()


# --------------------------------------------------------------------------
# PKCE: S256 only, required for every authorization request
# --------------------------------------------------------------------------


class S256Only(CodeChallenge):
    DEFAULT_CODE_CHALLENGE_METHOD = "S256"
    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant, redirect_uri):
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("Missing 'code_challenge' (PKCE is required)")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256")
        return super().validate_code_challenge(grant, redirect_uri)

    def get_authorization_code_challenge(self, authorization_code):
        return CHALLENGES.get(authorization_code.code, (None, None))[0]

    def get_authorization_code_challenge_method(self, authorization_code):
        return CHALLENGES.get(authorization_code.code, (None, None))[1]


_orig_save_code = mock_app.AuthorizationCodeGrant.save_authorization_code


def _save_code(self, code, request):
    data = request.payload.data
    CHALLENGES[code] = (data.get("code_challenge"), data.get("code_challenge_method"))
    return _orig_save_code(self, code, request)


mock_app.AuthorizationCodeGrant.save_authorization_code = _save_code
# Public clients (token_endpoint_auth_method "none", PKCE only) exchange codes and refresh too; the
# mock's grants only accept client_secret_basic/post.
for _grant in (mock_app.AuthorizationCodeGrant, mock_app.RefreshTokenGrant):
    _grant.TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

# ID tokens get a fresh `sid` (session id at the provider) for back-channel logout.
_orig_user_info = mock_app.OpenIDCode.generate_user_info


def _user_info(self, user, scope):
    info = dict(_orig_user_info(self, user, scope))
    info["sid"] = "sid-" + secrets.token_urlsafe(12)
    return info


mock_app.OpenIDCode.generate_user_info = _user_info

# The mock signs ID tokens without a `kid` header although its JWKS has one (the
# key's RFC 7638 thumbprint). Real providers send it; so do we unless --no-kid.
_orig_jwt_config = mock_app.OpenIDCode.get_jwt_config


def _jwt_config(self, grant, client=None):
    conf = _orig_jwt_config(self, grant, client)
    if CONFIG["kid_header"]:
        conf["kid"] = mock_app.storage.jwk.thumbprint()
    return conf


mock_app.OpenIDCode.get_jwt_config = _jwt_config
_orig_client_claims = mock_app.OpenIDCode.get_client_claims


def _client_claims(self, client):
    claims = _orig_client_claims(self, client)
    claims.pop("kid", None)  # authlib copies the whole jwt config into the claims
    return claims


mock_app.OpenIDCode.get_client_claims = _client_claims

# Refresh-token rotation: the refresh grant returns a new refresh token and the
# old one stops working (when CONFIG["rotate_refresh_tokens"]).
_orig_revoke_old = mock_app.RefreshTokenGrant.revoke_old_credential


def _revoke_old(self, refresh_token):
    _orig_revoke_old(self, refresh_token)
    if CONFIG["rotate_refresh_tokens"]:
        mock_app.storage.remove_refresh_token(refresh_token.token)


mock_app.RefreshTokenGrant.revoke_old_credential = _revoke_old


def _issue_token(self, user, refresh_token):
    scope = self.request.payload.scope or refresh_token.get_scope()
    return self.generate_token(
        user=user, scope=scope, include_refresh_token=bool(CONFIG["rotate_refresh_tokens"])
    )


mock_app.RefreshTokenGrant.issue_token = _issue_token


# --------------------------------------------------------------------------
# RFC 6749 §4.4 client credentials (the mock has no such grant)
# --------------------------------------------------------------------------

Client.GRANT_TYPES_SUPPORTED = (*Client.GRANT_TYPES_SUPPORTED, "client_credentials")


class ClientCredentials(ClientCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def validate_requested_scope(self):
        # API scopes (reports.read, ...) are not in the mock's OIDC scopes_supported: any is granted.
        pass

    def generate_token(self, **kwargs):
        kwargs["scope"] = kwargs.get("scope") or ""  # the mock's Client cannot filter a None scope
        return super().generate_token(**kwargs)

    def save_token(self, token):
        # The mock's save_token wants a user; this token belongs to the client itself.
        flask.g.oidc_provider_mock_storage.store_access_token(AccessToken(
            token=token["access_token"], user_id="client:" + self.request.client.id,
            scope=token.get("scope") or "",
            expires_at=datetime.now(timezone.utc) + timedelta(seconds=token["expires_in"])))


# --------------------------------------------------------------------------
# RFC 7009 revocation
# --------------------------------------------------------------------------


class Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

    def query_token(self, token_string, token_type_hint):
        st = mock_app.storage
        if token_type_hint == "access_token":
            # Wrapped as below: the mock's access tokens cannot check their client (they raise),
            # which turned the revocation of a live access token into a 500 now and then.
            return _AccessAsRevocable.wrap(st.get_access_token(token_string)) or st.get_refresh_token(token_string)
        return st.get_refresh_token(token_string) or _AccessAsRevocable.wrap(
            st.get_access_token(token_string)
        )

    def revoke_token(self, token, request):
        st = mock_app.storage
        if isinstance(token, _AccessAsRevocable):
            st.remove_access_token(token.inner.token)
            return
        if hasattr(token, "access_token"):  # a RefreshToken: revoke it and its access token
            st.remove_refresh_token(token.token)
            st.remove_access_token(token.access_token)
        else:
            st.remove_access_token(token.token)


class _AccessAsRevocable:
    """Access tokens of the mock cannot say which client they belong to; we allow
    any authenticated client to revoke them (RFC 7009 leaves that open)."""

    def __init__(self, inner):
        self.inner = inner

    @classmethod
    def wrap(cls, inner):
        return cls(inner) if inner is not None else None

    def check_client(self, client):
        return True


# --------------------------------------------------------------------------
# App
# --------------------------------------------------------------------------


def build_app(args) -> flask.Flask:
    users = [
        User(sub="alice", claims={"email": "alice@example.com", "email_verified": True,
                                  "name": "Alice Example", "preferred_username": "alice"}),
        User(sub="bob", claims={"email": "bob@example.com", "name": "Bob Example"}),
    ]
    app = oidc_provider_mock.app(
        require_client_registration=True,
        require_nonce=True,
        issue_refresh_token=True,
        access_token_max_age=timedelta(seconds=args.id_token_ttl),
        user_claims=users,
    )

    # Reach the per-app objects the mock keeps in closures.
    with app.test_request_context("/"):
        app.preprocess_request()
        server = flask.g._authlib_authorization_server
        storage = flask.g.oidc_provider_mock_storage

    # PKCE on the authorization-code grant.
    for grant_cls, exts in server._authorization_grants:
        if grant_cls is mock_app.AuthorizationCodeGrant:
            exts.append(S256Only(required=True))

    # Token lifetimes from CONFIG, read at issuance.
    def expires_in(client, grant_type):
        if grant_type == "refresh_token":
            return int(CONFIG["refresh_access_ttl"])
        if grant_type == "client_credentials":
            return int(CONFIG["client_access_ttl"])
        return int(CONFIG["access_ttl"])

    server.register_token_generator(
        "default",
        BearerTokenGenerator(
            lambda *a, **k: generate_token(42), lambda *a, **k: generate_token(48), expires_in
        ),
    )
    server.register_endpoint(Revocation)
    server.register_grant(ClientCredentials)

    for spec in args.client:
        cid, secret, method = (spec.split(":") + ["client_secret_basic"])[:3]
        storage.store_client(
            Client(id=cid, secret=secret, redirect_uris=list(args.redirect_uri),
                   allowed_scopes=Client.SCOPES_SUPPORTED, token_endpoint_auth_method=method)
        )

    def issuer() -> str:
        return flask.request.host_url.rstrip("/")

    # Encryption (options off by default): registered before `_after` so that it runs after it
    # (Flask calls after_request hooks in reverse order) and encrypts the final answer.
    if args.encrypt_id_token or args.encrypt_userinfo:
        _install_encryption(app, args, storage, issuer)

    # ---- request hooks -------------------------------------------------

    @app.before_request
    def _before():
        req = flask.request
        if req.path == "/oauth2/token" and req.method == "POST":
            gt = req.form.get("grant_type", "?")
            method = "client_secret_basic" if req.authorization else (
                "client_secret_post" if req.form.get("client_secret") else "none")
            with LOCK:
                STATS["token_requests"][gt] = STATS["token_requests"].get(gt, 0) + 1
                STATS["token_auth_methods"][method] = STATS["token_auth_methods"].get(method, 0) + 1
            if gt == "refresh_token":
                refused = _delay_or_refuse(gt, CONFIG["token_delay_ms"], CONFIG["fail_refresh"])
                if refused:
                    return refused
            if gt == "client_credentials":
                with LOCK:
                    STATS["client_credentials"].append({"scope": req.form.get("scope"),
                                                        "audience": req.form.get("audience"),
                                                        "auth": method, "at": _now()})
                refused = _delay_or_refuse(gt, CONFIG["client_token_delay_ms"], CONFIG["fail_client_credentials"])
                # The mock's token view knows only its own two grants: Authlib answers this one.
                return refused or server.create_token_response()
        elif req.path == "/oauth2/authorize" and req.method == "GET":
            with LOCK:
                STATS["authorize_requests"].append(dict(req.args.items(multi=False)))
        elif req.path == "/oauth2/end_session":
            with LOCK:
                STATS["end_session"].append(dict(req.values.items(multi=False)))
        elif req.path == "/userinfo":
            with LOCK:
                STATS["userinfo"] += 1

    @app.after_request
    def _after(resp: flask.Response):
        req = flask.request
        if req.path == "/.well-known/openid-configuration" and resp.status_code == 200:
            doc = json.loads(resp.get_data())
            doc["revocation_endpoint"] = issuer() + "/oauth2/revoke"
            doc["revocation_endpoint_auth_methods_supported"] = [
                "client_secret_basic", "client_secret_post", "none"]
            doc["token_endpoint_auth_methods_supported"] = [
                "client_secret_basic", "client_secret_post", "none"]
            doc["code_challenge_methods_supported"] = ["S256"]
            doc["claims_supported"] = ["sub", "iss", "aud", "exp", "iat", "nonce", "sid",
                                       "email", "name", "preferred_username"]
            doc["response_modes_supported"] = ["query", "form_post"]
            doc["backchannel_logout_supported"] = True
            doc["backchannel_logout_session_supported"] = True
            if CONFIG["iss_param"]:
                doc["authorization_response_iss_parameter_supported"] = True
            resp.set_data(json.dumps(doc, indent=2))
        elif req.path == "/oauth2/authorize" and resp.status_code in (301, 302, 303, 307):
            loc = resp.headers.get("Location", "")
            parts = urlsplit(loc)
            q = parse_qsl(parts.query, keep_blank_values=True)
            names = {k for k, _ in q}
            # The mock's "deny" answer forgets `state`; RFC 6749 4.1.2.1 wants it.
            if "error" in names and "state" not in names and req.args.get("state"):
                q.append(("state", req.args["state"]))
            if CONFIG["iss_param"] and "iss" not in names:
                q.append(("iss", issuer()))
            resp.headers["Location"] = urlunsplit(parts._replace(query=urlencode(q)))
            if req.values.get("response_mode") == "form_post":
                # OAuth 2.0 Form Post Response Mode: the same parameters, auto-posted to the redirect URI.
                return _form_post(urlunsplit(parts._replace(query="")), q)
        elif req.path == "/oauth2/token" and req.method == "POST":
            gt = req.form.get("grant_type", "?")
            if resp.status_code == 200:
                body = json.loads(resp.get_data())
                if gt == "refresh_token" and CONFIG["refresh_id_token"]:
                    body["id_token"] = _refresh_id_token(body, req, CONFIG["refresh_id_token"], storage, issuer())
                    resp.set_data(json.dumps(body))
                if CONFIG["id_token_tamper"] and body.get("id_token"):
                    body["id_token"] = _tamper(body["id_token"], CONFIG["id_token_tamper"], storage)
                    resp.set_data(json.dumps(body))
                sub = None
                claims = {}
                if body.get("id_token"):
                    claims = _jwt_payload(body["id_token"])
                    sub = claims.get("sub")
                at = storage.get_access_token(body.get("access_token", ""))
                if at is not None:
                    sub = sub or at.user_id
                cid = req.authorization.username if req.authorization else req.form.get("client_id")
                rec = {"grant_type": gt, "sub": sub, "client_id": cid, "at": _now(),
                       "expires_in": body.get("expires_in")}
                with LOCK:
                    for kind in ("access_token", "refresh_token", "id_token"):
                        if body.get(kind):
                            TOKENS.append({**rec, "kind": kind, "token": body[kind],
                                           "sid": claims.get("sid")})
            else:
                with LOCK:
                    STATS["token_errors"][gt] = STATS["token_errors"].get(gt, 0) + 1
                log.warning("token endpoint error %s: %s", resp.status_code, resp.get_data(as_text=True))
        elif req.path == "/userinfo" and resp.status_code == 200 and (
                CONFIG["userinfo_sub"] or CONFIG["userinfo_extra"]):
            info = json.loads(resp.get_data())
            if CONFIG["userinfo_sub"]:
                info["sub"] = CONFIG["userinfo_sub"]
            info.update(CONFIG["userinfo_extra"] or {})
            resp.set_data(json.dumps(info))
        elif req.path == "/oauth2/revoke":
            with LOCK:
                STATS["revocations"].append({
                    "status": resp.status_code,
                    "token_type_hint": req.form.get("token_type_hint"),
                    "token": req.form.get("token"),
                    "auth": "client_secret_basic" if req.authorization else (
                        "client_secret_post" if req.form.get("client_secret") else "none"),
                    "at": _now(),
                })
        return resp

    @app.post("/oauth2/revoke")
    def revoke():
        return server.create_endpoint_response("revocation")

    # ---- test-only endpoints -------------------------------------------

    @app.get("/_test/stats")
    def t_stats():
        with LOCK:
            return flask.jsonify(STATS)

    @app.post("/_test/reset")
    def t_reset():
        reset_stats()
        CONFIG.update(DEFAULTS)
        return flask.jsonify(CONFIG)

    @app.route("/_test/config", methods=["GET", "POST"])
    def t_config():
        if flask.request.method == "POST":
            body = flask.request.get_json(force=True)
            unknown = set(body) - set(CONFIG)
            if unknown:
                return flask.jsonify({"error": f"unknown keys {sorted(unknown)}"}), 400
            CONFIG.update(body)
        return flask.jsonify(CONFIG)

    @app.get("/_test/tokens")
    def t_tokens():
        out = []
        with LOCK:
            items = list(TOKENS)
        for t in items:
            out.append({**t, "active": _active(storage, t)})
        return flask.jsonify(out)

    @app.post("/_test/introspect")
    def t_introspect():
        token = flask.request.form.get("token") or flask.request.get_json(force=True).get("token")
        at = storage.get_access_token(token)
        rt = storage.get_refresh_token(token)
        if rt is not None:
            return flask.jsonify({"active": True, "kind": "refresh_token", "sub": rt.user_id})
        if at is not None:
            return flask.jsonify({"active": not at.is_expired(), "kind": "access_token",
                                  "sub": at.user_id,
                                  "exp": at.expires_at.timestamp()})
        return flask.jsonify({"active": False})

    @app.post("/_test/clients")
    def t_clients():
        """Register or extend a client: {client_id, client_secret, auth_method, redirect_uris}."""
        body = flask.request.get_json(force=True)
        cid = body["client_id"]
        old = storage.get_client(cid)
        uris = list(old.redirect_uris) if old else []
        for u in body.get("redirect_uris", []):
            if u not in uris:
                uris.append(u)
        client = Client(
            id=cid,
            secret=body.get("client_secret", old.secret if old else ""),
            redirect_uris=uris,
            allowed_scopes=Client.SCOPES_SUPPORTED,
            token_endpoint_auth_method=body.get(
                "auth_method", old.token_endpoint_auth_method if old else "client_secret_basic"),
        )
        storage.store_client(client)
        return flask.jsonify({"client_id": cid, "redirect_uris": uris,
                              "auth_method": client.token_endpoint_auth_method})

    @app.post("/_test/logout_token")
    def t_logout_token():
        """A signed back-channel logout token. Body: claims to set/override;
        a claim given as null is removed; "alg" may be given to pick the header alg."""
        body = flask.request.get_json(force=True)
        now = int(time.time())
        claims = {
            "iss": issuer(),
            "aud": body.get("aud"),
            "iat": now,
            "exp": now + 120,
            "jti": str(uuid.uuid4()),
            "events": {"http://schemas.openid.net/event/backchannel-logout": {}},
        }
        for k, v in body.items():
            if k == "alg":
                continue
            if v is None:
                claims.pop(k, None)
            else:
                claims[k] = v
        key = storage.jwk
        header = {"alg": "RS256", "kid": key.as_dict().get("kid"), "typ": "logout+jwt"}
        token = JsonWebToken(["RS256"]).encode(header, claims, key).decode()
        return flask.jsonify({"logout_token": token, "claims": claims})

    return app


def _form_post(action: str, fields) -> flask.Response:
    inputs = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">' for k, v in fields)
    page = (f'<!doctype html><html><body onload="document.forms[0].submit()">'
            f'<form method="post" action="{html.escape(action)}">{inputs}'
            f'<button type="submit">Continue</button></form></body></html>')
    return flask.Response(page, status=200, mimetype="text/html")


def _delay_or_refuse(grant_type: str, delay_ms, error):
    """The test configuration's delay for a grant, then its refusal (an OAuth error answer) if set."""
    if delay_ms:
        time.sleep(delay_ms / 1000)
    if not error:
        return None
    with LOCK:
        STATS["token_errors"][grant_type] = STATS["token_errors"].get(grant_type, 0) + 1
    return flask.jsonify({"error": error, "error_description": "refused by test config"}), 400


def _tamper(token: str, how: str, storage) -> str:
    header = json.loads(_b64d(token.split(".")[0]))
    claims = _jwt_payload(token)
    key = storage.jwk
    now = int(time.time())
    if how == "sig":
        h, p, sig = token.split(".")
        return ".".join([h, p, ("A" if sig[0] != "A" else "B") + sig[1:]])
    if how == "alg_none":
        enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()
        return enc({"alg": "none", "typ": "JWT"}) + "." + enc(claims) + "."
    if how == "other_key":
        from authlib import jose
        key = jose.RSAKey.generate_key(is_private=True)
    elif how == "aud":
        claims["aud"] = ["someone-else"]
    elif how == "azp":
        claims["aud"] = [claims["aud"][0] if isinstance(claims["aud"], list) else claims["aud"], "other-aud"]
        claims["azp"] = "other-aud"
    elif how == "nonce":
        claims["nonce"] = "not-the-nonce"
    elif how == "iss":
        claims["iss"] = "http://127.0.0.1:1"
    elif how == "exp":
        claims["exp"] = now - 600
        claims["iat"] = now - 1200
    elif how == "iat_future":
        claims["iat"] = now + 3600
        claims["exp"] = now + 7200
    else:
        raise ValueError(how)
    return JsonWebToken(["RS256"]).encode(header, claims, key).decode()


def _refresh_id_token(body: dict, req, how: str, storage, iss: str) -> str:
    """An ID token for a refresh answer (OIDC Core 12.2), good or spoiled as `how` says."""
    at = storage.get_access_token(body.get("access_token", ""))
    cid = req.authorization.username if req.authorization else req.form.get("client_id")
    now = int(time.time())
    claims = {"iss": iss, "sub": at.user_id if at is not None else "?", "aud": [cid],
              "iat": now, "exp": now + 600, "refreshed": True}
    if how == "other_sub":
        claims["sub"] = "mallory"
    elif how == "auth_time":
        claims["auth_time"] = now
    key = storage.jwk
    header = {"alg": "RS256", "kid": key.thumbprint()}
    token = JsonWebToken(["RS256"]).encode(header, claims, key).decode()
    if how == "sig":
        h, p, sig = token.split(".")
        token = ".".join([h, p, ("A" if sig[0] != "A" else "B") + sig[1:]])
    return token


def _b64d(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def _active(storage, rec) -> bool:
    if rec["kind"] == "access_token":
        at = storage.get_access_token(rec["token"])
        return at is not None and not at.is_expired()
    if rec["kind"] == "refresh_token":
        return storage.get_refresh_token(rec["token"]) is not None
    return True


def _jwt_payload(token: str) -> dict:
    part = token.split(".")[1]
    part += "=" * (-len(part) % 4)
    return json.loads(base64.urlsafe_b64decode(part))


# --------------------------------------------------------------------------
# Encrypted ID tokens and UserInfo (only with --encrypt-id-token / --encrypt-userinfo)
# --------------------------------------------------------------------------

# The JWE algorithms a client may ask for (OIDC Discovery id_token_encryption_*): those the suite
# tests; the key type each needs.
ENCRYPTION_ALGS = {"RSA-OAEP": "RSA", "RSA-OAEP-256": "RSA", "ECDH-ES": "EC",
                   "ECDH-ES+A128KW": "EC", "ECDH-ES+A256KW": "EC"}
ENCRYPTION_ENCS = ("A128CBC-HS256", "A256GCM")

# Where the recipient key comes from, set by --encryption-jwks-url and POST /_test/encryption:
# `jwks_url` (fetched at each encryption; `kid` picks one of its keys, else the first `use: enc`
# key of the right kty), or `jwk` (the public JWK itself, e.g. a key the client no longer has).
ENCRYPTION = {"jwks_url": None, "kid": None, "jwk": None}
ENCRYPTED: list[dict] = []  # every JWE made: what, protected header, jwe, inner (the plaintext)


def _alg_enc(text: str) -> tuple[str, str]:
    alg, _, enc = text.rpartition(":")
    if alg not in ENCRYPTION_ALGS or enc not in ENCRYPTION_ENCS:
        raise argparse.ArgumentTypeError(f"{text!r}: ALG:ENC with ALG in {sorted(ENCRYPTION_ALGS)}, "
                                         f"ENC in {list(ENCRYPTION_ENCS)}")
    return alg, enc


def _recipient_key(alg: str) -> dict:
    """The client's public encryption JWK for `alg`."""
    with LOCK:
        conf = dict(ENCRYPTION)
    if conf["jwk"]:
        return conf["jwk"]
    if not conf["jwks_url"]:
        raise RuntimeError("no client encryption key: set --encryption-jwks-url or POST /_test/encryption")
    import requests  # only here: the provider needs it for nothing else

    keys = requests.get(conf["jwks_url"], timeout=5).json().get("keys", [])
    kty = ENCRYPTION_ALGS[alg]
    for k in keys:
        if k.get("use") == "enc" and k.get("kty") == kty and (conf["kid"] is None or k.get("kid") == conf["kid"]):
            return k
    raise RuntimeError(f"no use=enc {kty} key{' ' + conf['kid'] if conf['kid'] else ''} in {conf['jwks_url']}")


def _encrypt(what: str, plaintext: str, alg_enc: tuple[str, str], nested: bool) -> str:
    """A compact JWE of `plaintext` (joserfc), `kid` the recipient's, `cty: JWT` when nested."""
    from joserfc import jwe
    from joserfc.jwk import import_key

    alg, enc = alg_enc
    public = _recipient_key(alg)
    key = import_key({k: v for k, v in public.items() if k not in ("d", "p", "q", "dp", "dq", "qi")})
    header = {"alg": alg, "enc": enc, "kid": public.get("kid") or key.thumbprint()}
    if nested:
        header["cty"] = "JWT"
    token = jwe.encrypt_compact(header, plaintext, key, algorithms=[alg, enc])
    with LOCK:
        ENCRYPTED.append({"what": what, "header": header, "jwe": token, "inner": plaintext, "at": _now()})
    log.info("encrypted %s: %s", what, header)
    return token


def _install_encryption(app: flask.Flask, args, storage, issuer):
    ENCRYPTION["jwks_url"] = args.encryption_jwks_url

    @app.after_request
    def _encrypt_answers(resp: flask.Response):
        req = flask.request
        if resp.status_code != 200 or req.method not in ("GET", "POST"):
            return resp
        if req.path == "/oauth2/token" and args.encrypt_id_token:
            body = json.loads(resp.get_data())
            if body.get("id_token"):
                body["id_token"] = _encrypt("id_token", body["id_token"], args.encrypt_id_token, nested=True)
                resp.set_data(json.dumps(body))
        elif req.path == "/userinfo" and args.encrypt_userinfo:
            info = json.loads(resp.get_data())
            if args.sign_userinfo:
                from joserfc import jwt
                from joserfc.jwk import RSAKey

                key = RSAKey.import_key(storage.jwk.as_dict(is_private=True))
                # `aud`: the client the bearer token was issued to (the mock's tokens do not say;
                # the record of issued tokens does).
                bearer = (req.headers.get("Authorization") or "").partition(" ")[2]
                with LOCK:
                    cid = next((t["client_id"] for t in TOKENS if t["token"] == bearer), None)
                claims = {**info, "iss": issuer(), "aud": cid or args.client[0].split(":")[0]}
                inner = jwt.encode({"alg": "RS256", "kid": storage.jwk.thumbprint(), "typ": "JWT"}, claims, key)
                token = _encrypt("userinfo", inner, args.encrypt_userinfo, nested=True)
            else:
                token = _encrypt("userinfo", json.dumps(info), args.encrypt_userinfo, nested=False)
            resp.set_data(token)
            resp.headers["Content-Type"] = "application/jwt"
        return resp

    @app.route("/_test/encryption", methods=["GET", "POST"])
    def t_encryption():
        """POST {jwks_url?, kid?, jwk?} sets the recipient (a null clears it); GET shows it and
        every JWE made (`encrypted`: what, header, jwe, inner)."""
        if flask.request.method == "POST":
            body = flask.request.get_json(force=True)
            unknown = set(body) - set(ENCRYPTION)
            if unknown:
                return flask.jsonify({"error": f"unknown keys {sorted(unknown)}"}), 400
            with LOCK:
                ENCRYPTION.update(body)
        with LOCK:
            return flask.jsonify({**ENCRYPTION, "id_token": args.encrypt_id_token,
                                  "userinfo": args.encrypt_userinfo, "sign_userinfo": args.sign_userinfo,
                                  "encrypted": list(ENCRYPTED)})


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file", help="write the bound port here once listening")
    p.add_argument("--client", action="append", default=[],
                   help="ID:SECRET[:AUTH_METHOD] of a registered client (repeatable)")
    p.add_argument("--redirect-uri", action="append", default=[],
                   help="redirect URI registered for every --client (repeatable)")
    p.add_argument("--id-token-ttl", type=int, default=3600)
    p.add_argument("--access-ttl", type=int, default=3600)
    p.add_argument("--no-iss-param", action="store_true")
    p.add_argument("--no-rotate", action="store_true")
    p.add_argument("--no-kid", action="store_true", help="ID tokens without `kid` (the mock's own way)")
    # Encrypted ID tokens and UserInfo (OIDC Core §10.2; e2e/test_encrypted_tokens.py). All off by
    # default: without them nothing below changes and /_test/encryption does not exist.
    # --encrypt-id-token: every ID token the token endpoint answers (code exchange, and refresh when
    # `refresh_id_token` is configured) is signed as usual, then encrypted: a nested JWT (the signed
    # token as the JWE payload, `cty: JWT`), to the client's encryption key.
    p.add_argument("--encrypt-id-token", metavar="ALG:ENC", type=_alg_enc, default=None,
                   help="encrypt ID tokens, e.g. RSA-OAEP:A256GCM or ECDH-ES+A128KW:A128CBC-HS256")
    # --encrypt-userinfo: UserInfo answers as `Content-Type: application/jwt`, a JWE of the JSON
    # claims (or, with --sign-userinfo, of a signed JWT of them, `cty: JWT`).
    p.add_argument("--encrypt-userinfo", metavar="ALG:ENC", type=_alg_enc, default=None,
                   help="encrypt UserInfo answers (application/jwt)")
    # --sign-userinfo: with --encrypt-userinfo, the claims are first signed (RS256 with the
    # provider's key, `iss` and `aud` added: OIDC Core §5.3.2), then encrypted.
    p.add_argument("--sign-userinfo", action="store_true",
                   help="with --encrypt-userinfo: sign the claims, then encrypt (nested JWT)")
    # --encryption-jwks-url: the client's JWKS (e.g. the gateway's /.well-known/jwks.json), fetched
    # at each encryption; the key with `use: enc` of the algorithm's kty is used. Can also be set
    # (or replaced by an explicit JWK) at run time through POST /_test/encryption.
    p.add_argument("--encryption-jwks-url", default=None,
                   help="where the client's encryption key is fetched from (JWKS)")
    args = p.parse_args(argv)

    CONFIG["access_ttl"] = DEFAULTS["access_ttl"] = args.access_ttl
    CONFIG["iss_param"] = DEFAULTS["iss_param"] = not args.no_iss_param
    CONFIG["rotate_refresh_tokens"] = DEFAULTS["rotate_refresh_tokens"] = not args.no_rotate
    CONFIG["kid_header"] = DEFAULTS["kid_header"] = not args.no_kid

    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = build_app(args)
    srv = werkzeug.serving.make_server(args.host, args.port, app, threaded=True)
    port = srv.server_port
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, args.port_file)
    log.info("provider listening on http://%s:%d", args.host, port)
    srv.serve_forever()


if __name__ == "__main__":
    main()
