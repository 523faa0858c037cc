"""Gatehouse's additions to the shared OIDF RP runner (drive.py), without editing it.

scripts/conformance copies the shared run.sh next to this file's copy (as drive.py) and the shared
drive.py as drive_shared.py; this wrapper then classifies the tests Gatehouse supports beyond the
shared runner's table (with each one's registration additions and gateway environment), drives the
ones the shared modes cannot (form_post, front-channel logout, third-party initiated login, request
objects by reference, encryption to the OP's rotating keys), and runs
its main().

OIDF_RP_TRY_SKIPPED=1 also runs the tests listed in NOT_APPLICABLE (below) with the registration the
test OP demands, to show why they cannot pass; they fail or prove nothing, so they are skipped by
default.
"""
import atexit
import base64
import hashlib
import html
import json
import os
import re
import sys
import tempfile
from urllib.parse import parse_qs, urlencode, urljoin, urlparse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import drive_shared as drive  # noqa: E402

PUBLIC = drive.PUBLIC
MULTI = os.environ.get("OIDF_RP_MULTI_PROVIDER") == "1"
# Where the test OP's third-party login redirect is sent back to (a page of this site).
THIRD_PARTY_TARGET = PUBLIC + "/oidf-rp-third-party-target"

# Per test: the runner's spec (mode and checks), registration additions, gateway environment,
# `enc`: the kind of client encryption key (GATEHOUSE_CLIENT_ENCRYPTION_KEY, its public half
# registered as `jwks`), `sig`: register the client signing key (GATEHOUSE_CLIENT_PRIVATE_KEY).
# Modes beyond the shared runner's: form_post, form_post_error, fc_logout, third_party (below).
EXTRA = {
    # GATEHOUSE_CLIENT_AUTH_METHOD=client_secret_jwt / private_key_jwt: the runner registers the
    # client with that method and passes it on
    "rp-token_endpoint-client_secret_jwt": {"spec": {"mode": "accept", "auth": "client_secret_jwt"}},
    "rp-token_endpoint-private_key_jwt": {"spec": {"mode": "accept", "auth": "private_key_jwt"}, "sig": True},
    # signed UserInfo; a UserInfo call is required for the PASS
    "rp-userinfo-sig": {"spec": {"mode": "accept", "userinfo": True},
                        "registration": {"userinfo_signed_response_alg": "RS256"}},
    # the code comes back as a form the browser posts to the callback
    "rp-response_mode-form_post": {"spec": {"mode": "form_post"},
                                   "env": {"GATEHOUSE_RESPONSE_MODE": "form_post"}},
    # /login?prompt=none&max_age=0: the test OP posts login_required back
    "rp-response_mode-form_post-error": {"spec": {"mode": "form_post_error"},
                                         "env": {"GATEHOUSE_RESPONSE_MODE": "form_post"}},
    "rp-frontchannel-rpinitlogout": {"spec": {"mode": "fc_logout"},
                                     "registration": {"frontchannel_logout_session_required": True}},
    "rp-3rd_party-init-login": {"spec": {"mode": "third_party"}},
    # encrypted UserInfo (JSON inside), then signed and encrypted: the claims only UserInfo carries
    # (name, email: the ID token has only the registered claims) must reach /user
    "rp-userinfo-enc": {"spec": {"mode": "accept", "userinfo": True, "claims": ["name", "email"]}, "enc": "RSA",
                        "registration": {"userinfo_encrypted_response_alg": "RSA-OAEP",
                                         "userinfo_encrypted_response_enc": "A128CBC-HS256"}},
    # (not ECDH-ES: the test OP's pyjwkest 1.4.3 cannot encrypt to an EC public key, JWE.encrypt asks
    # the recipient's key for its private part and the UserInfo endpoint answers 500)
    "rp-userinfo-sig+enc": {"spec": {"mode": "accept", "userinfo": True, "claims": ["name", "email"]}, "enc": "RSA",
                            "registration": {"userinfo_signed_response_alg": "RS256",
                                             "userinfo_encrypted_response_alg": "RSA-OAEP-256",
                                             "userinfo_encrypted_response_enc": "A256GCM"}},
    # the claims request parameter asks for `name` with the scope openid alone, so `name` can only
    # come from the claims request: in the ID token (UserInfo never called) / in UserInfo
    "rp-claims_request-id_token": {"spec": {"mode": "accept", "claims": ["name"], "userinfo": False},
                                   "env": {"GATEHOUSE_SCOPES": "openid", "GATEHOUSE_USERINFO": "false",
                                           "GATEHOUSE_CLAIMS_REQUEST": '{"id_token":{"name":{"essential":true}}}'}},
    "rp-claims_request-userinfo": {"spec": {"mode": "accept", "claims": ["name"], "userinfo": True},
                                   "env": {"GATEHOUSE_SCOPES": "openid", "GATEHOUSE_USERINFO": "true",
                                           "GATEHOUSE_CLAIMS_REQUEST": '{"userinfo":{"name":{"essential":true}}}'}},
    # Distributed claims (OIDC Core 5.6.2): `age` fetched from the OP's claims endpoint with the access
    # token the source names, its JWT verified (RS256, the OP's keys) before it is taken.
    "rp-claims-distributed": {"spec": {"mode": "accept", "userinfo": True, "claims": ["age"]}},
    # An ID token encrypted with A128KW (the key the left-most 128 bits of SHA-256 of the client secret,
    # OIDC Core 10.2) and A256CBC-HS512: the only pair this test's OP offers.
    "rp-id_token-sig+enc-a128kw": {"spec": {"mode": "accept"}, "enc": "RSA",
                                   "registration": {"id_token_encrypted_response_alg": "A128KW",
                                                    "id_token_encrypted_response_enc": "A256CBC-HS512"}},
    # Request objects by reference (GATEHOUSE_REQUEST_OBJECT=reference): the browser carries only
    # request_uri (a /request-object/ URL of the gateway) beside the repeated parameters, and the OP
    # fetches the object from it. Gatehouse always signs (RS256 here): `-unsigned` asks for alg none,
    # which it never sends; the OP takes the signed object as registered. `-enc`: encrypted to the
    # OP's key (GATEHOUSE_REQUEST_OBJECT_ENCRYPTION=on); the flow's text says RSA1_5, which Gatehouse
    # never uses: it picks RSA-OAEP-256 with A256GCM from what the OP lists.
    "rp-request_uri-unsigned": {"spec": {"mode": "request_object", "object": "signed"}, "sig": True,
                                "env": {"GATEHOUSE_REQUEST_OBJECT": "reference"},
                                "registration": {"request_object_signing_alg": "RS256"}},
    "rp-request_uri-sig": {"spec": {"mode": "request_object", "object": "signed"}, "sig": True,
                           "env": {"GATEHOUSE_REQUEST_OBJECT": "reference"},
                           "registration": {"request_object_signing_alg": "RS256"}},
    "rp-request_uri-enc": {"spec": {"mode": "request_object", "object": "encrypted"}, "sig": True,
                           "env": {"GATEHOUSE_REQUEST_OBJECT": "reference", "GATEHOUSE_REQUEST_OBJECT_ENCRYPTION": "on"},
                           "registration": {"request_object_signing_alg": "RS256"}},
    "rp-request_uri-sig+enc": {"spec": {"mode": "request_object", "object": "encrypted"}, "sig": True,
                               "env": {"GATEHOUSE_REQUEST_OBJECT": "reference",
                                       "GATEHOUSE_REQUEST_OBJECT_ENCRYPTION": "on"},
                               "registration": {"request_object_signing_alg": "RS256"}},
    # The OP rotates its encryption keys after every authorization request: two logins, each request
    # object (by value here) encrypted to the key the OP publishes at that moment.
    "rp-key-rotation-op-enc-key": {"spec": {"mode": "enc_rotation"}, "sig": True,
                                   "env": {"GATEHOUSE_REQUEST_OBJECT": "on", "GATEHOUSE_REQUEST_OBJECT_ENCRYPTION": "on"},
                                   "registration": {"request_object_signing_alg": "RS256"}},
}

# Skipped (the shared table's reason replaced by the precise one); OIDF_RP_TRY_SKIPPED=1 runs them as
# configured here.
NOT_APPLICABLE = {
    "rp-id_token-sig+enc": (
        "encrypted ID token: this test's OP offers only RSA1_5 with A128CBC-HS256 (registering any other "
        "alg is refused: \"Don't support proposed id_token_encrypted_response_alg\"); Gatehouse refuses "
        "RSA1_5 by design",
        {"spec": {"mode": "accept"}, "enc": "RSA",
         "registration": {"id_token_encrypted_response_alg": "RSA1_5",
                          "id_token_encrypted_response_enc": "A128CBC-HS256"}}),
    "rp-claims-aggregated": (
        "aggregated claims: the test OP's aggregated JWT is unsigned (alg none); Gatehouse takes a source's "
        "claims only once its JWT is verified, so eye_color and shoe_size are dropped (by design)",
        {"spec": {"mode": "accept", "userinfo": True, "claims": ["eye_color", "shoe_size"]}}),
    "rp-userinfo-bearer-body": (
        "Gatehouse sends the access token in the Authorization header only (RFC 6750 2.1); the "
        "form-encoded body is not offered",
        None),
}
if os.environ.get("OIDF_RP_TRY_SKIPPED") == "1":
    for _tid, (_reason, _conf) in NOT_APPLICABLE.items():
        if _conf is not None:
            EXTRA[_tid] = _conf

# The gateway variables each provider has its own of: with several providers they are set as the
# test OP's (GATEHOUSE_IDP_OP_…).
PROVIDER_VARIABLES = ("RESPONSE_MODE", "CLAIMS_REQUEST", "REQUEST_OBJECT", "REQUEST_OBJECT_ENCRYPTION", "SCOPES", "USERINFO", "AUTH_PARAMS",
                      "LOGIN_PARAMS")

# ---------------------------------------------------------------------------------------------
# Keys: a fresh RSA client signing key for the run (GATEHOUSE_CLIENT_PRIVATE_KEY: private_key_jwt,
# request objects), and per test that asks for one a fresh encryption key
# (GATEHOUSE_CLIENT_ENCRYPTION_KEY), the public halves registered as `jwks`.
# ---------------------------------------------------------------------------------------------
KEY_ID = "gatehouse-conformance"
_TEMP_FILES = []


def _b64(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _int(n, size=None):
    return _b64(n.to_bytes(size or (n.bit_length() + 7) // 8, "big"))


def _thumbprint(jwk):
    """RFC 7638: SHA-256 of the required members, sorted, without whitespace."""
    members = ("crv", "kty", "x", "y") if jwk["kty"] == "EC" else ("e", "kty", "n")
    canonical = json.dumps({k: jwk[k] for k in members}, sort_keys=True, separators=(",", ":"))
    return _b64(hashlib.sha256(canonical.encode()).digest())


def _new_key(kind, use, kid=None):
    """A fresh private key in a PEM file; returns (path, public JWK)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if kind == "EC":
        key = ec.generate_private_key(ec.SECP256R1())
        numbers = key.public_key().public_numbers()
        jwk = {"kty": "EC", "crv": "P-256", "x": _int(numbers.x, 32), "y": _int(numbers.y, 32)}
    else:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        numbers = key.public_key().public_numbers()
        jwk = {"kty": "RSA", "n": _int(numbers.n), "e": _int(numbers.e)}
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    handle, path = tempfile.mkstemp(prefix="gatehouse-client-{}-key-".format(use), suffix=".pem")
    with os.fdopen(handle, "wb") as f:
        f.write(pem)
    _TEMP_FILES.append(path)
    jwk.update({"use": use, "kid": kid or _thumbprint(jwk)})
    if use == "sig":
        jwk["alg"] = "RS256"
    return path, jwk


KEY_PATH, PUBLIC_JWK = _new_key("RSA", "sig", KEY_ID)
os.environ["GATEHOUSE_CLIENT_PRIVATE_KEY"] = KEY_PATH
os.environ["GATEHOUSE_CLIENT_KEY_ID"] = KEY_ID
_ENC_KEYS = {}


def enc_key(test_id):
    """The test's encryption key (path, public JWK), made on first use; None when it has none."""
    kind = EXTRA.get(test_id, {}).get("enc")
    if not kind:
        return None
    if test_id not in _ENC_KEYS:
        _ENC_KEYS[test_id] = _new_key(kind, "enc")
    return _ENC_KEYS[test_id]


@atexit.register
def _remove_keys():
    for path in _TEMP_FILES:
        try:
            os.unlink(path)
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------
# Registration: per test additions; with several providers the gateway's URIs of provider `op`.
# ---------------------------------------------------------------------------------------------
def gateway_path(path):
    """A per-provider gateway path (/callback, /backchannel-logout, /frontchannel-logout)."""
    return PUBLIC + path + ("/op" if MULTI else "")


def registration_additions(test_id, issuer):
    conf = EXTRA.get(test_id, {})
    extra = dict(conf.get("registration", {}))
    keys = []
    if conf.get("sig") or conf.get("spec", {}).get("auth") == "private_key_jwt":
        keys.append(PUBLIC_JWK)
    enc = enc_key(test_id)
    if enc:
        # by value: the test OP refuses a jwks_uri that is not https ("Non-HTTPS endpoint in 'jwks_uri'")
        keys.append(enc[1])
    if keys:
        extra["jwks"] = {"keys": keys}
    mode = conf.get("spec", {}).get("mode")
    if mode == "fc_logout":
        extra["frontchannel_logout_uri"] = gateway_path("/frontchannel-logout")
    if mode == "third_party":
        # The test OP refuses an initiate_login_uri that is not https ("Non-HTTPS endpoint in
        # 'initiate_login_uri'"), and redirects to it as registered, adding nothing (OIDC Core 4 has the
        # third party send iss, REQUIRED): so it is registered as https with iss (and a login_hint and a
        # target_link_uri) in its query, and the browser below reaches it over plain http.
        extra["initiate_login_uri"] = "https://{}:{}/login?{}".format(drive.GH_HOST, drive.GH_PORT, urlencode(
            {"iss": issuer, "login_hint": "diana", "target_link_uri": THIRD_PARTY_TARGET}))
    return extra


_post = drive.requests.post


def _register(url, *args, **kwargs):
    body = kwargs.get("json")
    if isinstance(body, dict) and "redirect_uris" in body and url.endswith("/registration"):
        issuer = url[: -len("/registration")]
        test_id = issuer.rsplit("/", 1)[-1]
        body = dict(body, **registration_additions(test_id, issuer))
        if MULTI:
            body["redirect_uris"] = [gateway_path("/callback")]
            if "backchannel_logout_uri" in body:
                body["backchannel_logout_uri"] = gateway_path("/backchannel-logout")
        kwargs["json"] = body
        drive.log("registration additions", test_id, sorted(k for k in body if k not in (
            "redirect_uris", "post_logout_redirect_uris", "token_endpoint_auth_method", "response_types",
            "grant_types", "application_type", "contacts")))
    return _post(url, *args, **kwargs)


drive.requests.post = _register

# ---------------------------------------------------------------------------------------------
# The gateway: per test environment; with OIDF_RP_MULTI_PROVIDER=1 GATEHOUSE_PROVIDERS=backup,op, the
# test OP the second of two providers (its redirect URI /callback/op, back-channel logout
# /backchannel-logout/op, front-channel logout /frontchannel-logout/op, logins at /login?provider=op
# or /login?iss=), and `backup` a provider that never answers (a closed port), so each test also shows
# that one provider being down stops no other.
# ---------------------------------------------------------------------------------------------
_init = drive.Gatehouse.__init__


def _gatehouse_init(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    conf = EXTRA.get(self.test_id, {})
    self.env.update(conf.get("env", {}))
    enc = enc_key(self.test_id)
    if enc:
        self.env["GATEHOUSE_CLIENT_ENCRYPTION_KEY"] = enc[0]
    if MULTI:
        # the runner's provider variables and this test's become the test OP's; the runner's
        # GATEHOUSE_SCOPES stays every provider's default unless the test sets its own
        moved = ["ISSUER", "CLIENT_ID", "CLIENT_SECRET", "CLIENT_AUTH_METHOD"] + [
            name[len("GATEHOUSE_"):] for name in conf.get("env", {})
            if name[len("GATEHOUSE_"):] in PROVIDER_VARIABLES]
        for name in moved:
            value = self.env.pop("GATEHOUSE_" + name, None)
            if value is not None:
                self.env["GATEHOUSE_IDP_OP_" + name] = value
        self.env.update({"GATEHOUSE_PROVIDERS": "backup,op",
                         "GATEHOUSE_IDP_BACKUP_ISSUER": "http://127.0.0.1:9",
                         "GATEHOUSE_IDP_BACKUP_CLIENT_ID": "never-used"})
        drive.log("multi-provider mode: GATEHOUSE_PROVIDERS=backup,op, the test OP at /login?provider=op")
    if conf.get("env") or enc:
        drive.log("gateway environment", sorted(conf.get("env", {})) + (["GATEHOUSE_CLIENT_ENCRYPTION_KEY"] if enc else []))


drive.Gatehouse.__init__ = _gatehouse_init

if MULTI:
    _browser_get = drive.Browser.get

    def _multi_provider_get(self, url, **kwargs):
        if url == PUBLIC + "/login":
            url += "?provider=op"
        return _browser_get(self, url, **kwargs)

    drive.Browser.get = _multi_provider_get

# The published encryption key (GET /.well-known/jwks.json) must be the registered one: checked right
# after the gateway starts, judged after the test.
_start = drive.Gatehouse.start
_PUBLISHED = {}


def _gatehouse_start(self):
    started = _start(self)
    enc = enc_key(self.test_id)
    if started and enc:
        want = enc[1]
        try:
            r = drive.requests.get(PUBLIC + "/.well-known/jwks.json", timeout=10)
            keys = r.json().get("keys", []) if r.status_code == 200 else []
        except (drive.requests.RequestException, ValueError) as e:
            _PUBLISHED[self.test_id] = "GET /.well-known/jwks.json failed: {}".format(e)
        else:
            match = [k for k in keys if k.get("kid") == want["kid"]]
            if r.status_code != 200:
                _PUBLISHED[self.test_id] = "GET /.well-known/jwks.json -> {}".format(r.status_code)
            elif not match:
                _PUBLISHED[self.test_id] = "/.well-known/jwks.json lacks the encryption key kid {} (has {})".format(
                    want["kid"], [(k.get("kid"), k.get("use")) for k in keys])
            elif match[0].get("use") != "enc" or any(match[0].get(m) != want[m] for m in ("kty", "n", "e", "x", "y", "crv") if m in want):
                _PUBLISHED[self.test_id] = "/.well-known/jwks.json key {} differs from the key: {}".format(
                    want["kid"], drive.short(json.dumps(match[0]), 200))
            else:
                _PUBLISHED[self.test_id] = None
    return started


drive.Gatehouse.start = _gatehouse_start

# ---------------------------------------------------------------------------------------------
# The browser: from a start URL (the gateway's /login, or the test OP's third-party login link),
# following redirects by hand and posting the OP's form_post answers the way a browser's onload
# script does.
# ---------------------------------------------------------------------------------------------
def _form(body):
    """(method, action, fields) of the first form of an HTML page, or None."""
    m = re.search(r"<form([^>]*)>(.*?)(?:</form>|$)", body, re.S | re.I)
    if not m:
        return None
    attrs = m.group(1)
    action = re.search(r'action="([^"]*)"', attrs, re.I)
    method = re.search(r'method="([^"]*)"', attrs, re.I)
    fields = {}
    for tag in re.findall(r"<input[^>]*>", m.group(2), re.I):
        name = re.search(r'name="([^"]*)"', tag, re.I)
        value = re.search(r'value="([^"]*)"', tag, re.I)
        if name:
            fields[html.unescape(name.group(1))] = html.unescape(value.group(1)) if value else ""
    return ((method.group(1).lower() if method else "get"),
            html.unescape(action.group(1)) if action else "", fields)


def browse_login(br, op_base, start):
    """As the shared login(), from `start`; also returns the trail, whether the OP answered with a
    form post, and the first gateway URL reached (`entry`)."""
    trail = []
    url = start
    auth_params = None
    res = {"trail": trail, "form_post": False}
    callback = None
    for _ in range(15):
        https_gateway = "https://{}:{}".format(drive.GH_HOST, drive.GH_PORT)
        if url.startswith(https_gateway):
            url = PUBLIC + url[len(https_gateway):]
            trail.append("(https->http)")
        if url.startswith(PUBLIC) and "entry" not in res:
            res["entry"] = url
        if url.startswith(PUBLIC + "/callback"):
            callback = ("get", url, None)
            break
        r = br.get(url)
        path = urlparse(url).path
        trail.append("{} {}".format(path.rsplit("/", 1)[-1] or "/", r.status_code))
        if url.startswith(op_base) and path.endswith("/authorization") and auth_params is None:
            auth_params = {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}
        loc = r.headers.get("Location")
        if r.status_code in (301, 302, 303, 307) and loc:
            nxt = urljoin(url, loc)
            if url.startswith(PUBLIC) and not nxt.startswith(op_base):
                return dict(res, stage="login", response=r, auth_params=auth_params)
            url = nxt
            continue
        if url.startswith(op_base) and r.status_code == 200:
            form = _form(r.text)
            if form and form[1].startswith(PUBLIC + "/callback"):
                res["form_post"] = True
                callback = (form[0], form[1], form[2])
                break
        stage = "login" if url.startswith(PUBLIC) else "op"
        return dict(res, stage=stage, response=r, auth_params=auth_params)
    else:
        return dict(res, stage="op", response=r, auth_params=auth_params)
    method, url, fields = callback
    if method == "post":
        cb_params = dict(fields)
        r = br.post(url, data=fields)
        trail.append("POST {} {}".format(urlparse(url).path, r.status_code))
    else:
        cb_params = {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}
        r = br.get(url)
        trail.append("GET {} {}".format(urlparse(url).path, r.status_code))
    res.update({"stage": "callback", "response": r, "auth_params": auth_params or {}, "cb_params": cb_params,
                "set_cookie": r.headers.get("Set-Cookie", "")})
    res["user"] = br.get(PUBLIC + "/user", headers={"X-CSRF": "1"})
    return res


def login_url(**params):
    if MULTI:
        params["provider"] = "op"
    return PUBLIC + "/login" + ("?" + urlencode(params) if params else "")


# ---------------------------------------------------------------------------------------------
# The tests the shared modes cannot drive. Each gets (ctx) with test_id, spec, op_base, issuer,
# client, gh (started), and returns or raises drive.Outcome.
# ---------------------------------------------------------------------------------------------
Outcome = drive.Outcome


def _params(res, *names):
    ap = res.get("auth_params") or {}
    return " ".join("{}={}".format(n, ap.get(n, "-")) for n in names)


def run_form_post(ctx):
    br = drive.Browser()
    res = browse_login(br, ctx["op_base"], login_url())
    d = drive.describe_login(res, ctx["gh"])
    ap = res.get("auth_params") or {}
    if ap.get("response_mode") != "form_post":
        raise Outcome("FAIL", "the authorization request lacks response_mode=form_post ({}); {}".format(
            _params(res, "response_mode"), d))
    if not res["form_post"]:
        raise Outcome("FAIL", "the OP did not answer with a form post to the callback; " + d)
    if not drive.session_ok(res):
        raise Outcome("FAIL", "expected a session from the posted code; {} ({})".format(d, " > ".join(res["trail"])))
    return Outcome("PASS", "code posted to the callback: {} [response_mode=form_post]; {}".format(
        " > ".join(res["trail"]), d))


def run_form_post_error(ctx):
    br = drive.Browser()
    res = browse_login(br, ctx["op_base"], login_url(prompt="none", max_age="0"))
    d = drive.describe_login(res, ctx["gh"])
    ap = res.get("auth_params") or {}
    sent = _params(res, "response_mode", "prompt", "max_age")
    if (ap.get("response_mode"), ap.get("prompt"), ap.get("max_age")) != ("form_post", "none", "0"):
        raise Outcome("FAIL", "the authorization request should carry response_mode=form_post, prompt=none, "
                              "max_age=0 (has {}); {}".format(sent, d))
    if res["stage"] != "callback" or not res["form_post"]:
        raise Outcome("FAIL", "the OP did not post an answer to the callback; " + d)
    if res["cb_params"].get("error") != "login_required":
        raise Outcome("ERROR", "the OP posted {} instead of error=login_required".format(sorted(res["cb_params"])))
    cb = res["response"]
    user = res["user"]
    if drive.session_ok(res) or (user is not None and user.status_code == 200):
        raise Outcome("FAIL", "a session after an error answer; " + d)
    loc = cb.headers.get("Location", "")
    if cb.status_code in (302, 303) and "error=login_required" in loc:
        return Outcome("PASS", "error consumed: POST callback -> {} {} (no session, /user {}) [{}]".format(
            cb.status_code, urljoin(PUBLIC, loc).replace(PUBLIC, "") or "/", user.status_code, sent))
    if 400 <= cb.status_code < 500:
        return Outcome("PASS", "error consumed with an error page: {} [{}]".format(d, sent))
    raise Outcome("FAIL", "the posted error was not consumed: callback {} {}; {}".format(
        cb.status_code, loc, d))


def run_fc_logout(ctx):
    """Two sessions (browsers A and B, the same user at the OP); A logs out at the gateway and follows
    the OP's end-session pages; the OP's logout page frames the registered front-channel logout URI
    with iss and the sid of the user's latest session at the OP (B's); the frame is loaded without a
    cookie, as a cross-site frame is; B's session must then be gone."""
    op_base, gh = ctx["op_base"], ctx["gh"]
    a, b = drive.Browser(), drive.Browser()
    for name, br in (("A", a), ("B", b)):
        res = browse_login(br, op_base, login_url())
        if not drive.session_ok(res):
            raise Outcome("ERROR", "login {} failed before logout: {}".format(name, drive.describe_login(res, gh)))
    steps, r, final_url, es_params = drive.follow_logout(a, op_base)
    trail = " > ".join(steps)
    frames = [html.unescape(s) for s in re.findall(r'<iframe[^>]*src="([^"]+)"', r.text or "", re.I)]
    if not frames:
        raise Outcome("FAIL", "the OP's logout page frames nothing: {} {}; {}".format(
            r.status_code, drive.page_text(r.text), trail))
    notes = []
    anonymous = drive.requests.Session()
    for src in frames:
        q = {k: v[0] for k, v in parse_qs(urlparse(src).query).items()}
        if not src.startswith(gateway_path("/frontchannel-logout")):
            raise Outcome("FAIL", "the OP framed {} (not the registered front-channel logout URI)".format(src))
        fr = anonymous.get(src, allow_redirects=False, timeout=20)
        drive.log("GET", src[:200], "->", fr.status_code)
        notes.append("frame {} iss {} sid {} -> {} (CSP {})".format(
            urlparse(src).path, "ok" if q.get("iss") == ctx["issuer"] else q.get("iss"),
            "yes" if q.get("sid") else "no", fr.status_code,
            drive.short(fr.headers.get("Content-Security-Policy", "none"), 80)))
        if fr.status_code != 200:
            raise Outcome("FAIL", "the gateway answered the logout frame {} {}; {}{}".format(
                fr.status_code, drive.page_text(fr.text), "; ".join(notes), _gh_note(gh)))
    ua = a.get(PUBLIC + "/user", headers={"X-CSRF": "1"})
    ub = b.get(PUBLIC + "/user", headers={"X-CSRF": "1"})
    if final_url is None or not final_url.startswith(PUBLIC + "/"):
        raise Outcome("FAIL", "the OP did not send the browser back: {} {}; {}".format(
            r.status_code, drive.page_text(r.text), trail))
    back = a.get(final_url)
    if ua.status_code != 401:
        raise Outcome("FAIL", "A's session survived its logout (/user {}); {}".format(ua.status_code, trail))
    if ub.status_code != 401:
        raise Outcome("FAIL", "B's session survived the front-channel logout (/user {}); {}; {}{}".format(
            ub.status_code, "; ".join(notes), trail, _gh_note(gh)))
    return Outcome("PASS", "the frame ended the other session (B /user 401); {}; {} > back {}{}".format(
        "; ".join(notes), trail, back.status_code, _gh_note(gh)))


def _gh_note(gh):
    msgs = gh.log_messages(r"front.?channel|logout", "info")
    return (" | log: " + drive.short(msgs[-1], 200)) if msgs else ""


def run_third_party(ctx):
    op_base, gh, client = ctx["op_base"], ctx["gh"], ctx["client"]
    start = "{}/rp/{}/{}/{}".format(op_base, drive.OPER_ID, ctx["test_id"], client["client_id"])
    br = drive.Browser()
    res = browse_login(br, op_base, start)
    d = drive.describe_login(res, gh)
    entry = res.get("entry", "")
    via = "OP link > " + " > ".join(res["trail"])
    if not entry.startswith(PUBLIC + "/login?"):
        raise Outcome("FAIL", "the OP's link did not lead to the gateway's /login ({}); {}".format(entry or "-", via))
    q = {k: v[0] for k, v in parse_qs(urlparse(entry).query).items()}
    if q.get("iss") != ctx["issuer"]:
        raise Outcome("ERROR", "the OP sent iss={} (registered {})".format(q.get("iss"), ctx["issuer"]))
    ap = res.get("auth_params") or {}
    if res["stage"] == "login":
        raise Outcome("FAIL", "/login?iss=... did not start a login at the OP: {}; {}".format(d, via))
    if ap.get("client_id") != client["client_id"]:
        raise Outcome("FAIL", "authorization request with client_id {}; {}".format(ap.get("client_id"), via))
    if not drive.session_ok(res):
        raise Outcome("FAIL", "expected a session; {}; {}".format(d, via))
    back = urljoin(PUBLIC, res["response"].headers.get("Location", ""))
    if back != THIRD_PARTY_TARGET:
        raise Outcome("FAIL", "session, but the callback returned to {} instead of target_link_uri {}; {}".format(
            back, THIRD_PARTY_TARGET, via))
    if ap.get("login_hint") != "diana":
        raise Outcome("FAIL", "session, but login_hint was not passed on ({}); {}".format(
            _params(res, "login_hint"), via))
    return Outcome("PASS", "login started by the OP's link: {}; [login_hint=diana passed on, back to "
                           "target_link_uri]; {}".format(via, d))


def _jose_header(token):
    part = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def _start_login(br):
    """GET /login without following: the authorization URL's parameters, or an Outcome."""
    r = br.get(login_url())
    loc = r.headers.get("Location", "")
    if r.status_code != 302 or not loc:
        raise Outcome("FAIL", "/login answered {} {}".format(r.status_code, drive.page_text(r.text)))
    return loc, {k: v[0] for k, v in parse_qs(urlparse(loc).query).items()}


def _object_problem(token, want):
    """Why the request object `token` is not what `want` (signed | encrypted) says, or None."""
    parts = token.split(".")
    try:
        header = _jose_header(token)
    except ValueError:
        return "its header is not JSON"
    if want == "encrypted":
        if len(parts) != 5 or header.get("cty") != "JWT" or header.get("alg") in (None, "RSA1_5"):
            return "not a JWE with a signed JWT inside: header {}".format(header)
    elif len(parts) != 3 or header.get("alg") != "RS256" or header.get("typ") != "oauth-authz-req+jwt":
        return "not a JWS (RS256, typ oauth-authz-req+jwt): header {}".format(header)
    return None


def run_request_object(ctx):
    """By reference: the browser's URL carries request_uri (a gateway URL) and no state, nonce or
    code_challenge, so the OP can only have them from the object it fetched; the object served there
    is signed (or encrypted to the OP); after the login it is gone."""
    op_base, gh = ctx["op_base"], ctx["gh"]
    br = drive.Browser()
    auth_url, ap = _start_login(br)
    uri = ap.get("request_uri", "")
    if not uri.startswith(PUBLIC + "/request-object/") or "request" in ap:
        raise Outcome("FAIL", "the authorization URL carries no gateway request_uri (parameters {})".format(sorted(ap)))
    leaked = sorted({"state", "nonce", "code_challenge"} & set(ap))
    if leaked:
        raise Outcome("FAIL", "the authorization URL repeats {} beside request_uri".format(leaked))
    fetched = drive.requests.get(uri, timeout=10)
    if fetched.status_code != 200 or fetched.headers.get("Content-Type") != "application/oauth-authz-req+jwt":
        raise Outcome("FAIL", "GET request_uri -> {} {}".format(fetched.status_code, fetched.headers.get("Content-Type")))
    problem = _object_problem(fetched.text, ctx["spec"]["object"])
    if problem:
        raise Outcome("FAIL", "the object at request_uri is " + problem)
    header = _jose_header(fetched.text)
    res = browse_login(br, op_base, auth_url)
    d = drive.describe_login(res, gh)
    if not drive.session_ok(res):
        raise Outcome("FAIL", "expected a session; {} ({})".format(d, " > ".join(res["trail"])))
    after = drive.requests.get(uri, timeout=10).status_code
    if after != 404:
        raise Outcome("FAIL", "the request object outlived its login (GET request_uri -> {})".format(after))
    return Outcome("PASS", "request_uri {}/request-object/... fetched by the OP ({} {}{}); object gone after the "
                           "login (404); {}".format(PUBLIC, header.get("alg"), header.get("enc", ""),
                                                     " kid " + header["kid"][:12] if "kid" in header else "", d))


def run_enc_rotation(ctx):
    """Two logins; the OP rotates its encryption keys after each authorization request, so each
    request object must be encrypted to a key the OP published after the previous one."""
    op_base, gh = ctx["op_base"], ctx["gh"]
    kids = []
    for i in (1, 2):
        br = drive.Browser()
        auth_url, ap = _start_login(br)
        problem = _object_problem(ap.get("request", ""), "encrypted")
        if problem:
            raise Outcome("FAIL", "login {}: the request parameter is {}".format(i, problem))
        kids.append(_jose_header(ap["request"]).get("kid"))
        res = browse_login(br, op_base, auth_url)
        if not drive.session_ok(res):
            raise Outcome("FAIL", "login {} (encrypted to kid {}): {}".format(i, kids[-1], drive.describe_login(res, gh)))
    if kids[0] == kids[1]:
        raise Outcome("FAIL", "both request objects were encrypted to kid {}: the OP's rotation was not followed".format(kids[0]))
    return Outcome("PASS", "two logins, the request objects encrypted to kid {} then to the rotated {}".format(
        (kids[0] or "-")[:24], (kids[1] or "-")[:24]))


MODES = {
    "request_object": run_request_object,
    "enc_rotation": run_enc_rotation,
    "form_post": run_form_post,
    "form_post_error": run_form_post_error,
    "fc_logout": run_fc_logout,
    "third_party": run_third_party,
}

_shared_run_test = drive.run_test


def _run_own_mode(test_id, binary, op_base, flows_dir, workdir):
    """Discovery, registration and start as the shared run_test does them, then the mode's driver."""
    spec = drive.TESTS[test_id]
    with open(os.path.join(flows_dir, test_id + ".json")) as f:
        flow = json.load(f)
    issuer = "{}/{}/{}".format(op_base, drive.OPER_ID, test_id)
    disc = drive.requests.get(issuer + "/.well-known/openid-configuration", timeout=20)
    if disc.status_code != 200:
        raise Outcome("ERROR", "discovery {} at the OP".format(disc.status_code))
    pc = disc.json()
    auth = spec.get("auth", "client_secret_basic")
    reg = {
        "redirect_uris": [PUBLIC + "/callback"],
        "post_logout_redirect_uris": [PUBLIC + "/"],
        "token_endpoint_auth_method": auth,
        "response_types": ["code"],
        "grant_types": ["authorization_code", "refresh_token"],
        "application_type": "web",
        "contacts": ["gatehouse-oidf-rp@example.org"],
    }
    algs = flow.get("capabilities", {}).get("id_token_signing_alg_values_supported")
    if algs:
        reg["id_token_signed_response_alg"] = algs[0]
    rr = drive.requests.post(pc["registration_endpoint"], json=reg, timeout=20)
    if rr.status_code not in (200, 201):
        raise Outcome("ERROR", "registration {} {}".format(rr.status_code, drive.short(rr.text)))
    client = rr.json()
    gh = drive.Gatehouse(binary, workdir, test_id, issuer, client, auth)
    try:
        if not gh.start():
            raise Outcome("ERROR", "gatehouse did not start: " + drive.short(" ".join(gh.log_messages()[-2:]), 300))
        ctx = {"test_id": test_id, "spec": spec, "op_base": op_base, "issuer": issuer, "client": client, "gh": gh}
        return MODES[spec["mode"]](ctx)
    finally:
        gh.stop()


def run_test(test_id, binary, op_base, flows_dir, workdir):
    spec = drive.TESTS[test_id]
    if spec["mode"] in MODES:
        outcome = _run_own_mode(test_id, binary, op_base, flows_dir, workdir)
    else:
        outcome = _shared_run_test(test_id, binary, op_base, flows_dir, workdir)
    if outcome.verdict != "PASS":
        return outcome
    if spec.get("userinfo") is False and drive.userinfo_called(test_id):
        raise Outcome("FAIL", "UserInfo was called (the claim must come from the ID token); " + outcome.detail)
    problem = _PUBLISHED.get(test_id)
    if problem:
        raise Outcome("FAIL", "login ok, but " + problem)
    if test_id in _PUBLISHED:
        outcome.detail += " [enc key {} published]".format(enc_key(test_id)[1]["kid"][:10])
    return outcome


drive.run_test = run_test

for test_id, conf in EXTRA.items():
    drive.SKIP.pop(test_id, None)
    drive.TESTS[test_id] = conf["spec"]
    if test_id not in drive.DEFAULT_TESTS:
        drive.DEFAULT_TESTS.append(test_id)
for test_id, (reason, _conf) in NOT_APPLICABLE.items():
    if test_id not in EXTRA:
        drive.SKIP[test_id] = reason

if __name__ == "__main__":
    sys.exit(drive.main())
