"""Regenerate the README's screenshots (run by bin/screenshots, inside .venv).

Builds a throw-away demo database (the same `load_demo --simulate` as bin/demo), serves it on a
free port, drives Debian's Chromium with Playwright through a star item, a pairwise item and the
report, and writes docs/img/star.png, pairwise.png and report.png. Nothing in db.sqlite3 or the
working tree changes except those three files.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.request import urlopen

BASE = Path(__file__).resolve().parent.parent
IMG = BASE / "docs" / "img"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
VIEWPORT = {"width": 1280, "height": 800}

IDS = """
import django
django.setup()
from annotation.management.commands import load_demo as d
from annotation.models import Study
for name in (d.STAR_STUDY, d.PAIR_STUDY, d.SCORES_STUDY):
    s = Study.objects.get(name=name)
    print(s.public_id, s.pk)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _manage(env: dict, *args: str, capture: bool = False) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BASE, env=env, check=True, text=True, capture_output=capture,
    )  # fmt: skip
    return done.stdout or ""


def _serve(env: dict) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=BASE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    for _ in range(150):
        try:
            urlopen(url + "/accounts/login/", timeout=2)  # noqa: S310 - our local server
            return proc, url
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("the demo server did not start")


def _login(page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"^https?://[^/]+/$"))


def _shoot(browser, url: str, studies: list[tuple[str, str]]) -> None:
    from playwright.sync_api import expect

    (star_pid, _), (pair_pid, _), (_, report_pk) = studies
    context = browser.new_context(base_url=url, locale="en-US", viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    page = context.new_page()
    _login(page, "annotator1", "annotator-demo")
    page.goto(f"/s/{star_pid}/next/")
    expect(page.locator("#annotate[data-ready]")).to_be_visible()
    for key in ("3", "2"):  # two criteria rated, the third highlighted
        page.keyboard.press(key)
    page.mouse.move(0, 0)
    page.screenshot(path=str(IMG / "star.png"))
    page.goto(f"/s/{pair_pid}/next/")
    expect(page.locator("#annotate[data-ready]")).to_be_visible()
    page.keyboard.press("1")
    page.screenshot(path=str(IMG / "pairwise.png"))
    context.close()
    context = browser.new_context(base_url=url, locale="en-US", viewport=VIEWPORT)
    context.set_default_timeout(60_000)
    page = context.new_page()
    _login(page, "organizer", "organizer-demo")
    page.goto(f"/studies/{report_pk}/report/")
    page.wait_for_load_state("networkidle")
    # The charts come in their own request once the page is shown (ranking/chart_groups.py).
    page.locator("#charts-leaderboards figure img").first.wait_for()
    # The first section of the report (past the filter form) at the top of the picture.
    page.evaluate("document.querySelector('main h2')?.scrollIntoView()")
    page.screenshot(path=str(IMG / "report.png"))
    context.close()


def main() -> None:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install -y chromium")
    IMG.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="llmeval-shots-") as tmp:
        env = {
            **os.environ,
            "DEBUG": "true",
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": f"sqlite:///{Path(tmp) / 'demo.sqlite3'}",
        }
        print("==> building the demo database")
        _manage(env, "migrate", "--noinput", "-v0")
        _manage(env, "load_demo", "--simulate", capture=True)
        ids = subprocess.run(
            [sys.executable, "-c", IDS], cwd=BASE, env=env, check=True, text=True,
            capture_output=True,
        ).stdout.split("\n")  # fmt: skip
        studies = [(line.split()[0], line.split()[1]) for line in ids if line.strip()]
        proc, url = _serve(env)
        try:
            print(f"==> photographing {url}")
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                _shoot(browser, url, studies)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    for name in ("star.png", "pairwise.png", "report.png"):
        print(f"wrote docs/img/{name}")


if __name__ == "__main__":
    main()
