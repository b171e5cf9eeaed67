"""Playwright in Debian's chromium against pytest-django's live_server.

Never `playwright install`: these machines cannot download browsers, and CI installs the distro
package. Tests skip with a clear reason when /usr/bin/chromium is missing."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

# live_server runs the app in a thread while Playwright's sync API holds an event loop in this
# one; Django refuses ORM calls from such a context unless told it is fine.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    context = browser.new_context(
        base_url=live_server.url, locale="en-US", viewport={"width": 1280, "height": 900}
    )
    context.set_default_timeout(10_000)
    # A page load may wait for the live server's first start-up work (templates, static files)
    # on a loaded machine: more time for navigations than for the checks on a loaded page.
    context.set_default_navigation_timeout(30_000)
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.dialogs = dialogs
    yield page
    context.close()


@pytest.fixture
def login(page):
    def do(username: str, password: str):
        page.goto("/accounts/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", password)
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"^https?://[^/]+/$"))  # home, after the redirect

    return do
