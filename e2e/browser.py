"""Headless Chromium through selenium, with the Debian chromium + chromium-driver."""

from __future__ import annotations

import os
import shutil

import pytest
from selenium import webdriver
from selenium.common.exceptions import ElementNotInteractableException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By  # noqa: F401  (re-exported)
from selenium.webdriver.support import expected_conditions as EC  # noqa: F401
from selenium.webdriver.support.ui import WebDriverWait  # noqa: F401

CHROMIUM = os.environ.get("CHROMIUM_BIN") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = os.environ.get("CHROMEDRIVER_BIN") or shutil.which("chromedriver") or "/usr/bin/chromedriver"


def make_driver(width=1280, height=900):
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip(f"chromium ({CHROMIUM}) or chromedriver ({CHROMEDRIVER}) missing: run e2e/setup.sh")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              f"--window-size={width},{height}", "--no-first-run", "--no-default-browser-check",
              "--disable-extensions", "--password-store=basic"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    d.set_page_load_timeout(30)
    d.set_script_timeout(30)
    return d


def sign_in(driver, gateway, provider, username="alice", timeout=20):
    """From the demo SPA at `gateway`, sign in at `provider`'s login page as `username`; returns
    once the SPA shows `body[data-state=signed-in]`. Opened signed out, the SPA first navigates
    away for its silent sign-in and back, so the button is looked for only once the page has
    settled on `signed-out`."""
    wait = WebDriverWait(driver, timeout)
    driver.get(gateway.url + "/")
    wait.until(lambda d: d.current_url.startswith(gateway.url + "/") and page_state(d) == "signed-out")
    click_when_ready(driver, "#signin", timeout)
    wait.until(lambda d: d.current_url.startswith(provider.issuer + "/oauth2/authorize"))
    box = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "input[name=sub]")))
    box.send_keys(username)
    box.find_element(By.XPATH, "./ancestor::form//button[@type='submit']").click()
    wait.until(lambda d: d.current_url.startswith(gateway.url + "/"))
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "body[data-state=signed-in]")))


def click_when_ready(driver, selector, timeout=20):
    """Clicks `selector` once it is clickable. The SPA re-renders its buttons when `/bff/user`
    answers, so an element found a moment earlier can be gone by the click: find and click in one
    step, and try again on a stale or not yet interactable element."""
    def clicked(d):
        found = EC.element_to_be_clickable((By.CSS_SELECTOR, selector))(d)
        if not found:
            return False
        found.click()
        return True
    WebDriverWait(driver, timeout, ignored_exceptions=[StaleElementReferenceException,
                                                       ElementNotInteractableException]).until(clicked)


def page_state(driver):
    """The demo SPA's `body[data-state]`, or None between two documents."""
    try:
        return driver.find_element(By.CSS_SELECTOR, "body").get_attribute("data-state")
    except Exception:
        return None
