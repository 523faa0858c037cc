"""A real browser (headless Chromium) through the demo SPA in Public/.

The demo SPA's contract with this test: a `#signin` control that starts the login,
`body[data-state]` = `signed-in` / `signed-out`, the ID-token claims in `#claims`,
a `#call-api` button that calls `/api/hello` (with `X-CSRF: 1`) and shows the status
and body in `#api-result`, and a `#signout` control.

Opened signed out, the SPA tries a silent sign-in once per tab (`/login?prompt=none`, the mark in
sessionStorage `gatehouse.silentSignIn`, cleared once signed in, set to `signed-out` by the sign-out
buttons); back with `#error=<code>` it removes the fragment and shows `#silent-result`. Signed in,
`#sessions` lists `GET /sessions` in `#session-list` (`li[data-handle][data-current]`, a
`button[data-revoke]` on every other session, `#sessions-refresh`, `#sessions-status`), and
`#signout-everywhere` posts `/logout?everywhere=true`.

Which provider shows what of the silent sign-in:
* the suite's provider (oidc-provider-mock, provider_server.py) keeps no session of its own: it
  answers every `prompt=none` with `login_required`;
* `gatehouse demo`'s development providers do the same, by design;
* idpyoidc's OP (idpyoidc_provider.py) signs its test user in without a page on every request, as a
  provider with a live session does: `prompt=none` succeeds (with scopes without `offline_access`,
  which idpyoidc grants only with `prompt=consent`)."""

from __future__ import annotations

import json
import sys
import time
from urllib.parse import parse_qs

import pytest
import requests

import browser
from harness import ARTIFACTS, E2E_DIR, Proc, free_port, login

pytestmark = pytest.mark.browser


def sign_in(d, gateway, provider, username="alice", timeout=20):
    import browser
    browser.sign_in(d, gateway, provider, username, timeout)


@pytest.fixture
def driver():
    from browser import make_driver
    d = make_driver()
    d.console = []  # what script_errors() has read of the console already
    yield d
    try:
        logs = d.console + d.get_log("browser")
        (ARTIFACTS / "browser-console.log").write_text(
            "\n".join(json.dumps(x) for x in logs))
    except Exception:
        pass
    d.quit()


def test_sign_in_call_api_sign_out(gateway, provider, driver):
    from browser import By, EC, WebDriverWait
    wait = WebDriverWait(driver, 20)
    d = driver
    # the provider's own login page, then back on the SPA, signed in
    sign_in(d, gateway, provider)
    wait.until(lambda d: "alice" in d.find_element(By.CSS_SELECTOR, "#claims").text)

    d.find_element(By.CSS_SELECTOR, "#call-api").click()
    wait.until(lambda d: "world" in d.find_element(By.CSS_SELECTOR, "#api-result").text)
    result = d.find_element(By.CSS_SELECTOR, "#api-result").text
    assert "200" in result and "hello" in result

    # the session cookie is HttpOnly: invisible to scripts
    assert "gatehouse=" not in d.execute_script("return document.cookie")
    names = [c["name"] for c in d.get_cookies()]
    assert "gatehouse" in names
    assert next(c for c in d.get_cookies() if c["name"] == "gatehouse")["httpOnly"] is True
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    d.save_screenshot(str(ARTIFACTS / "signed-in.png"))

    # sign out; the provider may show its end-session confirmation page
    d.find_element(By.CSS_SELECTOR, "#signout").click()

    def settled(d):
        if d.current_url.startswith(provider.issuer + "/oauth2/end_session"):
            return "provider"
        if d.current_url.startswith(gateway.url):
            try:
                return d.find_element(By.CSS_SELECTOR, "body").get_attribute("data-state") == \
                    "signed-out" and "app"
            except Exception:
                return False
        return False

    where = wait.until(settled)
    if where == "provider":
        d.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
        wait.until(lambda d: d.current_url.startswith(gateway.url))
    d.get(gateway.url + "/")
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "body[data-state=signed-out]")))
    status = d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/api/hello', {headers: {'X-CSRF': '1'}}).then(r => done(r.status))"
        ".catch(e => done('error ' + e));")
    assert status == 401
    d.save_screenshot(str(ARTIFACTS / "signed-out.png"))


def test_demo_two_providers_buttons_provider_and_picture(driver, tmp_path):
    # Issue "several providers", the demo: `gatehouse demo` runs two development providers; the
    # demo SPA draws one button per provider from GET /providers, and once signed in shows which
    # provider the user came from and the provider's profile picture. Each button is clicked.
    import re
    import time

    import requests

    from browser import By, EC, WebDriverWait
    from harness import REPO, Proc, free_port, gatehouse_bin

    port, first, second, api = free_port(), free_port(), free_port(), free_port()
    demo = Proc("gatehouse-demo-browser", [str(gatehouse_bin()), "demo", "--port", str(port),
                                           "--provider-port", str(first), "--second-provider-port", str(second),
                                           "--api-port", str(api)],
                cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                   "GATEHOUSE_PUBLIC_DIR": str(REPO / "Public")}).start()
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while "is running" not in demo.log_text():
            assert demo.alive() and time.time() < deadline, demo.log_text()[-2000:]
            time.sleep(0.2)
        listed = requests.get(base + "/providers", timeout=10).json()["providers"]
        assert [p["name"] for p in listed] == ["dev", "partner"]
        wait = WebDriverWait(driver, 20)
        for entry, issuer_port in zip(listed, (first, second)):
            driver.get(base + "/")
            wait.until(settled)
            driver.delete_all_cookies()  # 127.0.0.1: the gateway's and both providers' cookies
            driver.execute_script("window.sessionStorage.clear()")  # the silent sign-in is tried again
            driver.get(base + "/")
            # Signed out, the page tries a silent sign-in at the first provider (`dev`): the development
            # providers always answer login_required, and the page comes back with its buttons.
            note = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, "#silent-result")))
            assert note.text == "Not signed in at the provider."
            assert driver.current_url == base + "/"  # the #error=login_required fragment removed
            buttons = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#signin-providers button[data-provider]"))
            assert [b.get_attribute("data-provider") for b in buttons] == ["dev", "partner"]
            assert [b.text for b in buttons] == [f"Continue with {p['displayName']}" for p in listed]
            assert not driver.find_element(By.CSS_SELECTOR, "#signin").is_displayed()
            driver.find_element(By.CSS_SELECTOR, f"button[data-provider='{entry['name']}']").click()
            wait.until(lambda d: d.current_url.startswith(f"http://127.0.0.1:{issuer_port}/authorize"))
            box = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "input[name=username]")))
            box.send_keys("ada-" + entry["name"])
            driver.find_element(By.CSS_SELECTOR, "#submit").click()
            wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "body[data-state=signed-in]")))
            assert driver.find_element(By.CSS_SELECTOR, "#user-name").text == "ada-" + entry["name"]
            shown = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#user-provider"))
            assert shown.is_displayed() and entry["displayName"] in shown.text
            picture = driver.find_element(By.CSS_SELECTOR, "#user-picture")
            assert picture.is_displayed() and re.match(r"data:image/svg\+xml;base64,", picture.get_attribute("src"))
            # The picture really rendered (the CSP allows it): the image has its pixels.
            assert driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", picture)
            driver.save_screenshot(str(ARTIFACTS / f"demo-signed-in-{entry['name']}.png"))
    finally:
        assert demo.stop(30) == 0


# ---------------------------------------------------------------------------
# Silent sign-in, "Your sessions", sign out everywhere
# ---------------------------------------------------------------------------


def state(d):
    from browser import By
    try:
        return d.find_element(By.CSS_SELECTOR, "body").get_attribute("data-state")
    except Exception:  # between two documents
        return None


def settled(d):
    """The SPA has shown its answer: `signed-in` or `signed-out` (not checking, not on its way)."""
    now = state(d)
    return now if now in ("signed-in", "signed-out") else False


def silent_mark(d):
    return d.execute_script("return window.sessionStorage.getItem('gatehouse.silentSignIn')")


def script_errors(d):
    """Console messages of script errors and CSP violations so far (the page has no inline script)."""
    logs = d.get_log("browser")
    d.console.extend(logs)
    return [x["message"] for x in logs if x.get("source") != "network"
            and ("Uncaught" in x["message"] or "Content Security Policy" in x["message"]
                 or x.get("source") == "javascript")]


def fetch_status(d, path, method="GET"):
    """The status of a same-origin fetch from the page (0: an opaque redirect)."""
    return d.execute_async_script(
        "const [path, method, done] = arguments;"
        "fetch(path, {method, headers: {'X-CSRF': '1'}, redirect: 'manual', cache: 'no-store'})"
        ".then(r => done(r.status)).catch(e => done('error ' + e));", path, method)


def submit_provider_form(d, provider, username, timeout=20):
    """On the suite provider's login page: sign in as `username`."""
    from browser import By, EC, WebDriverWait
    wait = WebDriverWait(d, timeout)
    wait.until(lambda d: d.current_url.startswith(provider.issuer + "/oauth2/authorize"))
    box = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "input[name=sub]")))
    box.send_keys(username)
    box.find_element(By.XPATH, "./ancestor::form//button[@type='submit']").click()


def test_silent_sign_in_without_provider_session(gateway, provider, driver):
    """The suite's provider keeps no session: the silent attempt on load comes back with
    #error=login_required, which the page turns into a note beside the sign-in button. It is tried
    once per signed-out spell of the tab, never in a loop."""
    from browser import By, EC, WebDriverWait
    wait = WebDriverWait(driver, 20)
    d = driver

    def silent_requests():
        return [a for a in provider.stats()["authorize_requests"] if a.get("prompt") == "none"]

    before = len(silent_requests())
    d.get(gateway.url + "/")
    note = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, "#silent-result")))
    assert note.text == "Not signed in at the provider."
    assert note.get_attribute("data-error") == "login_required"
    assert state(d) == "signed-out"
    assert d.find_element(By.CSS_SELECTOR, "#signin").is_displayed()
    assert d.current_url == gateway.url + "/"  # no #error left in the address bar
    tried = silent_requests()
    assert len(tried) == before + 1, tried
    assert tried[-1]["client_id"] == provider.client_id
    assert tried[-1]["redirect_uri"] == gateway.public_url + "/callback"
    assert silent_mark(d) == "tried"
    d.save_screenshot(str(ARTIFACTS / "silent-sign-in-failed.png"))

    # Reloading does not ask the provider again: the sign-in button at once, no note.
    d.refresh()
    wait.until(lambda d: settled(d) == "signed-out")
    assert not d.find_element(By.CSS_SELECTOR, "#silent-result").is_displayed()
    assert len(silent_requests()) == before + 1

    # An interactive sign-in clears the mark...
    browser.click_when_ready(d, "#signin")
    submit_provider_form(d, provider, "alice")
    wait.until(lambda d: settled(d) == "signed-in")
    assert silent_mark(d) is None
    # ...so once the gateway's session ends (not through the sign-out button), the next load tries
    # again; this provider still has no session to offer.
    assert fetch_status(d, "/logout", "POST") == 0  # 302, stopped by redirect: 'manual'
    d.refresh()
    note = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, "#silent-result")))
    assert note.text == "Not signed in at the provider." and state(d) == "signed-out"
    assert len(silent_requests()) == before + 2
    assert d.current_url == gateway.url + "/"
    assert script_errors(d) == []


class IdpyoidcOP:
    """idpyoidc's OP (e2e/idpyoidc_provider.py) for one gateway: it signs its user `alice` in
    without a page on every authorization request, `prompt=none` included."""

    CLIENT_ID, CLIENT_SECRET = "gatehouse-browser", "s3cret-browser-test"

    def __init__(self, work, gateway_url):
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        work.mkdir(parents=True, exist_ok=True)
        self.proc = Proc("idpyoidc-browser", [
            sys.executable, str(E2E_DIR / "idpyoidc_provider.py"), "--port", str(self.port),
            "--client-id", self.CLIENT_ID, "--client-secret", self.CLIENT_SECRET,
            "--redirect-uri", gateway_url + "/callback", "--post-logout-redirect-uri", gateway_url + "/",
            "--verbose",  # werkzeug's request log: what each authorization request asked for
        ], cwd=work).start()
        deadline = time.time() + 30
        while True:
            try:
                if requests.get(self.issuer + "/.well-known/openid-configuration", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            assert self.proc.alive() and time.time() < deadline, self.proc.log_text()[-2000:]
            time.sleep(0.1)

    def stats(self) -> dict:
        return requests.get(self.issuer + "/_stats", timeout=5).json()

    def authorization_prompts(self) -> list[str]:
        """The `prompt` of each authorization request so far ("" without one), from the request log."""
        # werkzeug INFO ... "GET /authorization?response_type=code&...&prompt=none HTTP/1.1" 302 -
        # (the method may come after a terminal colour code)
        targets = [line.split("GET /authorization?", 1)[1].split(" ", 1)[0]
                   for line in self.proc.log_text().splitlines() if " werkzeug " in line and "GET /authorization?" in line]
        return [parse_qs(query).get("prompt", [""])[0] for query in targets]

    def stop(self):
        self.proc.stop()


def test_silent_sign_in_with_provider_session(gateway_factory, driver, tmp_path):
    """A provider that still has the user signed in (idpyoidc's OP): opening the page signs in
    without any page; after the gateway's session alone ends, the next load signs in silently
    again; after the sign-out button (which ends the provider's session too, and marks the tab),
    the page stays signed out until the user signs in."""
    from browser import By, WebDriverWait
    wait = WebDriverWait(driver, 20)
    d = driver
    # idpyoidc grants offline_access only with prompt=consent, which a silent sign-in cannot carry:
    # these sessions have no refresh token (they end with the access token, 300 s here).
    gw = gateway_factory({"GATEHOUSE_SCOPES": "openid profile email",
                          "GATEHOUSE_CLIENT_ID": IdpyoidcOP.CLIENT_ID,
                          "GATEHOUSE_CLIENT_SECRET": IdpyoidcOP.CLIENT_SECRET},
                         register=False, start=False)
    op = IdpyoidcOP(tmp_path / "idpyoidc", gw.public_url)
    try:
        gw.env["GATEHOUSE_ISSUER"] = op.issuer
        gw.start()

        d.get(gw.url + "/")
        wait.until(lambda d: settled(d) == "signed-in")
        assert d.find_element(By.CSS_SELECTOR, "#user-sub").text == "alice"
        assert d.current_url == gw.url + "/"
        assert op.stats()["authorization"] == 1
        assert silent_mark(d) is None
        assert not d.find_element(By.CSS_SELECTOR, "#silent-result").is_displayed()
        # Signed in by the silent request: the one authorization request carried prompt=none.
        assert op.authorization_prompts() == ["none"]
        d.save_screenshot(str(ARTIFACTS / "silent-sign-in-succeeded.png"))

        # The gateway's session ends, the provider's does not: the next load signs in silently.
        first_cookie = d.get_cookie(gw.cookie_name)["value"]
        assert fetch_status(d, "/logout", "POST") == 0
        assert fetch_status(d, "/user") == 401
        d.refresh()
        wait.until(lambda d: settled(d) == "signed-in")
        assert op.stats()["authorization"] == 2 and op.authorization_prompts() == ["none", "none"]
        assert d.get_cookie(gw.cookie_name)["value"] != first_cookie  # a new session

        # The sign-out button: the provider's end-session endpoint and back here, signed out, and the
        # page does not sign straight back in (this provider would, silently).
        d.find_element(By.CSS_SELECTOR, "#signout").click()
        wait.until(lambda d: d.current_url.startswith(gw.url + "/") and settled(d) == "signed-out")
        assert op.stats()["end_session"] == 1
        assert silent_mark(d) == "signed-out"
        d.refresh()
        wait.until(lambda d: settled(d) == "signed-out")
        time.sleep(1)
        assert state(d) == "signed-out" and op.stats()["authorization"] == 2
        assert not d.find_element(By.CSS_SELECTOR, "#silent-result").is_displayed()

        # Signing in is the button's job now.
        browser.click_when_ready(d, "#signin")
        wait.until(lambda d: settled(d) == "signed-in")
        assert op.stats()["authorization"] == 3 and silent_mark(d) is None
        assert op.authorization_prompts() == ["none", "none", ""]
        assert script_errors(d) == []
    finally:
        op.stop()


def test_sessions_panel_revoke_and_sign_out_everywhere(gateway_factory, provider, driver):
    """"Your sessions" lists every browser signed in as the user, this one marked; signing another
    out from the list ends it at once; "Sign out everywhere" ends them all."""
    from selenium.common.exceptions import StaleElementReferenceException

    from browser import By, EC, WebDriverWait
    # The list is redrawn (replaceChildren) on every load: a row read during one is stale, try again.
    wait = WebDriverWait(driver, 20, ignored_exceptions=[StaleElementReferenceException])
    d = driver
    gw = gateway_factory({})

    def rows():
        return d.find_elements(By.CSS_SELECTOR, "#session-list li[data-handle]")

    def other_browser(user, agent):
        sess = requests.Session()
        sess.headers["User-Agent"] = agent
        return login(gw, provider, user, sess=sess)

    sign_in(d, gw, provider, "alice")
    wait.until(lambda d: len(rows()) == 1)
    assert rows()[0].get_attribute("data-current") == "true"
    assert "Only this browser" in d.find_element(By.CSS_SELECTOR, "#sessions-status").text

    phone = other_browser("alice", "Phone/2.0 (Android)")
    bob = other_browser("bob", "Bob/1.0")
    d.find_element(By.CSS_SELECTOR, "#sessions-refresh").click()
    wait.until(lambda d: len(rows()) == 2)
    current = d.find_elements(By.CSS_SELECTOR, "#session-list li[data-current=true]")
    assert len(current) == 1 and current[0] == rows()[0]  # this browser first
    assert "this browser" in current[0].text and "Headless Chrome on Linux" in current[0].text
    assert current[0].find_elements(By.CSS_SELECTOR, "button[data-revoke]") == []
    other = d.find_element(By.CSS_SELECTOR, "#session-list li[data-current=false]")
    assert "Phone/2.0 on Android" in other.text and "Phone/2.0 (Android)" in other.text
    assert "this browser" not in other.text
    assert len(other.find_elements(By.CSS_SELECTOR, "time")) == 2
    # The handles are the gateway's: what the phone itself is listed as.
    listed = {s["handle"]: s for s in gw.get(phone, "/sessions").json()["sessions"]}
    assert listed[other.get_attribute("data-handle")]["current"] is True
    assert listed[current[0].get_attribute("data-handle")]["current"] is False
    panel = d.find_element(By.CSS_SELECTOR, "#sessions")
    d.execute_script("arguments[0].scrollIntoView()", panel)
    panel.screenshot(str(ARTIFACTS / "sessions-panel.png"))

    # Sign the phone out from here: it is signed out at once, this browser and Bob are not.
    other.find_element(By.CSS_SELECTOR, "button[data-revoke]").click()
    wait.until(lambda d: len(rows()) == 1 and rows()[0].get_attribute("data-current") == "true")
    wait.until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#sessions-status"), "Signed out that session."))
    assert gw.get(phone, "/user").status_code == 401
    assert gw.get(phone, "/api/hello").status_code == 401
    assert fetch_status(d, "/user") == 200
    assert gw.get(bob, "/user").status_code == 200

    # Sign out everywhere: two more browsers of Alice's, then the button.
    laptop = other_browser("alice", "Laptop/1.0 (X11)")
    tablet = other_browser("alice", "Tablet/3.0 (iPad)")
    d.find_element(By.CSS_SELECTOR, "#sessions-refresh").click()
    wait.until(lambda d: len(rows()) == 3)
    silent_before = len([a for a in provider.stats()["authorize_requests"] if a.get("prompt") == "none"])
    d.find_element(By.CSS_SELECTOR, "#signout-everywhere").click()
    wait.until(lambda d: d.current_url == gw.url + "/" and settled(d) == "signed-out")
    for sess in (laptop, tablet):
        assert gw.get(sess, "/user").status_code == 401
        assert gw.get(sess, "/api/hello").status_code == 401
    assert fetch_status(d, "/user") == 401
    assert fetch_status(d, "/api/hello") == 401
    assert gw.get(bob, "/api/hello").status_code == 200
    # Signed out on purpose: this tab does not try a silent sign-in afterwards.
    assert silent_mark(d) == "signed-out"
    d.refresh()
    wait.until(lambda d: settled(d) == "signed-out")
    assert len([a for a in provider.stats()["authorize_requests"] if a.get("prompt") == "none"]) == silent_before
    assert script_errors(d) == []
