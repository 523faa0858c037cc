"""An emulator of six real OpenID providers for the end-to-end suite (issue 13).

``provider_server.py`` is a by-the-book provider. Real providers are not: each profile
here reproduces, on 127.0.0.1, the shape of one provider's discovery document, its
issuer forms, its token-request method, its refresh behaviour, its logout endpoint
and its characteristic claims. Every quirk carries a comment naming the public
document it comes from, so that a change at the provider can be checked against it.

Profiles (``--profile``): auth0, google, facebook, keycloak, entra, okta.

The authorization endpoint signs the user in at once (no form): the tests drive a
browser-level flow with ``requests`` following redirects. Test-only endpoints under
``/_test/`` set the user's claims and lifetimes and expose what the gateway sent.

Run: ``python provider_emulator.py --profile google --port 0 --port-file F
--client-id ID --client-secret S``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import logging
import secrets
import threading
import time
import uuid
from urllib.parse import urlencode

import flask
import werkzeug.serving
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

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


PROFILES = {cls.name: cls for cls in (Auth0, Google, Facebook, Keycloak, Entra, Okta)}


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
        self.reset()

    def reset(self):
        self.config = {"access_ttl": 3600, "google_short_iss": True, "acr_mode": "honour",
                       "acr_default": "urn:gatehouse:basic", "session_age": 0, "max_age_mode": "honour",
                       "user": {"sub": "user-1", "email": "ada@example.com", "email_verified": True,
                                "name": "Ada Lovelace"}}
        self.stats = {"authorize": [], "token": [], "logout": [], "revocations": [], "userinfo": 0}


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
    for field, own in profile.paths().items():
        if own is not None and path == own:
            return HANDLERS[field]()
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
    parser.add_argument("--client-secret", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    server = werkzeug.serving.make_server("127.0.0.1", args.port, app, threaded=True)
    port = server.socket.getsockname()[1]
    STATE.profile = PROFILES[args.profile](f"http://127.0.0.1:{port}")
    STATE.client_id, STATE.client_secret = args.client_id, args.client_secret
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(port))
        import os
        os.replace(args.port_file + ".tmp", args.port_file)
    log.info("emulating %s at %s (issuer %s)", args.profile, STATE.profile.base, STATE.profile.issuer)
    server.serve_forever()


if __name__ == "__main__":
    main()
