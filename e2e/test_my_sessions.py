"""My sessions and sign-out everywhere (SPEC "Sessions the SPA controls", issue 36 item 4):
`GET /sessions` lists the signed-in user's sessions under random public handles (never the cookie
or its hash), `POST /sessions/revoke {"handle":…}` ends one (another user's handle is 404),
`POST /logout?everywhere=true` ends all of them and revokes each refresh token."""

from __future__ import annotations

import hashlib

import requests

from harness import login


def sign_in(gw, provider, user, agent):
    sess = requests.Session()
    sess.headers["User-Agent"] = agent
    return login(gw, provider, user, sess=sess)


def listing(gw, sess):
    r = gw.get(sess, "/sessions")
    assert r.status_code == 200, r.text
    assert r.headers["Cache-Control"] == "no-store"
    return r.json()["sessions"]


def test_list_and_revoke_my_sessions(gateway_factory, provider, upstream):
    gw = gateway_factory({})
    laptop = sign_in(gw, provider, "alice", "Laptop/1.0 (X11)")
    phone = sign_in(gw, provider, "alice", "Phone/2.0 (Android)")
    bob = sign_in(gw, provider, "bob", "Bob/1.0")
    # Oldest first; two made in the same second in either order.
    mine = sorted(listing(gw, laptop), key=lambda s: s["userAgent"])
    assert [s["userAgent"] for s in mine] == ["Laptop/1.0 (X11)", "Phone/2.0 (Android)"]
    assert [s["current"] for s in mine] == [True, False]
    assert {s["userAgent"]: s["current"] for s in listing(gw, phone)} == {"Laptop/1.0 (X11)": False,
                                                                          "Phone/2.0 (Android)": True}
    for s in mine:
        assert set(s) == {"handle", "createdAt", "lastSeenAt", "userAgent", "current"}
        assert s["createdAt"] <= s["lastSeenAt"]
    # A handle is no secret of the session: neither the cookie nor its hash.
    cookies = [laptop.cookies.get(gw.cookie_name), phone.cookies.get(gw.cookie_name)]
    for s in mine:
        for cookie in cookies:
            assert s["handle"] != cookie and s["handle"] not in hashlib.sha256(cookie.encode()).hexdigest()
            assert cookie not in str(mine)
    assert len(listing(gw, bob)) == 1
    # Needs the CSRF header and a session.
    assert gw.get(laptop, "/sessions", csrf=False).status_code == 401
    assert gw.get(requests.Session(), "/sessions").status_code == 401
    assert gw.post(laptop, "/sessions").status_code == 405
    # Bob cannot end Alice's phone: 404, as for a handle that never was.
    phone_handle = mine[1]["handle"]
    r = gw.post(bob, "/sessions/revoke", json={"handle": phone_handle})
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    assert gw.get(phone, "/api/hello").status_code == 200
    for bad in (b"", b"{", b'{"handle":5}', b'{"handle":"a b"}', b"[]"):
        r = gw.post(laptop, "/sessions/revoke", data=bad, headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["error"] == "invalid_request", bad
    assert gw.post(laptop, "/sessions/revoke", json={"handle": phone_handle}, csrf=False).status_code == 401
    # Alice's laptop ends her phone: the phone is signed out at once, the laptop stays.
    r = gw.post(laptop, "/sessions/revoke", json={"handle": phone_handle})
    assert r.status_code == 200 and r.json() == {"revoked": True, "current": False}, r.text
    assert gw.get(phone, "/api/hello").status_code == 401
    assert gw.get(laptop, "/api/hello").status_code == 200
    assert [s["handle"] for s in listing(gw, laptop)] == [mine[0]["handle"]]
    # Ending the current session expires its cookie.
    r = gw.post(laptop, "/sessions/revoke", json={"handle": mine[0]["handle"]})
    assert r.status_code == 200 and r.json()["current"] is True
    assert any(h.startswith(gw.cookie_name + "=") and "Max-Age=0" in h for h in r.raw.headers.getlist("Set-Cookie"))
    assert gw.get(laptop, "/sessions").status_code == 401
    assert gw.get(bob, "/api/hello").status_code == 200


def test_logout_everywhere(gateway_factory, provider, upstream):
    gw = gateway_factory({})
    browsers = [sign_in(gw, provider, "alice", f"Browser/{n}") for n in range(3)]
    bob = sign_in(gw, provider, "bob", "Bob/1.0")
    revocations_before = len(provider.stats()["revocations"])
    r = gw.post(browsers[0], "/logout?everywhere=true", allow_redirects=False)
    assert r.status_code == 302, r.text
    for sess in browsers:
        assert gw.get(sess, "/api/hello").status_code == 401
        assert gw.get(sess, "/user").status_code == 401
    assert gw.get(bob, "/api/hello").status_code == 200
    assert len(listing(gw, bob)) == 1
    # Every ended session's refresh token is revoked at the provider, not only the current one's.
    assert len(provider.stats()["revocations"]) - revocations_before >= 3
    # A plain logout still ends only its own session.
    two = [sign_in(gw, provider, "carol", f"C/{n}") for n in range(2)]
    assert gw.post(two[0], "/logout", allow_redirects=False).status_code == 302
    assert gw.get(two[0], "/api/hello").status_code == 401
    assert gw.get(two[1], "/api/hello").status_code == 200
