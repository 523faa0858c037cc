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
    "rp-token_endpoint-private_key_jwt": {"mode": "accept", "auth": "private_key_jwt"},
    # signed UserInfo: the client registers userinfo_signed_response_alg (below); a UserInfo call is
    # required for the PASS
    "rp-userinfo-sig": {"mode": "accept", "userinfo": True},
}
# Registration additions per test id (the registration URL names the test).
REGISTRATION = {
    "rp-userinfo-sig": {"userinfo_signed_response_alg": "RS256"},
}

# private_key_jwt: a fresh RSA key for this run. Gatehouse gets it through GATEHOUSE_CLIENT_PRIVATE_KEY
# (the runner passes its own environment on); the OP gets the public half in the registration.
KEY_ID = "gatehouse-conformance"


def _client_key():
    import base64
    import tempfile

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    handle, path = tempfile.mkstemp(prefix="gatehouse-client-key-", suffix=".pem")
    with os.fdopen(handle, "wb") as f:
        f.write(pem)
    numbers = key.public_key().public_numbers()

    def b64(n):
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    jwk = {"kty": "RSA", "kid": KEY_ID, "use": "sig", "alg": "RS256", "n": b64(numbers.n), "e": b64(numbers.e)}
    return path, jwk


KEY_PATH, PUBLIC_JWK = _client_key()
os.environ["GATEHOUSE_CLIENT_PRIVATE_KEY"] = KEY_PATH
os.environ["GATEHOUSE_CLIENT_KEY_ID"] = KEY_ID
_post = drive.requests.post


def _register(url, *args, **kwargs):
    body = kwargs.get("json")
    if isinstance(body, dict) and body.get("token_endpoint_auth_method") == "private_key_jwt":
        body = dict(body, jwks={"keys": [PUBLIC_JWK]})
        kwargs["json"] = body
    if isinstance(body, dict) and "redirect_uris" in body:
        for test_id, extra in REGISTRATION.items():
            if "/{}/registration".format(test_id) in url:
                kwargs["json"] = dict(body, **extra)
    return _post(url, *args, **kwargs)


drive.requests.post = _register

# OIDF_RP_MULTI_PROVIDER=1: the gateway runs with GATEHOUSE_PROVIDERS=backup,op, the test OP as the
# second of two providers (its redirect URI /callback/op, back-channel logout /backchannel-logout/op,
# logins at /login?provider=op), and `backup` a provider that never answers (a closed port), so each
# test also shows that one provider being down stops no other.
if os.environ.get("OIDF_RP_MULTI_PROVIDER") == "1":
    _init = drive.Gatehouse.__init__

    def _multi_provider_init(self, *args, **kwargs):
        _init(self, *args, **kwargs)
        for name in ("ISSUER", "CLIENT_ID", "CLIENT_SECRET", "CLIENT_AUTH_METHOD"):
            value = self.env.pop("GATEHOUSE_" + name, None)
            if value is not None:
                self.env["GATEHOUSE_IDP_OP_" + name] = value
        self.env.update({"GATEHOUSE_PROVIDERS": "backup,op",
                         "GATEHOUSE_IDP_BACKUP_ISSUER": "http://127.0.0.1:9",
                         "GATEHOUSE_IDP_BACKUP_CLIENT_ID": "never-used"})
        drive.log("multi-provider mode: GATEHOUSE_PROVIDERS=backup,op, the test OP at /login?provider=op")

    drive.Gatehouse.__init__ = _multi_provider_init
    _browser_get = drive.Browser.get

    def _multi_provider_get(self, url, **kwargs):
        if url == drive.PUBLIC + "/login":
            url += "?provider=op"
        return _browser_get(self, url, **kwargs)

    drive.Browser.get = _multi_provider_get
    _single_register = drive.requests.post

    def _multi_provider_register(url, *args, **kwargs):
        body = kwargs.get("json")
        if isinstance(body, dict) and "redirect_uris" in body:
            body = dict(body, redirect_uris=[drive.PUBLIC + "/callback/op"])
            if "backchannel_logout_uri" in body:
                body["backchannel_logout_uri"] = drive.PUBLIC + "/backchannel-logout/op"
            kwargs["json"] = body
        return _single_register(url, *args, **kwargs)

    drive.requests.post = _multi_provider_register

for test_id, spec in EXTRA.items():
    drive.SKIP.pop(test_id, None)
    drive.TESTS[test_id] = spec
    if test_id not in drive.DEFAULT_TESTS:
        drive.DEFAULT_TESTS.append(test_id)

if __name__ == "__main__":
    try:
        status = drive.main()
    finally:
        os.unlink(KEY_PATH)
    sys.exit(status)
