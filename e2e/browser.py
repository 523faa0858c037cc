"""Headless Chromium through selenium, with the Debian chromium + chromium-driver."""

from __future__ import annotations

import os
import shutil

import pytest
from selenium import webdriver
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
    once the SPA shows `body[data-state=signed-in]`."""
    wait = WebDriverWait(driver, timeout)
    driver.get(gateway.url + "/")
    wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "#signin"))).click()
    wait.until(lambda d: d.current_url.startswith(provider.issuer + "/oauth2/authorize"))
    box = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "input[name=sub]")))
    box.send_keys(username)
    box.find_element(By.XPATH, "./ancestor::form//button[@type='submit']").click()
    wait.until(lambda d: d.current_url.startswith(gateway.url + "/"))
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "body[data-state=signed-in]")))
