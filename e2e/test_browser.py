"""A real browser (headless Chromium) through the demo SPA in Public/.

The demo SPA's contract with this test: a `#signin` control that starts the login,
`body[data-state]` = `signed-in` / `signed-out`, the ID-token claims in `#claims`,
a `#call-api` button that calls `/api/hello` (with `X-CSRF: 1`) and shows the status
and body in `#api-result`, and a `#signout` control."""

from __future__ import annotations

import json

import pytest

from harness import ARTIFACTS

pytestmark = pytest.mark.browser


@pytest.fixture
def driver():
    from browser import make_driver
    d = make_driver()
    yield d
    try:
        logs = d.get_log("browser")
        (ARTIFACTS / "browser-console.log").write_text(
            "\n".join(json.dumps(x) for x in logs))
    except Exception:
        pass
    d.quit()


def test_sign_in_call_api_sign_out(gateway, provider, driver):
    from browser import By, EC, WebDriverWait, sign_in
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
