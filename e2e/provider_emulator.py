"""An emulator of seven real OpenID providers for the end-to-end suite (issue 13).

``provider_server.py`` is a by-the-book provider. Real providers are not: each profile
here reproduces, on 127.0.0.1, the shape of one provider's discovery document, its
issuer forms, its token-request method, its refresh behaviour, its logout endpoint
and its characteristic claims. Every quirk carries a comment naming the public
document it comes from, so that a change at the provider can be checked against it.

Profiles (``--profile``): auth0, google, facebook, keycloak, entra, okta, apple.

``apple`` (Sign in with Apple) differs most: its authorization endpoint answers an
auto-posting HTML form (``response_mode=form_post``) instead of a redirect, and its client
secret is an ES256 JWT the client signs, checked here against the public key given with
``--apple-team-id``, ``--apple-key-id`` and ``--apple-public-key``.

The authorization endpoint signs the user in at once (no form): the tests drive a
browser-level flow with ``requests`` following redirects. Test-only endpoints under
``/_test/`` set the user's claims and lifetimes and expose what the gateway sent.

Run: ``python provider_emulator.py --profile google --port 0 --port-file F
--client-id ID --client-secret S`` (apple: ``--client-id SERVICES_ID --apple-team-id T
--apple-key-id K --apple-public-key KEY.pem``, no ``--client-secret``).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import json
import logging
import secrets
import threading
import time
import uuid
from urllib.parse import urlencode

import flask
import werkzeug.serving
from joserfc import jwt
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet, RSAKey

log = logging.getLogger("emulator")

# Entra ID tenant of the emulated user (a GUID, as Entra's `tid` always is).
ENTRA_TENANT = "9188040d-6c67-4c5b-b112-36a304b66dad"
KEYCLOAK_REALM = "demo"


class Profile:
    """Paths and behaviour of one provider. ``base`` is http://127.0.0.1:PORT."""

    name = "generic"
    # The issuer is base + issuer_path; discovery at discovery_prefix + /.well-known/….
    issuer_path = ""
    discovery_prefix = ""

    def __init__(self, base: str):
        self.base = base

    # -- shape --------------------------------------------------------------
    @property
    def issuer(self) -> str:
        return self.base + self.issuer_path

    @property
    def discovery_path(self) -> str:
        return self.discovery_prefix + "/.well-known/openid-configuration"

    def paths(self) -> dict:
        """Discovery field -> path on this server (None: not published)."""
        raise NotImplementedError

    def discovery(self) -> dict:
        doc = {"issuer": self.issuer,
               "response_types_supported": ["code"],
               "subject_types_supported": ["public"],
               "id_token_signing_alg_values_supported": ["RS256"],
               "code_challenge_methods_supported": ["S256"]}
        for field, path in self.paths().items():
            if path is not None:
                doc[field] = self.base + path
        return doc

    # -- behaviour ------------------------------------------------------------
    token_methods = ("POST",)
    issues_refresh_token = True
    rotates_refresh_tokens = True
    refresh_returns_id_token = True
    refresh_id_token_keeps_nonce = False
    sends_iss_in_authorization_response = False
    refused_scopes: tuple[str, ...] = ()
    nonce_required = False

    def wants_refresh_token(self, scope: str, params: dict) -> bool:
        return "offline_access" in scope.split()

    def token_issuer(self, claims: dict) -> str:
        return self.issuer

    def extra_id_claims(self, login: dict) -> dict:
        return {}

    def access_token(self, login: dict, client_id: str) -> str:
        return "at-" + secrets.token_urlsafe(24)

    # Hooks of the test-only API (the apple profile uses them; the others keep the defaults).
    def reset_state(self, state: "State"):
        pass

    def test_config(self, key: str, value) -> bool:
        """True when the profile handled this /_test/config key itself."""
        return False


class Auth0(Profile):
    name = "auth0"
    # Auth0 issuers end with "/" ("Locate JSON Web Key Sets": iss is https://{domain}/).
    issuer_path = "/"

    def paths(self) -> dict:
        # Auth0 "OpenID Connect Discovery": /authorize, /oauth/token, /userinfo, /oauth/revoke,
        # /.well-known/jwks.json. The end_session_endpoint (/oidc/logout) appears only when the
        # tenant enables "RP-Initiated Logout End Session Endpoint Discovery" (Auth0, "Log Users
        # Out of Auth0 with OIDC Endpoint"); without it, logout is /v2/logout ("Log Users Out of
        # Auth0": client_id and returnTo, returnTo in "Allowed Logout URLs").
        return {"authorization_endpoint": "/authorize", "token_endpoint": "/oauth/token",
                "userinfo_endpoint": "/userinfo", "revocation_endpoint": "/oauth/revoke",
                "jwks_uri": "/.well-known/jwks.json", "end_session_endpoint": None}

    def extra_id_claims(self, login: dict) -> dict:
        # Auth0 Organizations ("Work with Tokens and Organizations"): a login with
        # `organization` puts org_id in the ID token; `invitation` accepts an invitation to it.
        # `org_override` (tests): the organization the tenant really signed the user in to, as a
        # tenant whose application is not limited to the requested organization would.
        org = STATE.config.get("org_override") or login["params"].get("organization")
        return {"org_id": org} if org else {}

    def access_token(self, login: dict, client_id: str) -> str:
        # Auth0 "Get Access Tokens": with `audience` the access token is a JWT for that API
        # (aud = [audience, {issuer}userinfo]); without it an opaque token good for /userinfo only.
        audience = login["params"].get("audience")
        if not audience:
            return "opaque-" + secrets.token_urlsafe(24)
        now = int(time.time())
        return sign({"iss": self.issuer, "sub": login["user"]["sub"], "aud": [audience, self.issuer + "userinfo"],
                     "azp": client_id, "iat": now, "exp": now + STATE.config["access_ttl"],
                     "scope": login["scope"]})


class Google(Profile):
    name = "google"
    # "Using OAuth 2.0 for Web Server Applications", "Refreshing an access token": a refresh
    # answer carries no new refresh token; the old one keeps working.
    rotates_refresh_tokens = False
    # Google does not know the OIDC `offline_access` scope (answers invalid_scope); offline
    # access is `access_type=offline` (same document, "Offline access").
    refused_scopes = ("offline_access",)

    def paths(self) -> dict:
        # https://accounts.google.com/.well-known/openid-configuration: no end_session_endpoint;
        # revocation at https://oauth2.googleapis.com/revoke.
        return {"authorization_endpoint": "/o/oauth2/v2/auth", "token_endpoint": "/token",
                "userinfo_endpoint": "/v1/userinfo", "revocation_endpoint": "/revoke",
                "jwks_uri": "/oauth2/v3/certs", "end_session_endpoint": None}

    def wants_refresh_token(self, scope: str, params: dict) -> bool:
        return params.get("access_type") == "offline"

    def token_issuer(self, claims: dict) -> str:
        # "OpenID Connect" (Google Identity), "Validating an ID token": "The value of iss in the
        # ID token is equal to https://accounts.google.com or accounts.google.com."
        if STATE.config["google_short_iss"]:
            return self.issuer.split("://", 1)[1]
        return self.issuer

    def extra_id_claims(self, login: dict) -> dict:
        # `hd`: the user's Google Workspace domain ("OpenID Connect", "An ID token's payload");
        # absent for consumer accounts, so a client must check it to restrict the domain.
        hd = login["user"].get("hd")
        return {"hd": hd} if hd else {}


class Facebook(Profile):
    name = "facebook"
    # "Manually Build a Login Flow", "Exchanging Code for an Access Token":
    # GET https://graph.facebook.com/v{version}/oauth/access_token?client_id&redirect_uri&
    # client_secret&code. No refresh token exists for Facebook Login ("Access Tokens",
    # "Expiration and Extending Tokens": tokens are extended, not refreshed).
    token_methods = ("GET",)
    issues_refresh_token = False
    # "OIDC Code Flow with PKCE for Manually Built Facebook Login Flows": the authorization
    # request carries `nonce`, returned in the ID token for validation.
    nonce_required = True
    # "Permissions Reference": scopes are permissions (public_profile, email); `profile` is not one.
    refused_scopes = ("profile", "offline_access")

    def paths(self) -> dict:
        # Limited Login "OIDC Token", Discovery Endpoint
        # (https://limited.facebook.com/.well-known/openid-configuration/): issuer,
        # authorization_endpoint, jwks_uri; no token_endpoint and no userinfo_endpoint.
        return {"authorization_endpoint": "/dialog/oauth/", "token_endpoint": None, "userinfo_endpoint": None,
                "revocation_endpoint": None, "jwks_uri": "/.well-known/oauth/openid/jwks/",
                "end_session_endpoint": None}

    def discovery(self) -> dict:
        doc = super().discovery()
        # The published document lists only the implicit response types and no PKCE methods.
        doc["response_types_supported"] = ["id_token", "token id_token"]
        doc.pop("code_challenge_methods_supported", None)
        return doc

    def wants_refresh_token(self, scope: str, params: dict) -> bool:
        return False


class Keycloak(Profile):
    name = "keycloak"
    # Keycloak sends RFC 9207 `iss` in the authorization response and advertises it
    # (Keycloak 15 release notes; "Securing applications", OIDC endpoints).
    sends_iss_in_authorization_response = True
    # A refreshed ID token repeats the login's nonce (Keycloak keeps it in the user session).
    refresh_id_token_keeps_nonce = True

    # "Server Administration Guide", OIDC: issuer https://host/realms/{realm}.
    issuer_path = discovery_prefix = f"/realms/{KEYCLOAK_REALM}"

    def wants_refresh_token(self, scope: str, params: dict) -> bool:
        # Keycloak issues a refresh token with every code exchange, tied to the SSO session;
        # `offline_access` asks for an offline token instead ("Offline access").
        return True

    def paths(self) -> dict:
        p = f"/realms/{KEYCLOAK_REALM}/protocol/openid-connect"
        return {"authorization_endpoint": p + "/auth", "token_endpoint": p + "/token",
                "userinfo_endpoint": p + "/userinfo", "revocation_endpoint": p + "/revoke",
                "jwks_uri": p + "/certs", "end_session_endpoint": p + "/logout"}

    def discovery(self) -> dict:
        doc = super().discovery()
        doc["authorization_response_iss_parameter_supported"] = True
        return doc


class Entra(Profile):
    name = "entra"

    # Microsoft identity platform, "OpenID Connect on the Microsoft identity platform",
    # "Find your app's OpenID configuration document URI": the common endpoint's document has
    # issuer https://login.microsoftonline.com/{tenantid}/v2.0, a template; "Validate the
    # issuer": substitute the token's `tid`.
    issuer_path = "/{tenantid}/v2.0"
    discovery_prefix = "/common/v2.0"

    def paths(self) -> dict:
        # No revocation endpoint; UserInfo lives at Microsoft Graph (graph.microsoft.com/oidc/userinfo).
        return {"authorization_endpoint": "/common/oauth2/v2.0/authorize",
                "token_endpoint": "/common/oauth2/v2.0/token", "userinfo_endpoint": "/oidc/userinfo",
                "revocation_endpoint": None, "jwks_uri": "/common/discovery/v2.0/keys",
                "end_session_endpoint": "/common/oauth2/v2.0/logout"}

    def token_issuer(self, claims: dict) -> str:
        return self.issuer.replace("{tenantid}", claims["tid"])

    def extra_id_claims(self, login: dict) -> dict:
        # "ID token claims reference": `tid` (tenant), `oid` (object id in that tenant).
        return {"tid": login["user"].get("tid", ENTRA_TENANT), "oid": str(uuid.uuid5(uuid.NAMESPACE_URL, login["user"]["sub"]))}


class Okta(Profile):
    name = "okta"

    # Okta "Authorization servers": a custom authorization server's issuer is
    # https://{yourOktaDomain}/oauth2/{authorizationServerId} ("default").
    issuer_path = discovery_prefix = "/oauth2/default"

    def paths(self) -> dict:
        p = "/oauth2/default/v1"
        return {"authorization_endpoint": p + "/authorize", "token_endpoint": p + "/token",
                "userinfo_endpoint": p + "/userinfo", "revocation_endpoint": p + "/revoke",
                "jwks_uri": p + "/keys", "end_session_endpoint": p + "/logout"}

    def extra_id_claims(self, login: dict) -> dict:
        # Okta "Customize tokens returned from Okta with a Groups claim".
        return {"groups": login["user"].get("groups", ["Everyone"])}


# Sign in with Apple: the audience of its client secrets, and the longest lifetime one may have.
APPLE_AUDIENCE = "https://appleid.apple.com"
APPLE_SECRET_MAX_LIFETIME = 15_777_000  # six months, in seconds


class Apple(Profile):
    """Sign in with Apple ("Sign in with Apple REST API"; "Authenticating users with Sign in with
    Apple"; "Incorporating Sign in with Apple into other platforms"). Its handlers are the
    ``apple_*`` functions below (APPLE_HANDLERS)."""

    name = "apple"
    # https://appleid.apple.com/.well-known/openid-configuration: issuer https://appleid.apple.com.
    # "Generate and validate tokens": a refresh answers a new access token and ID token, and no
    # new refresh token (the first one keeps working).
    rotates_refresh_tokens = False

    def paths(self) -> dict:
        # The same document: /auth/authorize, /auth/token, /auth/revoke, /auth/keys; no userinfo
        # endpoint (the claims are in the ID token only) and no end_session_endpoint.
        return {"authorization_endpoint": "/auth/authorize", "token_endpoint": "/auth/token",
                "userinfo_endpoint": None, "revocation_endpoint": "/auth/revoke",
                "jwks_uri": "/auth/keys", "end_session_endpoint": None}

    def discovery(self) -> dict:
        doc = super().discovery()
        # The published document, field for field: form_post among the response modes, the `name`
        # scope, pairwise subjects (a user's `sub` differs per developer team), client_secret_post
        # only, and no code_challenge_methods_supported.
        doc.pop("code_challenge_methods_supported", None)
        doc.update({"response_modes_supported": ["query", "fragment", "form_post"],
                    "scopes_supported": ["openid", "email", "name"],
                    "subject_types_supported": ["pairwise"],
                    "id_token_signing_alg_values_supported": ["RS256"],
                    "token_endpoint_auth_methods_supported": ["client_secret_post"],
                    "claims_supported": ["aud", "email", "email_verified", "exp", "iat", "is_private_email",
                                         "iss", "nonce", "nonce_supported", "real_user_status", "sub",
                                         "transfer_sub"]})
        return doc

    def reset_state(self, state: "State"):
        # "Authenticating users with Sign in with Apple", "Retrieve the user's information from
        # Apple ID servers": `sub` is an opaque team-scoped identifier (e.g. 001234.5f8e….0123);
        # the email may be a private relay address (…@privaterelay.appleid.com).
        state.config["user"] = {"sub": "001234.5f8e1b9c2a7d4e6f80a1b2c3d4e5f607.0123",
                                "email": "ada@privaterelay.appleid.com", "is_private_email": True,
                                "first_name": "Ada", "last_name": "Lovelace"}
        # `user_override`: a raw string sent as the `user` field of a first authorization instead
        # of the JSON built from the user (tests of malformed values). `cancel`: the user cancels.
        state.config.update({"user_override": None, "cancel": False})
        state.stats["client_secrets"] = []
        state.apple_authorized = set()

    def test_config(self, key: str, value) -> bool:
        # `first_authorization: true` forgets that the user authorized this client (as revoking the
        # app in the Apple ID settings does), so the next login posts `user` again; false records it.
        if key != "first_authorization":
            return False
        who = (STATE.client_id, STATE.config["user"]["sub"])
        if value:
            STATE.apple_authorized.discard(who)
        else:
            STATE.apple_authorized.add(who)
        return True

    def access_token(self, login: dict, client_id: str) -> str:
        # Apple's access tokens are opaque ("TokenResponse": access_token, a string).
        return "a" + secrets.token_hex(16) + ".0.m" + secrets.token_hex(4) + "." + secrets.token_urlsafe(16)


PROFILES = {cls.name: cls for cls in (Auth0, Google, Facebook, Keycloak, Entra, Okta, Apple)}


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.key = RSAKey.generate_key(2048, parameters={"kid": "emulator-1", "alg": "RS256", "use": "sig"})
        self.profile: Profile | None = None
        self.client_id = ""
        self.client_secret = ""
        self.redirect_uris: set[str] = set()
        self.codes: dict[str, dict] = {}
        self.refresh_tokens: dict[str, dict] = {}
        self.access_tokens: dict[str, dict] = {}
        # apple: the developer team, the client-secret signing key's id and public key, and the
        # (client, user) pairs that have authorized already (reset_state).
        self.apple_team_id = ""
        self.apple_key_id = ""
        self.apple_public_key: ECKey | None = None
        self.apple_authorized: set[tuple[str, str]] = set()
        self.reset()

    def reset(self):
        self.config = {"access_ttl": 3600, "google_short_iss": True, "acr_mode": "honour",
                       "acr_default": "urn:gatehouse:basic", "session_age": 0, "max_age_mode": "honour",
                       "user": {"sub": "user-1", "email": "ada@example.com", "email_verified": True,
                                "name": "Ada Lovelace"}}
        self.stats = {"authorize": [], "token": [], "logout": [], "revocations": [], "userinfo": 0}
        if self.profile is not None:
            self.profile.reset_state(self)


STATE = State()


def sign(claims: dict) -> str:
    return jwt.encode({"alg": "RS256", "kid": "emulator-1", "typ": "JWT"}, claims, STATE.key)


def b64url_sha256(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()


app = flask.Flask(__name__)


def oauth_error(error: str, description: str, status=400):
    return flask.jsonify({"error": error, "error_description": description}), status


def facebook_error(message: str, code=100):
    # Graph API errors are an object under "error" ("Graph API", "Handling Errors").
    return flask.jsonify({"error": {"message": message, "type": "OAuthException", "code": code,
                                    "fbtrace_id": secrets.token_hex(8)}}), 400


@app.before_request
def route_profile_paths():
    profile = STATE.profile
    path = flask.request.path
    if path.startswith("/_test/"):
        return None
    if path == profile.discovery_path or path == profile.discovery_path + "/":
        return flask.jsonify(profile.discovery())
    own_handlers = APPLE_HANDLERS if profile.name == "apple" else {}
    for field, own in profile.paths().items():
        if own is not None and path == own:
            return own_handlers.get(field, HANDLERS[field])()
    # Facebook's Graph API token endpoint is not in its discovery document.
    if profile.name == "facebook" and path.endswith("/oauth/access_token"):
        return token()
    if profile.name == "auth0" and path == "/v2/logout":
        return auth0_logout()
    return None


def authorize():
    profile = STATE.profile
    q = flask.request.args.to_dict()
    with STATE.lock:
        STATE.stats["authorize"].append(q)
    if q.get("client_id") != STATE.client_id:
        return "unknown client_id", 400
    redirect_uri = q.get("redirect_uri", "")
    if redirect_uri not in STATE.redirect_uris:
        return "redirect_uri not registered", 400

    def back(params):
        if profile.sends_iss_in_authorization_response:
            params["iss"] = profile.issuer
        sep = "&" if "?" in redirect_uri else "?"
        return flask.redirect(redirect_uri + sep + urlencode(params), 302)

    state = q.get("state")
    if q.get("response_type") != "code":
        return back({"error": "unsupported_response_type", "state": state})
    scopes = q.get("scope", "").split()
    refused = [s for s in scopes if s in profile.refused_scopes]
    if refused:
        return back({"error": "invalid_scope", "error_description": f"invalid scope {refused[0]}", "state": state})
    if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
        return back({"error": "invalid_request", "error_description": "PKCE S256 required", "state": state})
    if profile.nonce_required and not q.get("nonce"):
        return back({"error": "invalid_request", "error_description": "nonce required", "state": state})
    if profile.name == "auth0" and q.get("invitation") and not q.get("organization"):
        # Auth0 "Invite Organization Members": the invitation link carries both.
        return back({"error": "invalid_request", "error_description": "invitation requires organization",
                     "state": state})
    code = secrets.token_urlsafe(24)
    # Step-up (OIDC Core §3.1.2.1): `acr_values` answered with the first value asked for, or ignored
    # (`acr_mode: ignore`, as providers without that level do); `max_age` re-authenticates an SSO
    # session older than it (`session_age`), unless `max_age_mode: ignore`.
    config = STATE.config
    asked_acr = (q.get("acr_values") or "").split()
    acr = asked_acr[0] if asked_acr and config.get("acr_mode", "honour") == "honour" else config.get("acr_default")
    now = int(time.time())
    auth_time = now - int(config.get("session_age", 0))
    if q.get("max_age") is not None and config.get("max_age_mode", "honour") == "honour" \
            and now - auth_time > int(q["max_age"]):
        auth_time = now
    with STATE.lock:
        STATE.codes[code] = {"redirect_uri": redirect_uri, "challenge": q["code_challenge"],
                             "nonce": q.get("nonce"), "scope": q.get("scope", ""), "params": q,
                             "user": dict(STATE.config["user"]), "auth_time": auth_time, "acr": acr}
    return back({"code": code, "state": state})


def client_authentication() -> str | None:
    """The client authentication method used, or None when it fails."""
    req = flask.request
    auth = req.authorization
    values = req.values
    if auth is not None and auth.type == "basic":
        ok = auth.username == STATE.client_id and auth.password == STATE.client_secret
        return "client_secret_basic" if ok else None
    if values.get("client_secret") is not None:
        ok = values.get("client_id") == STATE.client_id and values.get("client_secret") == STATE.client_secret
        return "client_secret_post" if ok else None
    return "none" if values.get("client_id") == STATE.client_id else None


def id_token(login: dict, nonce: str | None) -> str:
    profile = STATE.profile
    now = int(time.time())
    claims = {"sub": login["user"]["sub"], "aud": STATE.client_id, "iat": now, "exp": now + 3600,
              "auth_time": login["auth_time"], "email": login["user"].get("email"),
              "email_verified": login["user"].get("email_verified"), "name": login["user"].get("name"),
              "acr": login.get("acr")}
    claims.update(profile.extra_id_claims(login))
    claims["iss"] = profile.token_issuer(claims)
    if nonce:
        claims["nonce"] = nonce
    return sign({k: v for k, v in claims.items() if v is not None})


def token():
    profile = STATE.profile
    req = flask.request
    params = req.args if req.method == "GET" else req.form
    with STATE.lock:
        STATE.stats["token"].append({"method": req.method, "grant_type": params.get("grant_type"),
                                     "in_query": sorted(req.args.keys()),
                                     "in_body": sorted(req.form.keys())})
    if req.method not in profile.token_methods:
        if profile.name == "facebook":
            return facebook_error("Unsupported post request.")
        return oauth_error("invalid_request", f"{req.method} is not accepted here")
    method = client_authentication()
    if method is None:
        if profile.name == "facebook":
            return facebook_error("Error validating client secret.", code=1)
        return oauth_error("invalid_client", "client authentication failed", 401)
    # Facebook's Graph exchange has no grant_type; the others require it.
    grant = params.get("grant_type") or ("authorization_code" if profile.name == "facebook" else None)
    if grant == "authorization_code":
        return exchange_code(params, method)
    if grant == "refresh_token" and profile.issues_refresh_token:
        return refresh(params)
    if grant == "fb_exchange_token" and profile.name == "facebook":
        return facebook_long_lived(params)
    return oauth_error("unsupported_grant_type", f"grant_type {grant}")


def facebook_long_lived(params):
    """ "Long-Lived Access Tokens": GET /oauth/access_token?grant_type=fb_exchange_token&client_id&
    client_secret&fb_exchange_token → {access_token, token_type: bearer, expires_in: ~60 days}."""
    profile = STATE.profile
    with STATE.lock:
        login = STATE.access_tokens.get(params.get("fb_exchange_token", ""))
    if login is None:
        return facebook_error("Invalid OAuth access token.", code=190)
    access = profile.access_token(login, STATE.client_id) + "-long"
    with STATE.lock:
        STATE.access_tokens[access] = login
    return flask.jsonify({"access_token": access, "token_type": "bearer",
                          "expires_in": STATE.config.get("long_lived_ttl", 5_184_000)})


def exchange_code(params, method: str):
    profile = STATE.profile
    with STATE.lock:
        login = STATE.codes.pop(params.get("code", ""), None)
    if login is None:
        return oauth_error("invalid_grant", "unknown or used code")
    if params.get("redirect_uri") != login["redirect_uri"]:
        return oauth_error("invalid_grant", "redirect_uri differs")
    verifier = params.get("code_verifier", "")
    if b64url_sha256(verifier) != login["challenge"]:
        return oauth_error("invalid_grant", "PKCE verification failed")
    if method == "none" and profile.name != "facebook":
        return oauth_error("invalid_client", "a confidential client must authenticate", 401)
    return tokens_for(login, with_refresh=profile.issues_refresh_token
                      and profile.wants_refresh_token(login["scope"], login["params"]), nonce=login["nonce"])


def tokens_for(login: dict, with_refresh: bool, nonce: str | None, refreshed=False):
    profile = STATE.profile
    access = profile.access_token(login, STATE.client_id)
    ttl = STATE.config["access_ttl"]
    body = {"access_token": access, "expires_in": ttl,
            # Facebook answers a lower-case "bearer" ("Manually Build a Login Flow").
            "token_type": "bearer" if profile.name == "facebook" else "Bearer"}
    if "openid" in login["scope"].split() and (not refreshed or profile.refresh_returns_id_token):
        body["id_token"] = id_token(login, nonce)
    if with_refresh:
        refresh_token = "rt-" + secrets.token_urlsafe(24)
        body["refresh_token"] = refresh_token
        with STATE.lock:
            STATE.refresh_tokens[refresh_token] = login
    with STATE.lock:
        STATE.access_tokens[access] = login
    if profile.name != "facebook":
        body["scope"] = login["scope"]
    return flask.jsonify(body)


def refresh(params):
    profile = STATE.profile
    presented = params.get("refresh_token", "")
    with STATE.lock:
        login = STATE.refresh_tokens.get(presented)
        if login is not None and profile.rotates_refresh_tokens:
            del STATE.refresh_tokens[presented]
    if login is None:
        return oauth_error("invalid_grant", "unknown refresh token")
    nonce = login["nonce"] if profile.refresh_id_token_keeps_nonce else None
    response = tokens_for(login, with_refresh=profile.rotates_refresh_tokens, nonce=nonce, refreshed=True)
    return response


def userinfo():
    header = flask.request.headers.get("Authorization", "")
    token_value = header[7:] if header.lower().startswith("bearer ") else ""
    with STATE.lock:
        STATE.stats["userinfo"] += 1
        login = STATE.access_tokens.get(token_value)
    if login is None:
        return flask.jsonify({"error": "invalid_token"}), 401
    user = login["user"]
    return flask.jsonify({k: v for k, v in {"sub": user["sub"], "email": user.get("email"),
                                            "name": user.get("name")}.items() if v is not None})


def revoke():
    with STATE.lock:
        STATE.stats["revocations"].append(flask.request.form.to_dict())
        STATE.refresh_tokens.pop(flask.request.form.get("token", ""), None)
    return "", 200


def end_session():
    profile = STATE.profile
    q = flask.request.args.to_dict()
    with STATE.lock:
        STATE.stats["logout"].append({"path": flask.request.path, **q})
    if profile.name == "keycloak" and "redirect_uri" in q:
        # Keycloak 18 release notes: `redirect_uri` is no longer accepted at logout;
        # post_logout_redirect_uri with id_token_hint or client_id instead.
        return "Invalid parameter: redirect_uri", 400
    if profile.name == "okta" and not q.get("id_token_hint"):
        # Okta "Sign users out" (/v1/logout): id_token_hint is required.
        return "id_token_hint required", 400
    target = q.get("post_logout_redirect_uri")
    return flask.redirect(target, 302) if target else "signed out"


def auth0_logout():
    q = flask.request.args.to_dict()
    with STATE.lock:
        STATE.stats["logout"].append({"path": flask.request.path, **q})
    if q.get("client_id") != STATE.client_id:
        return "client_id required", 400
    return flask.redirect(q["returnTo"], 302) if q.get("returnTo") else "signed out"


def jwks():
    return flask.jsonify(KeySet([STATE.key]).as_dict(private=False))


# ---------------------------------------------------------------------------
# Sign in with Apple
# ---------------------------------------------------------------------------

def apple_page_error(error: str, description: str, status=400):
    # Apple shows its errors to the user on appleid.apple.com rather than redirecting them
    # (e.g. "invalid_request: response_mode must be form_post when name or email scope is requested").
    return (f"<!doctype html><title>Sign in with Apple</title><h1>{html.escape(error)}</h1>"
            f"<p>{html.escape(description)}</p>", status, {"Content-Type": "text/html; charset=utf-8"})


def apple_form_post(redirect_uri: str, fields: dict) -> flask.Response:
    """OAuth 2.0 Form Post Response Mode, as appleid.apple.com answers it: a page whose only form
    posts the response to the redirect_uri and submits itself on load."""
    inputs = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}"/>'
                     for k, v in fields.items() if v is not None)
    body = ('<!doctype html><html><head><title>Sign in with Apple</title></head>'
            '<body onload="javascript:document.forms[0].submit()">'
            f'<form method="post" action="{html.escape(redirect_uri)}">{inputs}'
            '<noscript><button type="submit">Continue</button></noscript></form></body></html>')
    return flask.Response(body, 200, {"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"})


def apple_authorize():
    q = flask.request.args.to_dict()
    with STATE.lock:
        STATE.stats["authorize"].append(q)
        config = STATE.config
        user = dict(config["user"])
    if q.get("client_id") != STATE.client_id:
        return apple_page_error("invalid_client", "unknown client_id")
    redirect_uri = q.get("redirect_uri", "")
    if redirect_uri not in STATE.redirect_uris:
        # The redirect URI must be one of the Services ID's "Return URLs".
        return apple_page_error("invalid_request", "Invalid web redirect url.")
    # "Request an authorization to the Sign in with Apple server": response_type `code` or
    # `code id_token`; response_mode query, fragment or form_post, and "if you requested any
    # scopes, the value must be form_post".
    if q.get("response_type") not in ("code", "code id_token"):
        return apple_page_error("unsupported_response_type", "response_type must be code")
    scopes = q.get("scope", "").split()
    mode = q.get("response_mode", "query")
    if mode not in ("query", "fragment", "form_post"):
        return apple_page_error("invalid_request", "Invalid response_mode")
    if ("name" in scopes or "email" in scopes) and mode != "form_post":
        return apple_page_error("invalid_request", "response_mode must be form_post when name or email scope is requested.")
    state = q.get("state")

    def answer(fields: dict):
        fields = {k: v for k, v in fields.items() if v is not None}
        if mode == "form_post":
            return apple_form_post(redirect_uri, fields)
        sep = "#" if mode == "fragment" else ("&" if "?" in redirect_uri else "?")
        return flask.redirect(redirect_uri + sep + urlencode(fields), 302)

    if config.get("cancel"):
        # "Incorporating Sign in with Apple into other platforms", "Handle the response":
        # error=user_cancelled_authorize when the user cancels.
        return answer({"error": "user_cancelled_authorize", "state": state})
    challenge = q.get("code_challenge")
    if challenge and q.get("code_challenge_method", "plain") not in ("S256", "plain"):
        return answer({"error": "invalid_request", "state": state})
    code = "c" + secrets.token_hex(16) + ".0.m" + secrets.token_urlsafe(16)
    now = int(time.time())
    who = (STATE.client_id, user["sub"])
    with STATE.lock:
        first = who not in STATE.apple_authorized
        STATE.apple_authorized.add(who)
        STATE.codes[code] = {"redirect_uri": redirect_uri, "challenge": challenge,
                             "challenge_method": q.get("code_challenge_method", "plain"),
                             "nonce": q.get("nonce"), "scope": q.get("scope", ""), "params": q,
                             "user": user, "auth_time": now, "acr": None, "issued": time.time()}
    fields = {"state": state, "code": code}
    if first:
        # "Incorporating Sign in with Apple into other platforms", "Handle the response": `user`,
        # a JSON string with name {firstName, lastName} and email, "returned only the first time
        # the user authorizes the app" (and only for the scopes asked for). Apple also posts an
        # `id_token` here when response_type includes it; this emulation leaves it out.
        if config.get("user_override") is not None:
            fields["user"] = config["user_override"]
        elif "name" in scopes or "email" in scopes:
            info = {}
            if "name" in scopes:
                info["name"] = {"firstName": user.get("first_name"), "lastName": user.get("last_name")}
            if "email" in scopes:
                info["email"] = user.get("email")
            fields["user"] = json.dumps(info, ensure_ascii=False)
    return answer(fields)


def apple_client_secret(endpoint: str) -> str | None:
    """Checks client_secret_post with Apple's client secret, a JWT the developer signs
    ("Creating a client secret"): header alg ES256 and kid (the Sign in with Apple private key's
    id); iss the team id, iat, exp (no more than 15777000 s, six months, after iat), aud
    https://appleid.apple.com, sub the Services ID. Records what it got in stats["client_secrets"].
    Returns None when the client authenticates, else why not."""
    req = flask.request
    form = req.form
    record = {"endpoint": endpoint, "header": None, "claims": None, "jwt": form.get("client_secret"),
              "valid": False, "reason": None}

    def refuse(reason: str) -> str:
        record["reason"] = reason
        with STATE.lock:
            STATE.stats["client_secrets"].append(record)
        log.info("apple %s: client secret refused: %s", endpoint, reason)
        return reason

    # "token_endpoint_auth_methods_supported": ["client_secret_post"] only.
    if req.authorization is not None:
        return refuse("client authentication in an Authorization header")
    if form.get("client_id") != STATE.client_id:
        return refuse(f"client_id {form.get('client_id')!r}")
    secret = form.get("client_secret")
    if not secret:
        return refuse("no client_secret")
    try:
        compact = jws.extract_compact(secret.encode())
        header = compact.headers()
        claims = json.loads(compact.payload)
    except (JoseError, ValueError) as e:
        return refuse(f"not a JWT: {e}")
    record["header"], record["claims"] = header, claims
    if header.get("alg") != "ES256":
        return refuse(f"alg {header.get('alg')!r}")
    if header.get("kid") != STATE.apple_key_id:
        return refuse(f"kid {header.get('kid')!r}")
    try:
        jws.deserialize_compact(secret, STATE.apple_public_key, algorithms=["ES256"])
    except JoseError as e:
        return refuse(f"signature: {e}")
    if not isinstance(claims, dict):
        return refuse("claims are not an object")
    now = time.time()
    iat, exp = claims.get("iat"), claims.get("exp")
    if claims.get("iss") != STATE.apple_team_id:
        return refuse(f"iss {claims.get('iss')!r}")
    if claims.get("sub") != STATE.client_id:
        return refuse(f"sub {claims.get('sub')!r}")
    if claims.get("aud") != APPLE_AUDIENCE:
        return refuse(f"aud {claims.get('aud')!r}")
    if not isinstance(iat, int) or isinstance(iat, bool) or not isinstance(exp, int) or isinstance(exp, bool):
        return refuse("iat and exp must be integers")
    if iat > now + 1:  # one second for the rounding of a clock shared with the gateway
        return refuse("iat in the future")
    if exp <= now:
        return refuse("expired")
    if exp - iat > APPLE_SECRET_MAX_LIFETIME:
        return refuse(f"lifetime {exp - iat} s exceeds {APPLE_SECRET_MAX_LIFETIME} s")
    record["valid"] = True
    with STATE.lock:
        STATE.stats["client_secrets"].append(record)
    return None


def apple_error(error: str, status=400):
    # "ErrorResponse": {"error": "invalid_client"}, status 400 (invalid_client too).
    return flask.jsonify({"error": error}), status


def apple_id_token(login: dict, nonce: str | None) -> str:
    """"Authenticating users with Sign in with Apple", "Retrieve the user's information from Apple ID
    servers": iss, aud, exp, iat, sub, nonce, nonce_supported, email, email_verified and
    is_private_email, the last two as the strings "true"/"false". Never the user's name."""
    now = int(time.time())
    user = login["user"]
    claims = {"iss": STATE.profile.issuer, "aud": STATE.client_id, "exp": now + 3600, "iat": now,
              "sub": user["sub"], "auth_time": login["auth_time"], "nonce_supported": True}
    if nonce:
        claims["nonce"] = nonce
    if "email" in login["scope"].split() and user.get("email"):
        claims["email"] = user["email"]
        claims["email_verified"] = "true"
        claims["is_private_email"] = "true" if user.get("is_private_email") else "false"
    return sign(claims)


def apple_tokens(login: dict, refreshed: bool) -> flask.Response:
    # "TokenResponse": access_token, expires_in, id_token, refresh_token, token_type "Bearer";
    # no `scope`. A refresh answers no refresh_token ("Generate and validate tokens").
    access = STATE.profile.access_token(login, STATE.client_id)
    body = {"access_token": access, "token_type": "Bearer", "expires_in": STATE.config["access_ttl"],
            "id_token": apple_id_token(login, None if refreshed else login["nonce"])}
    with STATE.lock:
        STATE.access_tokens[access] = login
        if not refreshed:
            refresh_token = "r" + secrets.token_hex(16) + ".0.m" + secrets.token_urlsafe(16)
            body["refresh_token"] = refresh_token
            STATE.refresh_tokens[refresh_token] = login
    return flask.jsonify(body)


def apple_token():
    req = flask.request
    form = req.form
    with STATE.lock:
        STATE.stats["token"].append({"method": req.method, "grant_type": form.get("grant_type"),
                                     "in_query": sorted(req.args.keys()), "in_body": sorted(form.keys()),
                                     "authorization_header": req.headers.get("Authorization") is not None,
                                     "content_type": req.headers.get("Content-Type", "")})
    if req.method != "POST":
        return apple_error("invalid_request")
    if apple_client_secret("token") is not None:
        return apple_error("invalid_client")
    grant = form.get("grant_type")
    if grant == "authorization_code":
        with STATE.lock:
            login = STATE.codes.pop(form.get("code", ""), None)
        # "Generate and validate tokens": an authorization code is single-use and valid for five minutes.
        if login is None or time.time() - login["issued"] > 300:
            return apple_error("invalid_grant")
        if form.get("redirect_uri") != login["redirect_uri"]:
            return apple_error("invalid_grant")
        if login["challenge"]:
            verifier = form.get("code_verifier", "")
            expected = b64url_sha256(verifier) if login["challenge_method"] == "S256" else verifier
            if not verifier or expected != login["challenge"]:
                return apple_error("invalid_grant")
        return apple_tokens(login, refreshed=False)
    if grant == "refresh_token":
        with STATE.lock:
            login = STATE.refresh_tokens.get(form.get("refresh_token", ""))
        if login is None:
            return apple_error("invalid_grant")
        return apple_tokens(login, refreshed=True)
    return apple_error("unsupported_grant_type")


def apple_revoke():
    """"Revoke tokens": POST client_id, client_secret, token, token_type_hint; 200 when done."""
    form = flask.request.form
    refused = apple_client_secret("revoke")
    with STATE.lock:
        STATE.stats["revocations"].append({"token_type_hint": form.get("token_type_hint"),
                                           "token": form.get("token"), "client_id": form.get("client_id"),
                                           "client_secret_valid": refused is None})
    if refused is not None:
        return apple_error("invalid_client")
    with STATE.lock:
        STATE.refresh_tokens.pop(form.get("token", ""), None)
        STATE.access_tokens.pop(form.get("token", ""), None)
    return "", 200


APPLE_HANDLERS = {"authorization_endpoint": apple_authorize, "token_endpoint": apple_token,
                  "revocation_endpoint": apple_revoke}


HANDLERS = {"authorization_endpoint": authorize, "token_endpoint": token, "userinfo_endpoint": userinfo,
            "revocation_endpoint": revoke, "end_session_endpoint": end_session, "jwks_uri": jwks}
# Flask must know the methods the before_request hook serves (it answers 405 for others first).
app.add_url_rule("/<path:anything>", "any", lambda anything: ("not found", 404), methods=["GET", "POST"])


@app.post("/_test/clients")
def test_clients():
    body = flask.request.get_json(force=True)
    with STATE.lock:
        STATE.redirect_uris.update(body.get("redirect_uris", []))
    return flask.jsonify({"ok": True})


@app.post("/_test/config")
def test_config():
    body = flask.request.get_json(force=True)
    with STATE.lock:
        for key, value in body.items():
            if STATE.profile.test_config(key, value):
                continue
            if key == "user":
                STATE.config["user"].update(value)
            else:
                STATE.config[key] = value
        return flask.jsonify(STATE.config)


@app.get("/_test/stats")
def test_stats():
    with STATE.lock:
        return flask.jsonify(STATE.stats)


@app.post("/_test/reset")
def test_reset():
    with STATE.lock:
        STATE.reset()
    return flask.jsonify({"ok": True})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", required=True, choices=sorted(PROFILES))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--client-secret", help="required except with --profile apple")
    parser.add_argument("--apple-team-id", help="apple: the developer team id, the client secret's iss")
    parser.add_argument("--apple-key-id", help="apple: the signing key's id, the client secret's kid")
    parser.add_argument("--apple-public-key", help="apple: a PEM file, the P-256 public key of the client secrets")
    args = parser.parse_args()
    if args.profile == "apple":
        if not (args.apple_team_id and args.apple_key_id and args.apple_public_key):
            parser.error("--profile apple needs --apple-team-id, --apple-key-id and --apple-public-key")
        with open(args.apple_public_key, "rb") as f:
            STATE.apple_public_key = ECKey.import_key(f.read())
        if STATE.apple_public_key.curve_name != "P-256":
            parser.error("--apple-public-key must be a P-256 key")
        STATE.apple_team_id, STATE.apple_key_id = args.apple_team_id, args.apple_key_id
    elif args.client_secret is None:
        parser.error("--client-secret is required")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    server = werkzeug.serving.make_server("127.0.0.1", args.port, app, threaded=True)
    port = server.socket.getsockname()[1]
    STATE.profile = PROFILES[args.profile](f"http://127.0.0.1:{port}")
    STATE.client_id, STATE.client_secret = args.client_id, args.client_secret or ""
    with STATE.lock:
        STATE.reset()  # the profile's own state and defaults (reset_state)
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(port))
        import os
        os.replace(args.port_file + ".tmp", args.port_file)
    log.info("emulating %s at %s (issuer %s)", args.profile, STATE.profile.base, STATE.profile.issuer)
    server.serve_forever()


if __name__ == "__main__":
    main()
