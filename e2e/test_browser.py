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
            driver.delete_all_cookies()  # 127.0.0.1: the gateway's and both providers' cookies
            driver.get(base + "/")
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
