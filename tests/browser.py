"""Headless Chromium for the web page's browser tests (tests/test_web_browser.py, tests/test_web_chat_browser.py):
Debian's Chromium driven by Selenium and chromedriver, one browser with a fresh profile per test module.

Debian's headless shell (``apt-get install chromium-headless-shell``: Chromium's own engine, Blink and V8 and
its network stack, without the desktop browser's window, tabs and services around it) when it is installed: its
processes drew half the full browser's CPU over the same tests (test_web_browser.py 4.5-5.0 s against 9.4-9.6 s,
test_web_chat_browser.py 1.0-1.2 s against 2.1-2.3 s). Else the full browser (``apt-get install chromium``) in
its headless mode. ``CHROMIUM`` names another binary; ``.ci/run`` installs all three packages.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell"
FULL_BROWSER = "/usr/bin/chromium"
CHROMIUM = os.environ.get("CHROMIUM") or (HEADLESS_SHELL if os.access(HEADLESS_SHELL, os.X_OK) else FULL_BROWSER)
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def installed() -> bool:
    return os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)


def missing() -> str:
    """Why the browser tests skip when ``installed()`` is false: one line naming the packages."""
    packages = "chromium chromium-headless-shell chromium-driver"
    return f"no Chromium at {CHROMIUM} or chromedriver at {CHROMEDRIVER} (apt-get install {packages})"


def gone(error: Exception) -> bool:
    """Whether ``error`` says that an element found before is no longer in the page: Selenium's
    StaleElementReferenceException, or the same said by chromedriver as an inspector error when the next page
    replaced the document between finding the element and reading it (seen once in six runs under load)."""
    from selenium.common.exceptions import StaleElementReferenceException

    return isinstance(error, StaleElementReferenceException) or "does not belong to the document" in str(error)


@contextmanager
def chromium(window_size: str, implicit_wait: float) -> Iterator[WebDriver]:
    """A headless Chromium with a profile of its own (removed after), its console log kept for the tests to read;
    the test skips with chromedriver's first line when the browser does not start (a broken install)."""
    from selenium import webdriver

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    try:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        if "headless-shell" in os.path.basename(CHROMIUM):
            # chromedriver opens the first page itself for the shell (it starts with none) when told so.
            options.set_capability("browserName", "chrome-headless-shell")
        for flag in [*FLAGS, f"--user-data-dir={profile}", f"--window-size={window_size}"]:
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        try:
            driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
        except Exception as exc:  # a broken Chromium install: say why in one line
            pytest.skip(f"Chromium did not start: {str(exc).splitlines()[0]}")
        driver.implicitly_wait(implicit_wait)
        try:
            yield driver
        finally:
            driver.quit()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
