"""An emulator of GitHub's OAuth web flow and the REST API endpoints a sign-in reads, for the
end-to-end tests of ``GATEHOUSE_PROVIDER=github`` (test_github.py).

GitHub is OAuth 2.0 only, not OpenID Connect: no discovery document, no ID token, no JWKS, no
UserInfo; the identity is read from the REST API with the access token. Every quirk below carries
a comment naming the GitHub document it comes from:

* "Authorizing OAuth apps" (docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps)
* "Troubleshooting authorization request errors", "Troubleshooting OAuth app access token request errors"
* "Scopes for OAuth apps"
* "Generating a user access token for a GitHub App", "Refreshing user access tokens"
* "About authentication to GitHub" / "Behind GitHub's new authentication token formats" (token prefixes)
* "PKCE support for OAuth and GitHub App authentication" (GitHub changelog, 2025-07-14)
* REST API: "Getting started with the REST API", "Rate limits for the REST API",
  "Using pagination in the REST API", "API Versions", "Users", "Emails", "Organizations",
  "Teams", "OAuth authorizations" (``DELETE /applications/{client_id}/token``)

Layout on one port, as GitHub Enterprise Server has it (``https://HOST/login/oauth/…`` and the
REST API at ``https://HOST/api/v3``): ``/login/oauth/authorize``, ``/login/oauth/access_token``
and the API under ``--api-prefix`` (default ``/api/v3``; ``""`` puts it at the root, as
api.github.com does).

The authorization endpoint signs the configured user in at once (no form). Test-only endpoints
under ``/_test/``: ``POST /_test/config`` (the user, emails, orgs, teams, expiring tokens and
lifetimes, failures), ``GET /_test/stats`` (authorize requests, token requests, refreshes, API
calls with their headers minus the token), ``GET /_test/tokens``, ``POST /_test/clients``
(client id/secret, redirect URIs), ``POST /_test/reset``.

Run: ``python github_emulator.py --port 0 --port-file F --client-id ID --client-secret S
[--redirect-uri URI ...] [--api-prefix /api/v3]``.
"""

from __future__ import annotations

import argparse
import base64
import copy
import hashlib
import html
import logging
import os
import secrets
import string
import threading
import time
from urllib.parse import urlencode, urlsplit
from xml.sax.saxutils import escape as xml_escape

import flask
import werkzeug.serving

log = logging.getLogger("github-emulator")

API_VERSION_DEFAULT = "2022-11-28"
# "API Versions": the versions GitHub's REST API accepts in X-GitHub-Api-Version; a request
# without the header gets the default one (2022-11-28).
API_VERSIONS = ("2022-11-28", "2026-03-10")
DOCS = "https://docs.github.com"

# "Scopes for OAuth apps": a parent scope includes its children (`user` includes read:user,
# user:email and user:follow; `admin:org` includes write:org which includes read:org).
SCOPE_PARENTS = {"read:user": ("user",), "user:email": ("user",), "user:follow": ("user",),
                 "read:org": ("write:org", "admin:org"), "write:org": ("admin:org",)}
KNOWN_SCOPES = {"repo", "repo:status", "repo_deployment", "public_repo", "repo:invite", "security_events",
                "admin:repo_hook", "write:repo_hook", "read:repo_hook", "admin:org", "write:org", "read:org",
                "admin:public_key", "write:public_key", "read:public_key", "admin:org_hook", "gist",
                "notifications", "user", "read:user", "user:email", "user:follow", "project", "read:project",
                "delete_repo", "write:packages", "read:packages", "delete:packages", "admin:gpg_key",
                "write:gpg_key", "read:gpg_key", "codespace", "workflow"}


def default_config() -> dict:
    return {
        # The user GitHub signs in ("Users": GET /user). `email` is the *public* email of the
        # profile (null when the user keeps it private), not necessarily the primary one.
        "user": {"login": "octocat", "id": 583231, "node_id": "MDQ6VXNlcjU4MzIzMQ==",
                 "name": "The Octocat", "avatar_url": "https://avatars.example/u/583231",
                 "email": None, "type": "User", "site_admin": False, "company": "@octo-org",
                 "blog": "https://github.blog", "location": "San Francisco", "bio": None},
        # "Emails": GET /user/emails, [{email, primary, verified, visibility}].
        "emails": [{"email": "octocat@github.example", "primary": True, "verified": True, "visibility": "private"},
                   {"email": "583231+octocat@users.noreply.github.com", "primary": False, "verified": True,
                    "visibility": None}],
        # Memberships; `public`: the membership is publicized (visible without read:org).
        "orgs": [{"login": "octo-org", "id": 9919, "public": True}],
        "teams": [{"slug": "platform", "name": "Platform", "id": 2403, "org": "octo-org"}],
        # GitHub Apps with "user-to-server token expiration" on ("Refreshing user access tokens").
        "expiring": False,
        "expires_in": 28800,
        "refresh_token_expires_in": 15897600,
        # True: the expiring-mode answer's `scope` is "" as a GitHub App's is (GitHub Apps have
        # permissions, not scopes); the API still honours the requested scopes here.
        "app_scope_empty": False,
        # The scopes the user leaves granted, when not those requested ("Scopes for OAuth apps",
        # "Requested scopes and granted scopes": the user may edit them). None: as requested.
        "grant_scopes": None,
        # An error the token endpoint answers (with status 200) instead of tokens, e.g.
        # bad_verification_code, incorrect_client_credentials, unverified_user_email.
        "fail_token": None,
        "fail_refresh": None,
        # The user clicks "Cancel" on the authorization page.
        "deny": False,
        # "Getting started with the REST API", "User agent": requests without User-Agent are refused.
        "require_user_agent": True,
        # "page": an HTML error page for an unregistered redirect_uri; "redirect": the documented
        # redirect to the registered callback URL with error=redirect_uri_mismatch.
        "redirect_mismatch": "page",
        # Milliseconds added to every REST answer (slow API tests).
        "api_delay_ms": 0,
    }


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.base = ""
        self.api_prefix = "/api/v3"
        self.clients: dict[str, dict] = {}  # client_id -> {"secret", "redirect_uris": [..]}
        self.codes: dict[str, dict] = {}
        self.access_tokens: dict[str, dict] = {}
        self.refresh_tokens: dict[str, dict] = {}
        self.reset()

    def reset(self):
        self.config = default_config()
        self.stats = {"authorize": [], "token": [], "token_requests": 0, "refreshes": 0,
                      "refresh_failures": 0, "api": [], "api_calls": 0, "not_found": [], "revocations": []}


STATE = State()
app = flask.Flask(__name__)


def token_value(prefix: str, length: int) -> str:
    # "Behind GitHub's new authentication token formats": gho_ (OAuth app access token), ghu_ (GitHub
    # App user access token), ghr_ (refresh token), then base62 characters.
    alphabet = string.ascii_letters + string.digits
    return prefix + "".join(secrets.choice(alphabet) for _ in range(length))


def b64url_sha256(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()


def parse_scopes(raw: str) -> list[str]:
    # "Authorizing OAuth apps": `scope` is "a space-delimited list of scopes"; GitHub also takes the
    # older comma-separated form. Unknown scopes are dropped from the grant.
    out = []
    for s in raw.replace(",", " ").split():
        if s in KNOWN_SCOPES and s not in out:
            out.append(s)
    return out


def has_scope(granted: list[str], scope: str) -> bool:
    return scope in granted or any(p in granted for p in SCOPE_PARENTS.get(scope, ()))


def now() -> float:
    return time.time()


# ---------------------------------------------------------------------------
# OAuth web flow
# ---------------------------------------------------------------------------

def redirect_allowed(client: dict, redirect_uri: str) -> bool:
    """"Authorizing OAuth apps", "Redirect URLs": the redirect_uri's host and port must exactly match
    the callback URL's and its path must be the callback URL's path or a subdirectory of it. (GitHub
    also lets a loopback redirect_uri use any port; this emulation does not, so that a test's
    gateways on 127.0.0.1 stay apart.)"""
    got = urlsplit(redirect_uri)
    for registered in client["redirect_uris"]:
        want = urlsplit(registered)
        if (got.scheme, got.netloc) != (want.scheme, want.netloc):
            continue
        base = want.path.rstrip("/")
        if got.path == want.path or got.path.startswith(base + "/"):
            return True
    return False


def error_page(title: str, message: str, status=400):
    return (f"<!doctype html><title>{html.escape(title)} · GitHub</title><h1>{html.escape(title)}</h1>"
            f"<p>{html.escape(message)}</p>", status, {"Content-Type": "text/html; charset=utf-8"})


@app.get("/login/oauth/authorize")
def authorize():
    q = flask.request.args.to_dict()
    with STATE.lock:
        STATE.stats["authorize"].append(q)
        config = copy.deepcopy(STATE.config)
        client = STATE.clients.get(q.get("client_id", ""))
    if client is None:
        # An unknown client_id: GitHub shows a 404 page.
        return error_page("404", "This is not the web page you are looking for.", 404)
    state = q.get("state")
    redirect_uri = q.get("redirect_uri")
    if redirect_uri is None:
        # "Authorizing OAuth apps": redirect_uri is optional; without it GitHub uses the app's callback URL.
        redirect_uri = client["redirect_uris"][0] if client["redirect_uris"] else ""
    elif not redirect_allowed(client, redirect_uri):
        # "Troubleshooting authorization request errors", "Redirect URI mismatch": GitHub sends the
        # browser to the *registered* callback URL with error=redirect_uri_mismatch (what a browser
        # sees at github.com for an unregistered URL is an error page: `redirect_mismatch: page`).
        if config["redirect_mismatch"] == "redirect" and client["redirect_uris"]:
            return flask.redirect(client["redirect_uris"][0] + "?" + urlencode({
                "error": "redirect_uri_mismatch",
                "error_description": "The redirect_uri MUST match the registered callback URL for this application.",
                "error_uri": f"{DOCS}/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#redirect-uri-mismatch",
                "state": state or ""}), 302)
        return error_page("redirect_uri_mismatch", "The redirect_uri is not associated with this application.")

    def back(params: dict):
        # No `iss` in the authorization response: GitHub does not implement RFC 9207.
        sep = "&" if "?" in redirect_uri else "?"
        return flask.redirect(redirect_uri + sep + urlencode({k: v for k, v in params.items() if v is not None}), 302)

    if config["deny"]:
        # "Troubleshooting authorization request errors", "Access denied".
        return back({"error": "access_denied",
                     "error_description": "The user has denied your application access.",
                     "error_uri": f"{DOCS}/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#access-denied",
                     "state": state})
    challenge = q.get("code_challenge")
    method = q.get("code_challenge_method")
    if challenge is not None and method != "S256":
        # "PKCE support for OAuth and GitHub App authentication": "Only the S256 code challenge method
        # is accepted." (PKCE itself is optional at GitHub.)
        return back({"error": "invalid_request", "error_description": "code_challenge_method must be S256",
                     "state": state})
    requested = parse_scopes(q.get("scope", ""))
    granted = requested if config["grant_scopes"] is None else parse_scopes(config["grant_scopes"])
    code = secrets.token_hex(10)  # GitHub's codes are 20 hex characters
    with STATE.lock:
        STATE.codes[code] = {"client_id": client["id"], "redirect_uri": redirect_uri,
                             "redirect_uri_sent": "redirect_uri" in q, "challenge": challenge,
                             "scopes": granted, "issued": now()}
    return back({"code": code, "state": state})


def token_answer(body: dict) -> flask.Response:
    """"Authorizing OAuth apps", step 2: "By default, the response takes the following form:
    access_token=…&scope=repo%2Cgist&token_type=bearer"; with `Accept: application/json` a JSON
    object, with `Accept: application/xml` XML. Errors ("Troubleshooting OAuth app access token
    request errors") come the same way and with status 200."""
    accept = flask.request.headers.get("Accept", "")
    if "application/json" in accept:
        return flask.Response(flask.json.dumps(body), 200, {"Content-Type": "application/json; charset=utf-8"})
    if "application/xml" in accept:
        inner = "".join(f"<{k}>{xml_escape(str(v))}</{k}>" for k, v in body.items())
        return flask.Response(f"<OAuth>{inner}</OAuth>", 200, {"Content-Type": "application/xml; charset=utf-8"})
    return flask.Response(urlencode({k: str(v) for k, v in body.items()}), 200,
                          {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})


ERROR_TEXT = {
    "incorrect_client_credentials": ("The client_id and/or client_secret passed are incorrect.",
                                     "/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#incorrect-client-credentials"),
    "redirect_uri_mismatch": ("The redirect_uri MUST match the registered callback URL for this application.",
                              "/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#redirect-uri-mismatch2"),
    "bad_verification_code": ("The code passed is incorrect or expired.",
                              "/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#bad-verification-code"),
    "unverified_user_email": ("The user must have a verified primary email.",
                              "/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#unverified-user-email"),
    # "Refreshing user access tokens", "Error responses".
    "bad_refresh_token": ("The refresh token passed is incorrect or expired.",
                          "/apps/creating-github-apps/authenticating-with-a-github-app/refreshing-user-access-tokens#bad_refresh_token"),
    "unsupported_grant_type": ("The grant type is not supported.",
                               "/apps/creating-github-apps/authenticating-with-a-github-app/refreshing-user-access-tokens#unsupported_grant_type"),
}


def token_error(error: str, description: str | None = None) -> flask.Response:
    text, uri = ERROR_TEXT.get(error, (error, "/"))
    return token_answer({"error": error, "error_description": description or text, "error_uri": DOCS + uri})


def issue_tokens(grant: dict) -> flask.Response:
    config = STATE.config
    expiring = config["expiring"]
    # "Generating a user access token for a GitHub App": a GitHub App's user token starts ghu_; an
    # OAuth app's gho_.
    access = token_value("ghu_" if expiring else "gho_", 36)
    scopes = grant["scopes"]
    body = {"access_token": access,
            # "Authorizing OAuth apps": the granted scopes, comma-separated, and a lower-case "bearer".
            "scope": "" if expiring and config["app_scope_empty"] else ",".join(scopes),
            "token_type": "bearer"}
    record = {"kind": "access", "token": access, "scopes": scopes, "client_id": grant["client_id"],
              "expires_at": None, "active": True, "issued": now()}
    if expiring:
        # "Refreshing user access tokens": with expiration on, expires_in (28800, eight hours), a
        # refresh_token starting ghr_ and refresh_token_expires_in (15897600, six months).
        record["expires_at"] = now() + config["expires_in"]
        refresh = token_value("ghr_", 76)
        body.update({"expires_in": config["expires_in"], "refresh_token": refresh,
                     "refresh_token_expires_in": config["refresh_token_expires_in"]})
        STATE.refresh_tokens[refresh] = {"kind": "refresh", "token": refresh, "scopes": scopes,
                                         "client_id": grant["client_id"], "active": True, "issued": now(),
                                         "expires_at": now() + config["refresh_token_expires_in"]}
    STATE.access_tokens[access] = record
    return body


@app.route("/login/oauth/access_token", methods=["GET", "POST"])
def access_token():
    req = flask.request
    form = req.form
    auth = req.authorization
    entry = {"method": req.method, "grant_type": form.get("grant_type"), "accept": req.headers.get("Accept"),
             "content_type": req.headers.get("Content-Type"), "user_agent": req.headers.get("User-Agent"),
             "in_body": sorted(form.keys()), "in_query": sorted(req.args.keys()),
             "client_auth": "basic" if auth is not None and auth.type == "basic" else
                            ("post" if "client_secret" in form else "none"),
             "code_verifier": "code_verifier" in form, "redirect_uri": form.get("redirect_uri"),
             "result": None}
    with STATE.lock:
        STATE.stats["token"].append(entry)
        STATE.stats["token_requests"] += 1

    def fail(error: str, description: str | None = None):
        entry["result"] = error
        return token_error(error, description)

    if req.method != "POST":
        # "Authorizing OAuth apps": POST https://github.com/login/oauth/access_token.
        entry["result"] = "405"
        return flask.Response("Method Not Allowed", 405, {"Allow": "POST"})
    # "Authorizing OAuth apps": client_id and client_secret are body parameters; GitHub also takes them
    # as HTTP Basic credentials.
    if entry["client_auth"] == "basic":
        client_id, secret = auth.username, auth.password
    else:
        client_id, secret = form.get("client_id"), form.get("client_secret")
    with STATE.lock:
        client = STATE.clients.get(client_id or "")
        config = copy.deepcopy(STATE.config)
    if client is None or not secret or not secrets.compare_digest(secret, client["secret"]):
        return fail("incorrect_client_credentials")
    grant_type = form.get("grant_type")
    if grant_type == "refresh_token":
        return refresh_grant(client, entry, config)
    if grant_type not in (None, "authorization_code"):
        # The code exchange has no grant_type at GitHub; authorization_code is tolerated.
        return fail("unsupported_grant_type")
    if config["fail_token"]:
        with STATE.lock:
            STATE.codes.pop(form.get("code", ""), None)
        return fail(config["fail_token"])
    with STATE.lock:
        grant = STATE.codes.pop(form.get("code", ""), None)
    # "Troubleshooting OAuth app access token request errors", "Bad verification code": a code that is
    # incorrect, expired (ten minutes, "Authorizing OAuth apps"), used, or not this client's.
    if grant is None or grant["client_id"] != client["id"] or now() - grant["issued"] > 600:
        return fail("bad_verification_code")
    if form.get("redirect_uri") is not None and form.get("redirect_uri") != grant["redirect_uri"]:
        return fail("redirect_uri_mismatch")
    if grant["challenge"] is not None:
        # "PKCE support …": a code issued with a code_challenge needs the matching code_verifier. GitHub
        # does not document the error it answers; the code is refused as a bad verification code.
        verifier = form.get("code_verifier", "")
        if not verifier or b64url_sha256(verifier) != grant["challenge"]:
            return fail("bad_verification_code", "The code_verifier does not match the code_challenge.")
    with STATE.lock:
        body = issue_tokens(grant)
    entry["result"] = "ok"
    return token_answer(body)


def refresh_grant(client: dict, entry: dict, config: dict):
    """"Refreshing user access tokens": POST client_id, client_secret, grant_type=refresh_token,
    refresh_token. The answer is a new access token and a new refresh token; the old refresh token
    stops working."""
    presented = flask.request.form.get("refresh_token", "")
    with STATE.lock:
        record = STATE.refresh_tokens.get(presented)
        ok = (record is not None and record["active"] and record["client_id"] == client["id"]
              and now() < record["expires_at"] and not config["fail_refresh"])
        if not ok:
            STATE.stats["refresh_failures"] += 1
        else:
            record["active"] = False
            STATE.stats["refreshes"] += 1
            body = issue_tokens({"client_id": client["id"], "scopes": record["scopes"]})
    if not ok:
        entry["result"] = config["fail_refresh"] or "bad_refresh_token"
        return token_error(entry["result"])
    entry["result"] = "ok"
    return token_answer(body)


# ---------------------------------------------------------------------------
# REST API
# ---------------------------------------------------------------------------

def api_json(body, status=200, scopes: list[str] | None = None, accepted: str | None = None,
             extra_headers: dict | None = None) -> flask.Response:
    reset = int(now()) + 3600
    headers = {
        "Content-Type": "application/json; charset=utf-8",
        # "Getting started with the REST API", "Media types" and "API Versions".
        "X-GitHub-Media-Type": "github.v3; format=json",
        "X-GitHub-Api-Version-Selected": flask.g.get("api_version", API_VERSION_DEFAULT),
        # "Rate limits for the REST API", "Checking the status of your rate limit".
        "X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "4999", "X-RateLimit-Reset": str(reset),
        "X-RateLimit-Used": "1", "X-RateLimit-Resource": "core",
        "X-GitHub-Request-Id": secrets.token_hex(8).upper(),
    }
    if scopes is not None:
        # "Scopes for OAuth apps", "Checking the scopes your token has": X-OAuth-Scopes lists the token's
        # scopes, X-Accepted-OAuth-Scopes those the action checks for.
        headers["X-OAuth-Scopes"] = ", ".join(scopes)
        headers["X-Accepted-OAuth-Scopes"] = accepted or ""
    headers.update(extra_headers or {})
    return flask.Response(flask.json.dumps(body), status, headers)


def api_call(handler_name: str):
    """Records the call, applies the REST API's common checks, returns (token record, error response)."""
    req = flask.request
    headers = []
    for k, v in req.headers.items():
        if k.lower() == "authorization":
            scheme, _, cred = v.partition(" ")
            v = f"{scheme} {cred[:4]}…" if cred else scheme
        headers.append([k, v])
    entry = {"method": req.method, "path": req.path, "endpoint": handler_name, "query": req.query_string.decode(),
             "headers": headers, "status": None}
    with STATE.lock:
        STATE.stats["api"].append(entry)
        STATE.stats["api_calls"] += 1
        config = copy.deepcopy(STATE.config)
    if config["api_delay_ms"]:
        time.sleep(config["api_delay_ms"] / 1000)

    def refuse(response):
        entry["status"] = response.status_code
        return None, response

    version = req.headers.get("X-GitHub-Api-Version")
    if version is not None and version not in API_VERSIONS:
        # "API Versions": an unsupported version is answered 400.
        return refuse(api_json({"message": f"API version '{version}' is not supported.",
                                "documentation_url": f"{DOCS}/rest/about-the-rest-api/api-versions"}, 400))
    flask.g.api_version = version or API_VERSION_DEFAULT
    if config["require_user_agent"] and not req.headers.get("User-Agent"):
        # "Getting started with the REST API", "User agent": "requests with no User-Agent header will
        # be rejected" (a 403 in plain text).
        return refuse(flask.Response(
            "Request forbidden by administrative rules. Please make sure your request has a User-Agent header "
            f"({DOCS}/rest/overview/resources-in-the-rest-api#user-agent-required). "
            "Check https://developer.github.com for other possible causes.\n", 403,
            {"Content-Type": "text/plain; charset=utf-8"}))
    # "Authenticating to the REST API": `Authorization: Bearer TOKEN` or `Authorization: token TOKEN`.
    raw = req.headers.get("Authorization", "")
    scheme, _, cred = raw.partition(" ")
    if scheme.lower() not in ("bearer", "token") or not cred.strip():
        return refuse(api_json({"message": "Requires authentication",
                                "documentation_url": f"{DOCS}/rest/users/users#get-the-authenticated-user",
                                "status": "401"}, 401))
    with STATE.lock:
        record = STATE.access_tokens.get(cred.strip())
        record = dict(record) if record else None
    if record is None or not record["active"] or (record["expires_at"] is not None and now() >= record["expires_at"]):
        # "Troubleshooting the REST API", "Bad credentials" (also for an expired user token).
        return refuse(api_json({"message": "Bad credentials", "documentation_url": f"{DOCS}/rest",
                                "status": "401"}, 401))
    # The token itself is never recorded: its prefix and a SHA-256 fingerprint to compare with.
    entry["token_prefix"] = cred.strip()[:4]
    entry["token_sha256"] = hashlib.sha256(cred.strip().encode()).hexdigest()
    flask.g.api_entry = entry
    return record, None


def finish(response: flask.Response) -> flask.Response:
    entry = flask.g.get("api_entry")
    if entry is not None:
        entry["status"] = response.status_code
    return response


def paginate(items: list, record: dict, accepted: str) -> flask.Response:
    """"Using pagination in the REST API": 30 items a page by default, `per_page` up to 100, and a
    Link header with rel="next"/"last"/"first"/"prev"."""
    args = flask.request.args
    try:
        per_page = max(1, min(100, int(args.get("per_page", 30))))
        page = max(1, int(args.get("page", 1)))
    except ValueError:
        per_page, page = 30, 1
    last = max(1, -(-len(items) // per_page))
    chunk = items[(page - 1) * per_page: page * per_page]
    links = []
    url = STATE.base + flask.request.path

    def link(p, rel):
        links.append(f'<{url}?{urlencode({"per_page": per_page, "page": p})}>; rel="{rel}"')

    if page < last:
        link(page + 1, "next")
        link(last, "last")
    if page > 1:
        link(1, "first")
        link(page - 1, "prev")
    extra = {"Link": ", ".join(links)} if links else {}
    return finish(api_json(chunk, scopes=record["scopes"], accepted=accepted, extra_headers=extra))


def user_json() -> dict:
    u = STATE.config["user"]
    login = u["login"]
    return {"login": login, "id": u["id"], "node_id": u.get("node_id"), "avatar_url": u.get("avatar_url"),
            "gravatar_id": "", "url": f"{STATE.base}{STATE.api_prefix}/users/{login}",
            "html_url": f"{STATE.base}/{login}", "type": u.get("type", "User"), "site_admin": u.get("site_admin", False),
            "name": u.get("name"), "company": u.get("company"), "blog": u.get("blog"), "location": u.get("location"),
            "email": u.get("email"), "hireable": None, "bio": u.get("bio"), "twitter_username": None,
            "public_repos": 8, "public_gists": 8, "followers": 20000, "following": 9,
            "created_at": "2011-01-25T18:44:36Z", "updated_at": "2024-01-22T12:00:00Z"}


def org_json(org: dict) -> dict:
    login = org["login"]
    api = f"{STATE.base}{STATE.api_prefix}/orgs/{login}"
    return {"login": login, "id": org.get("id", abs(hash(login)) % 10_000_000), "node_id": f"MDEyOk9yZ2FuaXphdGlvbj{login}",
            "url": api, "repos_url": api + "/repos", "events_url": api + "/events", "hooks_url": api + "/hooks",
            "issues_url": api + "/issues", "members_url": api + "/members{/member}",
            "public_members_url": api + "/public_members{/member}",
            "avatar_url": f"https://avatars.example/o/{login}", "description": org.get("description", "")}


def api_user():
    record, refused = api_call("user")
    if refused:
        return refused
    # "Users", "Get the authenticated user": no scope needed for the public profile (read:user adds
    # private profile fields).
    with STATE.lock:
        body = user_json()
    return finish(api_json(body, scopes=record["scopes"], accepted=""))


def api_user_emails():
    record, refused = api_call("user/emails")
    if refused:
        return refused
    # "Emails", "List email addresses for the authenticated user": needs the user:email scope (or
    # user); a token without it is answered 404 Not Found.
    if not has_scope(record["scopes"], "user:email"):
        return finish(api_json({"message": "Not Found", "documentation_url":
                                f"{DOCS}/rest/users/emails#list-email-addresses-for-the-authenticated-user",
                                "status": "404"}, 404, scopes=record["scopes"], accepted="user, user:email"))
    with STATE.lock:
        emails = [{"email": e["email"], "primary": bool(e.get("primary")), "verified": bool(e.get("verified")),
                   "visibility": e.get("visibility")} for e in STATE.config["emails"]]
    return paginate(emails, record, "user, user:email")


def api_user_orgs():
    record, refused = api_call("user/orgs")
    if refused:
        return refused
    # "Organizations", "List organizations for the authenticated user": "This only lists organizations
    # that your authorization allows you to operate on"; without read:org (or user) only the publicized
    # memberships are listed.
    with STATE.lock:
        orgs = copy.deepcopy(STATE.config["orgs"])
    full = has_scope(record["scopes"], "read:org") or "user" in record["scopes"]
    visible = [org_json(o) for o in orgs if full or o.get("public")]
    return paginate(visible, record, "admin:org, read:org, repo, user, write:org")


def api_user_teams():
    record, refused = api_call("user/teams")
    if refused:
        return refused
    # "Teams", "List teams for the authenticated user": "OAuth app tokens and personal access tokens
    # (classic) need the user, repo, or read:org scope"; without one of them, 403.
    granted = record["scopes"]
    if not (has_scope(granted, "read:org") or "user" in granted or "repo" in granted):
        return finish(api_json({"message": "You need at least read:org scope or user scope to list your teams.",
                                "documentation_url": f"{DOCS}/rest/teams/teams#list-teams-for-the-authenticated-user",
                                "status": "403"}, 403, scopes=granted, accepted="read:org, repo, user"))
    with STATE.lock:
        teams = copy.deepcopy(STATE.config["teams"])
        orgs = {o["login"]: o for o in STATE.config["orgs"]}
    body = []
    for t in teams:
        org = orgs.get(t["org"], {"login": t["org"]})
        api = f"{STATE.base}{STATE.api_prefix}/organizations/{org.get('id', 1)}/team/{t.get('id', 1)}"
        body.append({"id": t.get("id", 1), "node_id": "MDQ6VGVhbTE=", "url": api, "html_url": f"{STATE.base}/orgs/{t['org']}/teams/{t['slug']}",
                     "name": t.get("name", t["slug"]), "slug": t["slug"], "description": "", "privacy": "closed",
                     "notification_setting": "notifications_enabled", "permission": "pull",
                     "members_url": api + "/members{/member}", "repositories_url": api + "/repos", "parent": None,
                     "members_count": 3, "repos_count": 10, "created_at": "2017-07-14T16:53:42Z",
                     "updated_at": "2017-08-17T12:37:15Z", "organization": org_json(org)})
    return paginate(body, record, "read:org, repo, user")


def api_delete_token(client_id: str, what: str):
    """"OAuth authorizations": DELETE /applications/{client_id}/token (revoke one token) and
    DELETE /applications/{client_id}/grant (revoke the grant), Basic auth with the client's id and
    secret, body {"access_token": …}; 204 No Content, 404 for an unknown token, 401 for bad credentials."""
    req = flask.request
    auth = req.authorization
    body = req.get_json(silent=True) or {}
    entry = {"what": what, "client_id": client_id, "basic": auth is not None and auth.type == "basic",
             "token_prefix": str(body.get("access_token", ""))[:4], "status": None}
    with STATE.lock:
        STATE.stats["revocations"].append(entry)
        client = STATE.clients.get(client_id)
    if client is None or auth is None or auth.username != client_id or auth.password != client["secret"]:
        entry["status"] = 401
        return api_json({"message": "Bad credentials", "documentation_url": f"{DOCS}/rest"}, 401)
    with STATE.lock:
        record = STATE.access_tokens.get(str(body.get("access_token", "")))
        if record is None or record["client_id"] != client_id:
            entry["status"] = 404
            return api_json({"message": "Not Found", "documentation_url": f"{DOCS}/rest"}, 404)
        record["active"] = False
        if what == "grant":
            for r in list(STATE.access_tokens.values()) + list(STATE.refresh_tokens.values()):
                if r["client_id"] == client_id:
                    r["active"] = False
    entry["status"] = 204
    return flask.Response(status=204)


def register_api(prefix: str):
    p = prefix.rstrip("/")
    app.add_url_rule(p + "/user", "api_user", api_user, methods=["GET"])
    app.add_url_rule(p + "/user/emails", "api_user_emails", api_user_emails, methods=["GET"])
    app.add_url_rule(p + "/user/orgs", "api_user_orgs", api_user_orgs, methods=["GET"])
    app.add_url_rule(p + "/user/teams", "api_user_teams", api_user_teams, methods=["GET"])
    app.add_url_rule(p + "/applications/<client_id>/token", "api_delete_token",
                     lambda client_id: api_delete_token(client_id, "token"), methods=["DELETE"])
    app.add_url_rule(p + "/applications/<client_id>/grant", "api_delete_grant",
                     lambda client_id: api_delete_token(client_id, "grant"), methods=["DELETE"])


@app.errorhandler(404)
def not_found(_e):
    # No OpenID Connect: /.well-known/openid-configuration, a JWKS, UserInfo all answer 404 (recorded).
    req = flask.request
    with STATE.lock:
        STATE.stats["not_found"].append({"method": req.method, "path": req.path})
    if STATE.api_prefix and (req.path.startswith(STATE.api_prefix + "/") or req.path == STATE.api_prefix):
        return api_json({"message": "Not Found", "documentation_url": f"{DOCS}/rest", "status": "404"}, 404)
    return error_page("404", "This is not the web page you are looking for.", 404)


# ---------------------------------------------------------------------------
# Test-only API
# ---------------------------------------------------------------------------

@app.post("/_test/clients")
def test_clients():
    body = flask.request.get_json(force=True)
    with STATE.lock:
        cid = body.get("client_id") or next(iter(STATE.clients), None)
        if cid is None:
            return flask.jsonify({"error": "client_id required"}), 400
        client = STATE.clients.setdefault(cid, {"id": cid, "secret": body.get("client_secret", ""), "redirect_uris": []})
        if body.get("client_secret") is not None:
            client["secret"] = body["client_secret"]
        for uri in body.get("redirect_uris", []):
            if uri not in client["redirect_uris"]:
                client["redirect_uris"].append(uri)
        return flask.jsonify({k: v for k, v in client.items() if k != "secret"})


@app.post("/_test/config")
def test_config():
    body = flask.request.get_json(force=True)
    with STATE.lock:
        for key, value in body.items():
            if key not in STATE.config:
                return flask.jsonify({"error": f"unknown key {key}"}), 400
            if key == "user":
                STATE.config["user"].update(value)
            else:
                STATE.config[key] = value
        return flask.jsonify(STATE.config)


@app.get("/_test/stats")
def test_stats():
    with STATE.lock:
        return flask.jsonify(STATE.stats)


@app.get("/_test/tokens")
def test_tokens():
    with STATE.lock:
        out = [dict(r) for r in list(STATE.access_tokens.values()) + list(STATE.refresh_tokens.values())]
    return flask.jsonify(out)


@app.post("/_test/reset")
def test_reset():
    with STATE.lock:
        STATE.reset()
    return flask.jsonify({"ok": True})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--client-secret", required=True)
    parser.add_argument("--redirect-uri", action="append", default=[])
    parser.add_argument("--api-prefix", default="/api/v3", help='where the REST API lives ("" for the root)')
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    STATE.api_prefix = args.api_prefix.rstrip("/")
    register_api(STATE.api_prefix)
    STATE.clients[args.client_id] = {"id": args.client_id, "secret": args.client_secret,
                                     "redirect_uris": list(args.redirect_uri)}
    server = werkzeug.serving.make_server("127.0.0.1", args.port, app, threaded=True)
    port = server.socket.getsockname()[1]
    STATE.base = f"http://127.0.0.1:{port}"
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(args.port_file + ".tmp", args.port_file)
    log.info("emulating GitHub at %s (REST API at %s%s)", STATE.base, STATE.base, STATE.api_prefix)
    server.serve_forever()


if __name__ == "__main__":
    main()
