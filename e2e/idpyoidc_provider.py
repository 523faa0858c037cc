#!/usr/bin/env python3
"""A real third-party OpenID provider for the e2e tests: idpyoidc (IdentityPython).

The OAuth/OIDC logic (authorization, PKCE, token endpoint with the
authorization_code, refresh_token and RFC 8693 token-exchange grants, userinfo,
PAR, DPoP, end_session) is idpyoidc's own server code
(``idpyoidc.server``); this file only configures it, puts a small Flask/WSGI
front on it (the job the idpyoidc Flask example ``flask_op/views.py`` does),
logs in a fixed test user without any page, and counts token requests.

    python e2e/idpyoidc_provider.py --port 9510 --client-id gatehouse \
        --client-secret s3cret --redirect-uri http://127.0.0.1:8080/callback \
        [--redirect-uri ...] [--post-logout-redirect-uri ...] \
        [--audience orders-api ...] [--resource https://orders.example ...] \
        [--par] [--dpop [--dpop-rfc-ath]] [--refresh-resource] [--always-refresh] [--implicit-consent] \
        [--require-pkce] [--access-token-ttl 300] [--refresh-token-ttl 86400]
        [--client-jwks client-public.jwks.json] [--id-token-alg ES256]
        [--request-object-jwks client-public.jwks.json] [--record-requests]

Prints ``READY http://127.0.0.1:PORT`` once listening; exits 0 on SIGTERM/SIGINT.

Endpoints (issuer ``http://127.0.0.1:PORT``):
  /.well-known/openid-configuration   discovery (idpyoidc ProviderConfiguration)
  /jwks.json                          the OP's public keys (ID and access tokens are JWTs)
  /authorization                      logs in alice (or bob with login_hint=bob) at once, 302 to redirect_uri
  /token                              authorization_code, refresh_token, token-exchange
  /userinfo                           Bearer (or DPoP with --dpop) access token
  /introspection                      RFC 7662, client_secret_post/basic
  /end_session                        RP-initiated logout, confirmed without a page
  /par                                RFC 9126 pushed authorization requests (--par)
  /_stats                             GET: JSON counters; POST /_stats/reset zeroes them

Behaviour worth knowing (idpyoidc 5.0.0; e2e/idpyoidc_selfcheck.py shows each):
  * Users: alice (default) and bob (login_hint=bob, bob@example.com or
    mail:bob@example.com); sub is the user id. Claims by scope: profile ->
    name, given_name, family_name, preferred_username, groups; email -> email,
    email_verified. The ID token also carries them, plus acr, auth_time, sid,
    scope, jti, nonce. prompt=none, prompt=login, max_age and acr_values are
    all accepted: every request is a fresh automatic login (acr is fixed).
  * scope must contain openid. idpyoidc refuses offline_access unless
    prompt contains consent (error redirect invalid_request "consent in
    prompt"); --implicit-consent adds prompt=consent for such requests.
  * The authorization response is ?code&state&scope&iss&client_id (RFC 9207 iss).
  * Refresh tokens are issued when the granted scope has offline_access
    (--always-refresh: on every code/refresh grant) and rotated: each use
    returns a new one and revokes the old one (revoke_refresh_on_issue);
    reusing the old one -> 400 invalid_request "Refresh token inactive".
    A refresh whose `scope` drops offline_access gets no new refresh token
    but still revokes the old one.
  * Token exchange: subject_token_type access_token or refresh_token;
    `audience` must be one of --audience (else 400 invalid_target "Unknown
    audience"), `resource` one of --resource (else 400 invalid_target
    "Unknown resource"); requested_token_type optional (access_token default).
    idpyoidc only puts `resource` into the new token's aud when `audience`
    is sent too (a bug in its TokenExchangeHelper.process_request).
  * idpyoidc ignores `resource` on the refresh_token grant. With
    --refresh-resource this script honours it (a small subclass of
    idpyoidc's RefreshTokenHelper): `resource` must be one of --resource
    (else 400 invalid_target) and becomes the new access token's aud.
  * --dpop enables idpyoidc's DPoP add-on on /token and /userinfo: a proof is
    then REQUIRED on every token request (400 without one) and tokens come
    back token_type DPoP with cnf.jkt. At /userinfo idpyoidc compares the
    proof's `ath` with the HEX sha256 of the token; --dpop-rfc-ath also
    accepts RFC 9449's base64url form.
  * --client-jwks registers the client for private_key_jwt only (no secret
    is taken) with those public keys; /token and /par then take assertions
    whose aud is the issuer, the token endpoint or the PAR endpoint (RFC 9126
    §2: idpyoidc alone takes only the endpoint's own URL), and /_stats lists
    each assertion's alg and aud (client_assertions).
  * --id-token-alg signs the client's ID tokens with that algorithm.
  * --request-object-jwks registers those public keys for the client's
    request objects (RFC 9101 / OIDC Core §6.1) while client authentication
    stays the secret: idpyoidc verifies a `request` parameter (at
    /authorization and in a PAR body) with the client's keys and then uses
    only what the object says; discovery then lists request_parameter_supported
    true and request_object_signing_alg_values_supported. A `request` whose
    signature does not verify is a 400 invalid_request page (no redirect).
  * --request-uri: discovery says request_uri_parameter_supported true and
    idpyoidc fetches a `request_uri` that is no PAR reference from the URL
    (RFC 9101 §5.2), verifying the object as above (default: false, as
    idpyoidc's own configuration says without PAR).
  * --enc-keys: the provider also has an RSA and a P-256 key with use enc in
    its JWKS and opens request objects encrypted to them (JWE, by value or by
    reference). idpyoidc 5 checks the JWS header's `alg` against the
    encryption algorithms when it fetches an encrypted object by reference (a
    bug that refuses every one); that one check is skipped here, the rest
    (decryption, the signature inside) is idpyoidc's own.
  * --record-requests lists each /authorization and /par request in /_stats
    (`requests`): the parameters as received (client credentials left out)
    and what idpyoidc made of them after verifying (a verified request
    object, state, nonce, login_hint, code_challenge, claims), or its error.
  * Errors: 400 with {"error", "error_description"}; failed client
    authentication 401 invalid_client; bad/missing token at /userinfo 401.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import logging
import os
import shutil
import secrets
import signal
import sys
import tempfile
import threading
from typing import Optional
from urllib.parse import parse_qs, urlencode

from flask import Flask, Response, redirect, request
from werkzeug.serving import make_server

from idpyoidc import verified_claim_name
from idpyoidc.message.oauth2 import ResponseMessage
from idpyoidc.server import Server
from idpyoidc.server.configure import OPConfiguration
from idpyoidc.server.exception import (
    ClientAuthenticationError,
    InvalidClient,
    UnAuthorizedClient,
    UnknownClient,
)
from idpyoidc.server.oauth2.add_on import dpop
from idpyoidc.server.oauth2.add_on.pkce import CC_METHOD
from idpyoidc.server.oauth2.token_helper import validate_token_exchange_policy
from idpyoidc.server.oidc.token_helper.refresh_token import RefreshTokenHelper
from idpyoidc.server.user_authn.user import UserAuthnMethod
from idpyoidc.server.scopes import SCOPE2CLAIMS
from idpyoidc.time_util import utc_time_sans_frac

LOG = logging.getLogger("idpyoidc_provider")

ACR = "urn:oasis:names:tc:SAML:2.0:ac:classes:InternetProtocolPassword"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
TT_ACCESS = "urn:ietf:params:oauth:token-type:access_token"
TT_REFRESH = "urn:ietf:params:oauth:token-type:refresh_token"

USERS = {
    "alice": {
        "sub": "alice",
        "name": "Alice Liddell",
        "given_name": "Alice",
        "family_name": "Liddell",
        "preferred_username": "alice",
        "email": "alice@example.com",
        "email_verified": True,
        "groups": ["admins", "users"],
    },
    "bob": {
        "sub": "bob",
        "name": "Bob Builder",
        "given_name": "Bob",
        "family_name": "Builder",
        "preferred_username": "bob",
        "email": "bob@example.com",
        "email_verified": True,
        "groups": ["users"],
    },
}
DEFAULT_USER = "alice"


def pick_user(hint: Optional[str]) -> str:
    """login_hint -> user id: 'bob', 'bob@example.com', 'mail:bob@example.com' pick bob."""
    if hint:
        h = hint[5:] if hint.startswith("mail:") else hint
        for uid, info in USERS.items():
            if h in (uid, info["email"]):
                return uid
    return DEFAULT_USER


class AutoLogin(UserAuthnMethod):
    """Authenticates at once, no page: the user named by the login hint that the
    front passes in ``authorization`` (idpyoidc's hook for the HTTP
    Authorization header), else alice. Session cookies are deliberately not
    consulted, so each authorization request logs in the hinted user afresh."""

    def __init__(self, upstream_get=None, **kwargs):
        UserAuthnMethod.__init__(self, upstream_get=upstream_get, **kwargs)

    def authenticated_as(self, client_id="", cookie=None, authorization="", **kwargs):
        return {"uid": pick_user(authorization)}, utc_time_sans_frac()

    def done(self, areq):
        # "the user has just authenticated": prompt=login then does not demand
        # a login page (which this provider does not have)
        return False

    def __call__(self, **kwargs):  # never reached: authenticated_as always succeeds
        return "no login page"


class ResourceAwareRefreshHelper(RefreshTokenHelper):
    """idpyoidc's OIDC refresh_token grant plus RFC 8707 ``resource`` (which
    idpyoidc 5.0.0 itself ignores on this grant): a resource outside the
    allowed list is refused with invalid_target; an allowed one becomes the
    audience of the new access token. Only used with --refresh-resource."""

    allowed_resources: list = []

    def post_parse_request(self, request, client_id="", **kwargs):
        request = RefreshTokenHelper.post_parse_request(self, request, client_id, **kwargs)
        if isinstance(request, ResponseMessage) and "error" in request:
            return request
        res = request.get("resource")
        if res:
            res = [res] if isinstance(res, str) else list(res)
            if not set(res).issubset(set(self.allowed_resources)):
                return self.error_cls(error="invalid_target", error_description="Unknown resource")
            request["resource"] = res
        return request

    def process_request(self, req, **kwargs):
        self._resources = req.get("resource") or None
        try:
            return RefreshTokenHelper.process_request(self, req, **kwargs)
        finally:
            self._resources = None

    def _mint_token(self, token_class, grant, session_id, client_id, based_on=None,
                    scope=None, token_args=None, token_type=""):
        if token_class == "access_token" and getattr(self, "_resources", None):
            token_args = dict(token_args or {}, resources=list(self._resources))
        return RefreshTokenHelper._mint_token(
            self, token_class, grant, session_id, client_id, based_on=based_on,
            scope=scope, token_args=token_args, token_type=token_type)


def rfc_ath_userinfo_post_parse(request, client_id, context, auth_info, **kwargs):
    """idpyoidc's DPoP check for userinfo compares the proof's ``ath`` with the
    HEX sha256 of the access token; RFC 9449 says base64url. With
    --dpop-rfc-ath this wrapper lets an RFC ``ath`` through as well (by
    re-running idpyoidc's check against a token view whose hex matches)."""
    proof = (kwargs.get("http_info") or {}).get("headers", {}).get("dpop", "")
    token = auth_info.get("token")
    if proof and token:
        try:
            part = proof.split(".")[1]
            ath = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))).get("ath")
        except Exception:
            ath = None
        rfc = base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()
        if ath == rfc:
            # same checks as idpyoidc's (signature, htm, htu), minus its hex ath comparison
            auth_info = dict(auth_info, token=None)
    return dpop.userinfo_post_parse_request(request, client_id, context, auth_info, **kwargs)


class PlainSub:
    """sub_func: the subject identifier is the user id itself ("alice"), not
    idpyoidc's default salted hash, so tests can predict it."""

    def __init__(self, salt="", **kwargs):
        self.salt = salt

    def __call__(self, uid, sector_identifier="", *args, **kwargs):
        return uid


def build_conf(args, issuer: str) -> dict:
    scopes_to_claims = dict(SCOPE2CLAIMS)
    scopes_to_claims["profile"] = list(SCOPE2CLAIMS["profile"]) + ["groups"]

    token_exchange = {
        "subject_token_types_supported": [TT_ACCESS, TT_REFRESH],
        "requested_token_types_supported": [TT_ACCESS, TT_REFRESH],
        "default_requested_token_type": TT_ACCESS,
        "policy": {
            "": {
                "function": validate_token_exchange_policy,
                "kwargs": {"audience": list(args.audience), "resource": list(args.resource)},
            }
        },
    }
    grant_helpers = {
        "authorization_code": {"class": "idpyoidc.server.oidc.token_helper.access_token.AccessTokenHelper"},
        "refresh_token": {
            "class": ResourceAwareRefreshHelper if args.refresh_resource else RefreshTokenHelper
        },
        TOKEN_EXCHANGE: {
            "class": "idpyoidc.server.oidc.token_helper.token_exchange.TokenExchangeHelper",
            "kwargs": token_exchange,
        },
    }
    client_authn = ["private_key_jwt"] if args.client_jwks else ["client_secret_basic", "client_secret_post"]

    endpoints = {
        "provider_config": {
            "path": ".well-known/openid-configuration",
            "class": "idpyoidc.server.oidc.provider_config.ProviderConfiguration",
            "kwargs": {"client_authn_method": None},
        },
        "authorization": {
            "path": "authorization",
            "class": "idpyoidc.server.oidc.authorization.Authorization",
            "kwargs": {
                "client_authn_method": None,
                "claims_parameter_supported": True,
                "request_parameter_supported": False,
                "request_uri_parameter_supported": bool(args.par or args.request_uri),
                "response_types_supported": ["code"],
                "response_modes_supported": ["query", "fragment", "form_post"],
            },
        },
        "token": {
            "path": "token",
            "class": "idpyoidc.server.oidc.token.Token",
            "kwargs": {
                "client_authn_method": client_authn,
                "revoke_refresh_on_issue": True,
                "grant_types_helpers": grant_helpers,
            },
        },
        "userinfo": {
            "path": "userinfo",
            "class": "idpyoidc.server.oidc.userinfo.UserInfo",
            "kwargs": {
                "add_claims_by_scope": True,
                "claim_types_supported": ["normal"],
                # explicit, else idpyoidc's catch-all 'none' method wins before 'dpop'
                "client_authn_method": ["bearer_header", "bearer_body"] + (["dpop"] if args.dpop else []),
            },
        },
        "introspection": {
            "path": "introspection",
            "class": "idpyoidc.server.oauth2.introspection.Introspection",
            "kwargs": {"client_authn_method": client_authn},
        },
        "session": {
            "path": "end_session",
            "class": "idpyoidc.server.oidc.session.Session",
            "kwargs": {
                "logout_verify_url": f"{issuer}/verify_logout",
                "post_logout_uri_path": "post_logout",
                "signing_alg": "ES256",
                "frontchannel_logout_supported": False,
                "frontchannel_logout_session_required": False,
                "backchannel_logout_supported": False,
                "backchannel_logout_session_required": False,
            },
        },
    }
    if args.par:
        endpoints["pushed_authorization"] = {
            "path": "par",
            "class": "idpyoidc.server.oauth2.pushed_authorization.PushedAuthorization",
            "kwargs": {"client_authn_method": client_authn},
        }

    add_on = {
        "pkce": {
            "function": "idpyoidc.server.oauth2.add_on.pkce.add_support",
            "kwargs": {"essential": bool(args.require_pkce), "code_challenge_methods": {"S256": CC_METHOD["S256"]}},
        },
    }
    if args.dpop:
        add_on["dpop"] = {
            "function": "idpyoidc.server.oauth2.add_on.dpop.add_support",
            "kwargs": {
                "dpop_signing_alg_values_supported": ["ES256", "RS256", "PS256"],
                "dpop_endpoints": ["token", "userinfo"],
            },
        }

    at_ttl, rt_ttl = args.access_token_ttl, args.refresh_token_ttl
    return {
        "issuer": issuer,
        "password": "not-a-real-secret-idpyoidc-e2e",
        "httpc_params": {"verify": False, "timeout": 2},
        "keys": {
            "private_path": "private/jwks.json",
            "key_defs": [
                {"type": "RSA", "use": ["sig"]},
                {"type": "EC", "crv": "P-256", "use": ["sig"]},
            ] + ([
                {"type": "RSA", "use": ["enc"]},
                {"type": "EC", "crv": "P-256", "use": ["enc"]},
            ] if args.enc_keys else []),
            "public_path": "static/jwks.json",
            "read_only": False,
            "uri_path": "jwks.json",
        },
        "preference": {
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256", "ES256"],
            "scopes_supported": ["openid", "profile", "email", "offline_access"],
            "claims_supported": ["sub"] + [c for c in USERS["alice"] if c != "sub"],
            "token_endpoint_auth_methods_supported": client_authn,
            "token_endpoint_auth_signing_alg_values_supported": ["PS256", "ES256"],
            "grant_types_supported": ["authorization_code", "refresh_token", TOKEN_EXCHANGE],
            "request_parameter_supported": False,
            "frontchannel_logout_supported": False,
            "backchannel_logout_supported": False,
        },
        "endpoint": endpoints,
        "add_on": add_on,
        "authentication": {
            "auto": {"acr": ACR, "class": AutoLogin, "kwargs": {}},
        },
        "authz": {
            "class": "idpyoidc.server.authz.AuthzHandling",
            "kwargs": {
                "grant_config": {
                    "usage_rules": {
                        "authorization_code": {
                            "supports_minting": ["access_token", "refresh_token", "id_token"],
                            "max_usage": 1,
                            "expires_in": 120,
                        },
                        "access_token": {
                            "supports_minting": ["access_token", "refresh_token"],
                            "expires_in": at_ttl,
                        },
                        "refresh_token": {
                            "supports_minting": ["access_token", "refresh_token", "id_token"],
                            "expires_in": rt_ttl,
                        },
                    },
                    "expires_in": max(rt_ttl, 3600),
                }
            },
        },
        "claims_interface": {"class": "idpyoidc.server.session.claims.ClaimsInterface", "kwargs": {}},
        "cookie_handler": {
            "class": "idpyoidc.server.cookie_handler.CookieHandler",
            "kwargs": {
                "keys": {
                    "private_path": "private/cookie_jwks.json",
                    "key_defs": [
                        {"type": "OCT", "use": ["enc"], "kid": "enc"},
                        {"type": "OCT", "use": ["sig"], "kid": "sig"},
                    ],
                    "read_only": False,
                },
                "name": {
                    "session": "oidc_op",
                    "register": "oidc_op_rp",
                    "session_management": "sman",
                },
                "flags": {"samesite": "Lax", "httponly": True},
            },
        },
        "token_handler_args": {
            "jwks_def": {
                "private_path": "private/token_jwks.json",
                "read_only": False,
                "key_defs": [
                    {"type": "oct", "bytes": "24", "use": ["enc"], "kid": "code"},
                    {"type": "oct", "bytes": "24", "use": ["enc"], "kid": "refresh"},
                ],
            },
            "code": {"kwargs": {"lifetime": 120}},
            "token": {
                "class": "idpyoidc.server.token.jwt_token.JWTToken",
                "kwargs": {"lifetime": at_ttl, "add_claims_by_scope": False},
            },
            "refresh": {"kwargs": {"lifetime": rt_ttl}},
            "id_token": {
                "class": "idpyoidc.server.token.id_token.IDToken",
                "kwargs": {"add_claims_by_scope": True, "lifetime": at_ttl},
            },
        },
        "userinfo": {"class": "idpyoidc.server.user_info.UserInfo", "kwargs": {"db": USERS}},
        "scopes_to_claims": scopes_to_claims,
        "session_params": {
            "encrypter": {
                "kwargs": {
                    "keys": {
                        "key_defs": [
                            {"type": "OCT", "use": ["enc"], "kid": "password"},
                            {"type": "OCT", "use": ["enc"], "kid": "salt"},
                        ]
                    }
                }
            },
            "sub_func": {
                "public": {"class": PlainSub, "kwargs": {"salt": "e2e"}},
            },
        },
        "template_dir": "templates",
    }


def client_record(args) -> dict:
    grant_types = ["authorization_code", "refresh_token", TOKEN_EXCHANGE]
    rec = {
        "client_id": args.client_id,
        "client_secret": args.client_secret,
        "client_salt": "salted",
        "redirect_uris": [(u, {}) for u in args.redirect_uri],
        "token_endpoint_auth_method": "private_key_jwt" if args.client_jwks else "client_secret_basic",
        "response_types_supported": ["code"],
        "grant_types_supported": grant_types,
        "allowed_scopes": ["openid", "profile", "email", "offline_access"],
        "revoke_refresh_on_issue": True,
        "pkce_essential": bool(args.require_pkce),
    }
    if args.client_jwks:
        del rec["client_secret"]
    if args.id_token_alg:
        rec["id_token_signed_response_alg"] = args.id_token_alg
    if args.post_logout_redirect_uri:
        rec["post_logout_redirect_uri"] = [(u, {}) for u in args.post_logout_redirect_uri]
    return rec


class Provider:
    def __init__(self, args):
        self.args = args
        self.issuer = f"http://{args.host}:{args.port}"
        self.lock = threading.Lock()
        self.workdir = tempfile.mkdtemp(prefix="idpyoidc-op-")
        os.chdir(self.workdir)  # idpyoidc writes its key files relative to the cwd
        conf = OPConfiguration(conf=build_conf(args, self.issuer), base_path=self.workdir)
        self.server = Server(conf, cwd=self.workdir)
        self.context = self.server.context
        self.context.cdb[args.client_id] = client_record(args)
        # RFC 9207: idpyoidc always puts iss in the authorization response but
        # has no metadata key for it
        self.context.provider_info["authorization_response_iss_parameter_supported"] = True
        if args.dpop:
            # idpyoidc's DPoP add-on writes this into provider_info, but Server()
            # rebuilds provider_info afterwards, losing it (and the refresh and
            # token-exchange helpers test provider_info for DPoP): put it back.
            self.context.provider_info["dpop_signing_alg_values_supported"] = \
                self.context.add_on["dpop"]["algs_supported"]
            if args.dpop_rfc_ath:
                ui = self.server.get_endpoint("userinfo")
                ui.post_parse_request = [rfc_ath_userinfo_post_parse if f is dpop.userinfo_post_parse_request
                                         else f for f in ui.post_parse_request]
        if args.client_jwks:
            with open(args.client_jwks) as f:
                self.server.keyjar.import_jwks(json.load(f), args.client_id)
            # RFC 9126 §2: the issuer, token endpoint and PAR endpoint are all the AS's audience.
            for name in ("token", "pushed_authorization"):
                if name == "pushed_authorization" and not args.par:
                    continue
                endpoint = self.server.get_endpoint(name)
                endpoint.allowed_targets = ["", "token"] + (["pushed_authorization"] if args.par else [])
        if args.request_object_jwks:
            # --request-object-jwks (default off): the client's public keys, under its client id,
            # for idpyoidc to verify RFC 9101 request objects with (AuthorizationRequest.verify and
            # PushedAuthorizationRequest.verify look the signer's keys up by client id); the client
            # still authenticates with its secret. Discovery says so (the config above says false).
            with open(args.request_object_jwks) as f:
                self.server.keyjar.import_jwks(json.load(f), args.client_id)
            self.context.provider_info["request_parameter_supported"] = True
            self.context.provider_info["request_object_signing_alg_values_supported"] = ["RS256", "PS256", "ES256"]
        if args.request_uri:
            self.context.provider_info["request_uri_parameter_supported"] = True
        if args.enc_keys:
            # What cryptojwt (idpyoidc's JOSE library) opens, as discovery lists it (RFC 8414 / OIDC
            # Discovery); idpyoidc's own provider_info leaves both out.
            self.context.provider_info["request_object_encryption_alg_values_supported"] = [
                "RSA-OAEP", "RSA-OAEP-256", "ECDH-ES", "ECDH-ES+A128KW", "ECDH-ES+A256KW"]
            self.context.provider_info["request_object_encryption_enc_values_supported"] = ["A128CBC-HS256", "A256GCM"]
            authorization = self.server.get_endpoint("authorization")
            checked = authorization.allowed_request_algorithms

            def allowed(client_id, context, alg, alg_type, _checked=checked):
                # idpyoidc passes the JWS header's alg for "enc_alg"/"enc_enc" (see --enc-keys above)
                if alg_type in ("enc_alg", "enc_enc"):
                    return None
                return _checked(client_id, context, alg, alg_type)

            authorization.allowed_request_algorithms = allowed
        ResourceAwareRefreshHelper.allowed_resources = list(args.resource)
        self.reset_stats()

    def reset_stats(self):
        self.stats = {
            "token": {"authorization_code": 0, "refresh_token": 0, "token-exchange": 0, "other": 0},
            "token_ok": {"authorization_code": 0, "refresh_token": 0, "token-exchange": 0, "other": 0},
            "token_error": {"authorization_code": 0, "refresh_token": 0, "token-exchange": 0, "other": 0},
            "authorization": 0,
            "par": 0,
            "userinfo": 0,
            "introspection": 0,
            "end_session": 0,
            "discovery": 0,
            "jwks": 0,
            "dpop_nonce_challenges": 0,
            "client_assertions": [],
        }
        if self.args.record_requests:
            # --record-requests (default off): see record_request()
            self.stats["requests"] = []
        self.dpop_nonce = secrets.token_urlsafe(12)

    # Client credentials never go into the record.
    UNRECORDED = ("client_secret", "client_assertion")

    def record_request(self, where, params):
        """--record-requests: one entry in /_stats `requests` for an /authorization or /par
        request, the parameters as received; record_parsed() adds idpyoidc's reading of them."""
        if not self.args.record_requests:
            return None
        entry = {"at": where, "params": {k: v for k, v in params.items() if k not in self.UNRECORDED}}
        self.stats["requests"].append(entry)
        return entry

    @staticmethod
    def record_parsed(entry, req):
        """What idpyoidc made of a request after parse_request (signature checked, the request
        object's claims merged in, a PAR request_uri resolved), or its error."""
        if entry is None:
            return
        if isinstance(req, Exception):
            entry["error"] = f"{type(req).__name__}: {req}"
            return
        if isinstance(req, ResponseMessage) and "error" in req:
            entry["error"] = req.get("error_description") or req["error"]
            return
        def plain(v):
            return v.to_dict() if hasattr(v, "to_dict") else v
        entry["verified_request_object"] = verified_claim_name("request") in req
        entry["parsed"] = {k: plain(req[k]) for k in
                           ("client_id", "response_type", "scope", "redirect_uri", "state", "nonce", "login_hint",
                            "prompt", "max_age", "acr_values", "code_challenge", "code_challenge_method", "claims")
                           if k in req}

    # -- HTTP plumbing -------------------------------------------------------

    def http_info(self):
        headers = {k.lower(): v for k, v in request.headers.items()}
        return {
            "headers": headers,
            "method": request.method,
            "url": self.issuer + request.path,  # what DPoP 'htu' must equal
            "cookie": [{"name": k, "value": v} for k, v in request.cookies.items()],
        }

    @staticmethod
    def json_response(body, status=200, headers=None):
        if isinstance(body, ResponseMessage) or hasattr(body, "to_dict"):
            body = body.to_dict()
        resp = Response(json.dumps(body), status=status, mimetype="application/json")
        resp.headers["Cache-Control"] = "no-store"
        resp.headers["Pragma"] = "no-cache"
        for k, v in (headers or {}).items():
            resp.headers[k] = v
        return resp

    def error(self, error, description="", status=400):
        headers = {}
        if status == 401:
            headers["WWW-Authenticate"] = 'Basic realm="idpyoidc"' if error == "invalid_client" \
                else f'Bearer error="{error}"'
        body = {"error": error}
        if description:
            body["error_description"] = description
        return self.json_response(body, status, headers)

    @staticmethod
    def add_cookies(resp, cookies):
        for c in cookies or []:
            if c.get("expires", "").startswith("Thu, 01 Jan 1970"):
                resp.delete_cookie(c["name"], path="/")
            else:
                resp.set_cookie(c["name"], c["value"], path="/", httponly=True, samesite="Lax")

    @staticmethod
    def request_args():
        """Query (GET) or form (POST) parameters; a repeated one (audience,
        resource) stays a list so that idpyoidc sees every value."""
        src = request.args if request.method == "GET" else request.form
        return {k: v[0] if len(v) == 1 else v for k, v in src.lists()}

    def to_flask(self, endpoint, req, args):
        info = endpoint.do_response(request=req, **args)
        placement = info.get("response_placement", endpoint.response_placement)
        if placement == "url":
            resp = redirect(info["response"], code=302)
        else:
            resp = Response(info["response"], status=info.get("response_code", 200))
        for k, v in info.get("http_headers", []):
            if k.lower() == "content-type" and placement == "url":
                continue
            resp.headers[k] = v
        self.add_cookies(resp, info.get("cookie"))
        return resp

    # -- endpoints -----------------------------------------------------------

    def discovery(self):
        self.stats["discovery"] += 1
        endpoint = self.server.get_endpoint("provider_config")
        args = endpoint.process_request()
        info = endpoint.do_response(**args)
        return Response(info["response"], mimetype="application/json")

    def jwks(self):
        self.stats["jwks"] += 1
        keyjar = self.server.keyjar
        return self.json_response(keyjar.export_jwks(issuer_id=""))

    def authorization(self):
        self.stats["authorization"] += 1
        endpoint = self.server.get_endpoint("authorization")
        raw = self.request_args()
        recorded = self.record_request("authorization", raw)
        par = self.context.par_db.get(raw.get("request_uri", "")) if self.args.par else None
        if par is not None:
            # RFC 9126 lets the client send only client_id + request_uri, but
            # idpyoidc validates the query as an OIDC request before it resolves
            # request_uri: copy the pushed request's required parameters.
            for k in ("response_type", "scope", "redirect_uri", "prompt"):
                if k not in raw and k in par:
                    v = par[k]
                    raw[k] = " ".join(v) if isinstance(v, list) else v
        prompt = raw.get("prompt", "").split() if isinstance(raw.get("prompt", ""), str) else []
        if "login" in prompt:
            # every request is a fresh login here (auth_time = now); idpyoidc
            # would otherwise want to show its login page
            prompt.remove("login")
            raw["prompt"] = " ".join(prompt)
            if not prompt:
                del raw["prompt"]
        if self.args.implicit_consent:
            prompt = raw.get("prompt", "").split()
            if "offline_access" in raw.get("scope", "").split() and not {"consent", "none"} & set(prompt):
                raw["prompt"] = " ".join(prompt + ["consent"])
        http_info = self.http_info()
        try:
            req = endpoint.parse_request(raw, http_info=http_info)
        except Exception as err:  # e.g. an unresolvable PAR request_uri
            LOG.info("authorization parse failed: %r", err)
            self.record_parsed(recorded, err)
            return self.error("invalid_request", str(err))
        self.record_parsed(recorded, req)
        if isinstance(req, ResponseMessage) and "error" in req:
            return self.authz_error(raw, req)
        try:
            args = endpoint.process_request(req, http_info=http_info, authn=req.get("login_hint", ""))
        except Exception as err:
            LOG.exception("authorization failed")
            return self.authz_error(req, {"error": "server_error", "error_description": str(err)})
        if "http_response" in args:
            return Response(str(args["http_response"]), status=400)
        if "error" in args:  # e.g. prompt=none without session; idpyoidc gives return_uri
            return self.authz_error(req, args)
        return self.to_flask(endpoint, req, args)

    def authz_error(self, req, err):
        """Redirect an error to redirect_uri if it is registered, else a 400 page."""
        err = err.to_dict() if hasattr(err, "to_dict") else dict(err)
        cid = req.get("client_id")
        ruri = req.get("redirect_uri")
        registered = [u for u, _ in self.context.cdb.get(cid, {}).get("redirect_uris", [])]
        if not ruri or ruri not in registered:
            return self.error(err.get("error", "invalid_request"), err.get("error_description", ""))
        q = {"error": err.get("error", "invalid_request")}
        if err.get("error_description"):
            q["error_description"] = err["error_description"]
        if req.get("state"):
            q["state"] = req["state"]
        q["iss"] = self.issuer
        sep = "&" if "?" in ruri else "?"
        return redirect(ruri + sep + urlencode(q), code=302)

    def note_assertion(self, form, where):
        """What the client signed (read only; idpyoidc verifies it)."""
        jwt = form.get("client_assertion")
        if not isinstance(jwt, str) or jwt.count(".") != 2:
            return
        def part(i):
            seg = jwt.split(".")[i]
            return json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))
        try:
            header, claims = part(0), part(1)
        except Exception:  # noqa: BLE001
            return
        self.stats["client_assertions"].append({"at": where, "alg": header.get("alg"), "kid": header.get("kid"),
                                                "aud": claims.get("aud"), "jti": claims.get("jti")})

    def par(self):
        self.stats["par"] += 1
        body = request.get_data(as_text=True)  # before .form, which would consume it
        self.note_assertion({k: v[0] for k, v in parse_qs(body).items()}, "par")
        recorded = self.record_request("par", {k: v[0] if len(v) == 1 else v for k, v in parse_qs(body).items()})
        endpoint = self.server.get_endpoint("pushed_authorization")
        try:
            req = endpoint.parse_request(body, http_info=self.http_info())
        except (ClientAuthenticationError, UnAuthorizedClient, UnknownClient, InvalidClient) as err:
            self.record_parsed(recorded, err)
            return self.error("invalid_client", str(err), 401)
        except Exception as err:
            self.record_parsed(recorded, err)
            return self.error("invalid_request", str(err))
        self.record_parsed(recorded, req)
        if isinstance(req, ResponseMessage) and "error" in req:
            return self.json_response(req, 400)
        try:
            args = endpoint.process_request(req)
        except Exception as err:
            return self.error("invalid_request", f"{type(err).__name__}: {err}")
        return self.json_response(args["http_response"], 201)

    def token(self):
        form = self.request_args()
        gt = form.get("grant_type", "")
        key = {"authorization_code": "authorization_code", "refresh_token": "refresh_token",
               TOKEN_EXCHANGE: "token-exchange"}.get(gt, "other")
        self.stats["token"][key] += 1
        self.note_assertion(form, "token")
        if self.args.dpop_nonce:
            # RFC 9449 §8: the server's nonce in every proof; a proof without the current one is
            # answered use_dpop_nonce with the nonce to use (idpyoidc has no nonces of its own).
            proof = request.headers.get("DPoP", "")
            try:
                part = proof.split(".")[1]
                claims = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
            except Exception:  # noqa: BLE001
                claims = {}
            if claims.get("nonce") != self.dpop_nonce:
                self.stats["dpop_nonce_challenges"] += 1
                self.stats["token_error"][key] += 1
                resp = self.error("use_dpop_nonce", "Authorization server requires nonce in DPoP proof")
                resp.headers["DPoP-Nonce"] = self.dpop_nonce
                return resp
        resp = self._token(form)
        self.stats["token_ok" if resp.status_code == 200 else "token_error"][key] += 1
        return resp

    def _token(self, form):
        endpoint = self.server.get_endpoint("token")
        http_info = self.http_info()
        try:
            req = endpoint.parse_request(form, http_info=http_info)
        except (ClientAuthenticationError, UnAuthorizedClient, UnknownClient, InvalidClient) as err:
            return self.error("invalid_client", str(err) or "client authentication failed", 401)
        except Exception as err:  # e.g. "Missing DPoP header", bad DPoP proof
            LOG.info("token parse failed: %r", err)
            return self.error("invalid_request" if "dpop" not in str(err).lower()
                              else "invalid_dpop_proof", str(err))
        if isinstance(req, ResponseMessage) and "error" in req:
            return self.json_response(req, 400)
        try:
            kwargs = {"issue_refresh": True} if self.args.always_refresh else {}
            args = endpoint.process_request(req, http_info=http_info, **kwargs)
        except Exception as err:
            LOG.exception("token failed")
            return self.error("invalid_grant", str(err))
        if isinstance(args, ResponseMessage) and "error" in args:
            return self.json_response(args, 400)
        if "error" in args:
            return self.json_response(args, 400)
        info = endpoint.do_response(request=req, **args)
        resp = Response(info["response"], status=200, mimetype="application/json")
        resp.headers["Cache-Control"] = "no-store"
        resp.headers["Pragma"] = "no-cache"
        return resp

    def userinfo(self):
        self.stats["userinfo"] += 1
        endpoint = self.server.get_endpoint("userinfo")
        http_info = self.http_info()
        raw = self.request_args()
        try:
            req = endpoint.parse_request(raw, http_info=http_info)
        except Exception as err:
            return self.error("invalid_token", str(err), 401)
        if isinstance(req, ResponseMessage) and "error" in req:
            return self.error(req["error"], req.get("error_description", ""), 401)
        try:
            args = endpoint.process_request(req, http_info=http_info)
        except Exception as err:
            return self.error("invalid_token", str(err), 401)
        if isinstance(args, ResponseMessage) and "error" in args:
            return self.error(args["error"], args.get("error_description", ""), 401)
        if "error" in args.get("response_args", {}):
            ra = args["response_args"]
            return self.error(ra["error"], ra.get("error_description", ""), 401)
        info = endpoint.do_response(request=req, **args)
        return Response(info["response"], status=200, mimetype="application/json")

    def introspection(self):
        self.stats["introspection"] += 1
        endpoint = self.server.get_endpoint("introspection")
        http_info = self.http_info()
        try:
            req = endpoint.parse_request(self.request_args(), http_info=http_info)
        except Exception as err:
            return self.error("invalid_client", str(err), 401)
        if isinstance(req, ResponseMessage) and "error" in req:
            return self.json_response(req, 400)
        args = endpoint.process_request(req)
        info = endpoint.do_response(request=req, **args)
        return Response(info["response"], status=200, mimetype="application/json")

    def end_session(self):
        """RP-initiated logout. idpyoidc validates id_token_hint, the
        post_logout_redirect_uri and the OP session cookie, then sends the user
        to its logout-verification page; that page (verify_logout) confirms at
        once. Without the OP cookie (a client that did not keep it) the sid is
        taken from the verified id_token_hint instead."""
        self.stats["end_session"] += 1
        endpoint = self.server.get_endpoint("session")
        http_info = self.http_info()
        raw = self.request_args()
        # Not endpoint.parse_request(): idpyoidc's Session.parse_request runs
        # client authentication and then reads auth_info["token"], a KeyError
        # for a browser request (no client credentials). Same checks otherwise.
        try:
            req = endpoint.request_cls(**raw)
            req.verify(keyjar=self.server.keyjar, sigalg="")
            ith = req.get("__verified_id_token_hint")
            if ith is not None and ith.jws_header["alg"] not in \
                    self.context.provider_info["id_token_signing_alg_values_supported"]:
                raise ValueError("Unsupported id_token_hint signing algorithm")
        except Exception as err:
            return self.error("invalid_request", f"{type(err).__name__}: {err}")
        if not http_info["cookie"] and req.get("__verified_id_token_hint"):
            sid = req["__verified_id_token_hint"].get("sid")
            if sid:
                cookie = self.context.new_cookie(name=self.context.cookie_handler.name["session"], sid=sid)
                http_info["cookie"] = [cookie]
        try:
            args = endpoint.process_request(req, http_info=http_info)
        except Exception as err:
            return self.error("invalid_request", f"{type(err).__name__}: {err}")
        return redirect(args["redirect_location"], code=302)

    def verify_logout(self):
        endpoint = self.server.get_endpoint("session")
        try:
            payload = endpoint.unpack_signed_jwt(request.args["sjwt"])
            endpoint.do_verified_logout(sid=payload["sid"])
        except Exception as err:
            return self.error("invalid_request", f"logout failed: {err}")
        resp = redirect(payload["redirect_uri"], code=302)
        self.add_cookies(resp, endpoint.kill_cookies())
        return resp

    def post_logout(self):
        return Response("logged out\n", mimetype="text/plain")

    def app(self) -> Flask:
        app = Flask("idpyoidc_provider")

        def locked(fn):
            def wrapper():
                with self.lock:
                    return fn()
            wrapper.__name__ = fn.__name__
            return wrapper

        routes = [
            ("/.well-known/openid-configuration", self.discovery, ["GET"]),
            ("/jwks.json", self.jwks, ["GET"]),
            ("/authorization", self.authorization, ["GET", "POST"]),
            ("/token", self.token, ["POST"]),
            ("/userinfo", self.userinfo, ["GET", "POST"]),
            ("/introspection", self.introspection, ["POST"]),
            ("/end_session", self.end_session, ["GET", "POST"]),
            ("/verify_logout", self.verify_logout, ["GET"]),
            ("/post_logout", self.post_logout, ["GET"]),
        ]
        if self.args.par:
            routes.append(("/par", self.par, ["POST"]))
        for path, fn, methods in routes:
            app.add_url_rule(path, fn.__name__, locked(fn), methods=methods)

        @app.get("/_stats")
        def stats():
            with self.lock:
                return self.json_response(self.stats)

        @app.post("/_stats/reset")
        def stats_reset():
            with self.lock:
                self.reset_stats()
                return self.json_response(self.stats)

        return app


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--client-id", required=True)
    p.add_argument("--client-secret", required=True)
    p.add_argument("--redirect-uri", action="append", required=True)
    p.add_argument("--post-logout-redirect-uri", action="append", default=[])
    p.add_argument("--audience", action="append", default=None,
                   help="audience allowed in token exchange (repeatable; default orders-api)")
    p.add_argument("--resource", action="append", default=None,
                   help="resource allowed in token exchange and, with --refresh-resource, "
                        "on refresh (repeatable; default https://orders.example)")
    p.add_argument("--par", action="store_true", help="enable RFC 9126 PAR at /par")
    p.add_argument("--dpop", action="store_true",
                   help="enable idpyoidc's DPoP add-on: proof required at /token and /userinfo")
    p.add_argument("--dpop-nonce", action="store_true",
                   help="with --dpop: require the server's DPoP nonce in token-request proofs (use_dpop_nonce)")
    p.add_argument("--dpop-rfc-ath", action="store_true",
                   help="with --dpop: also accept an RFC 9449 (base64url) 'ath' at /userinfo; "
                        "idpyoidc 5.0.0 only accepts a hex sha256")
    p.add_argument("--refresh-resource", action="store_true",
                   help="honour RFC 8707 resource on the refresh_token grant (script extension)")
    p.add_argument("--always-refresh", action="store_true",
                   help="issue refresh tokens even without offline_access")
    p.add_argument("--implicit-consent", action="store_true",
                   help="add prompt=consent to authorization requests asking for offline_access "
                        "(idpyoidc refuses offline_access without it)")
    p.add_argument("--require-pkce", action="store_true", help="refuse authorization without code_challenge")
    p.add_argument("--access-token-ttl", type=int, default=300)
    p.add_argument("--refresh-token-ttl", type=int, default=86400)
    p.add_argument("--client-jwks", help="private_key_jwt: the client's public JWKS (a file)")
    p.add_argument("--id-token-alg", help="sign the client's ID tokens with this algorithm (e.g. ES256)")
    # RFC 9101 request objects signed with a key while the client authenticates with its secret
    # (default off: the client has no keys and discovery says request_parameter_supported false).
    p.add_argument("--request-object-jwks",
                   help="request objects: the client's public JWKS (a file) `request` parameters are verified with")
    # Test visibility (default off: /_stats has no `requests` list).
    p.add_argument("--request-uri", action="store_true",
                   help="fetch request objects by reference (request_uri_parameter_supported true)")
    p.add_argument("--enc-keys", action="store_true",
                   help="RSA and P-256 encryption keys in the JWKS; request objects encrypted to them are opened")
    p.add_argument("--record-requests", action="store_true",
                   help="list each /authorization and /par request (and idpyoidc's parse of it) in /_stats")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args(argv)
    if args.audience is None:
        args.audience = ["orders-api"]
    if args.resource is None:
        args.resource = ["https://orders.example"]
    return args


def main(argv=None):
    args = parse_args(argv)
    logging.getLogger("werkzeug").setLevel(logging.INFO if args.verbose else logging.WARNING)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    provider = Provider(args)
    httpd = make_server(args.host, args.port, provider.app(), threaded=True)

    def stop(signum, frame):
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"READY {provider.issuer}", flush=True)
    try:
        httpd.serve_forever()
    finally:
        httpd.server_close()
        shutil.rmtree(provider.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
