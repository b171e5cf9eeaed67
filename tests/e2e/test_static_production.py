"""Production static files: the README's set-up (DEBUG=false, migrate, collectstatic, gunicorn)
serves /static/js/annotate.js through WhiteNoise, hashed and compressed, and an annotator's
keyboard shortcuts work on the item page in Chromium."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.request import Request, urlopen

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e

BASE = Path(__file__).resolve().parents[2]

# Runs inside the production settings (a fresh SQLite file): one onsite annotator and a live
# pairwise study, whose public id is printed.
SEED = """
import django
django.setup()
from django.contrib.auth.models import User
from annotation.models import Rater
from tests.engine.conftest import make_study
owner = User.objects.create_user("olga")
user = User.objects.create_user("carol", password="carol-pass-123")
Rater.objects.create(kind="human", pool="onsite", user=user)
print(make_study(owner=owner, mode="pairwise", n_questions=2).public_id)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, proc: subprocess.Popen, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {proc.returncode}")
        try:
            urlopen(url, timeout=2)  # noqa: S310 - our own local server
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(url)


@pytest.fixture(scope="module")
def production(tmp_path_factory):
    root = tmp_path_factory.mktemp("production")
    env = {
        **os.environ,
        "DEBUG": "false",
        "SECRET_KEY": "e2e-production-test-key-not-secret",
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": f"sqlite:///{root / 'db.sqlite3'}",
        "STATIC_ROOT": str(root / "static"),
        # Plain http on the loopback: the cookies cannot be Secure-only here.
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "PYTHONPATH": str(BASE),
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    manage = [sys.executable, "manage.py"]
    # Collected while the database is migrated; the API documentation's assets (Swagger UI and
    # ReDoc, half the compressing) are left out: nothing here asks for them.
    static = subprocess.Popen(
        [*manage, "collectstatic", "--noinput", "-v0", "--ignore", "drf_spectacular_sidecar"],
        cwd=BASE, env=env,
    )  # fmt: skip
    subprocess.run(
        [*manage, "migrate", "--noinput", "-v0"], cwd=BASE, env=env, check=True, timeout=120
    )
    assert static.wait(timeout=120) == 0, "collectstatic failed"
    seeded = subprocess.run(
        [sys.executable, "-c", SEED], cwd=BASE, env=env, check=True, timeout=60,
        capture_output=True, text=True,
    )  # fmt: skip
    study_pid = seeded.stdout.strip().splitlines()[-1]
    port = _free_port()
    # The README's command, with one worker on this small machine.
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi", "--preload", "--worker-class",
         "gthread", "--workers", "1", "--threads", "2", "--bind", f"127.0.0.1:{port}"],
        cwd=BASE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(url + "/accounts/login/", proc)
        yield url, study_pid
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_gunicorn_serves_the_annotator_script_hashed_and_compressed(production):
    url, _ = production
    plain = urlopen(url + "/static/js/annotate.js", timeout=5)  # noqa: S310
    assert plain.status == 200
    assert b"ownsArrows" in plain.read()
    gz = urlopen(  # noqa: S310
        Request(url + "/static/js/annotate.js", headers={"Accept-Encoding": "gzip"}), timeout=5
    )
    assert gz.headers["Content-Encoding"] == "gzip"
    login_page = urlopen(url + "/accounts/login/", timeout=5).read().decode()  # noqa: S310
    hashed = re.search(r"/static/css/app\.[0-9a-f]{12}\.css", login_page)
    assert hashed, "pages link the hashed file names"
    cached = urlopen(url + hashed.group(0), timeout=5)  # noqa: S310
    assert "immutable" in cached.headers["Cache-Control"]


def test_keyboard_shortcuts_work_on_an_item_served_by_gunicorn(browser, production):
    url, study_pid = production
    context = browser.new_context(base_url=url, locale="en-US")
    context.set_default_timeout(10_000)
    page = context.new_page()
    scripts: list[str] = []
    page.on("response", lambda r: scripts.append(f"{r.status} {r.url}") if ".js" in r.url else None)
    try:
        page.goto("/accounts/login/")
        page.fill("input[name=username]", "carol")
        page.fill("input[name=password]", "carol-pass-123")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"^https?://[^/]+/$"))
        page.goto(f"/s/{study_pid}/next/")
        first = page.url
        expect(page.locator("#annotate [data-action=submit]")).to_be_disabled()
        expect(page.locator("#annotate[data-ready]")).to_be_attached()  # the keys work now
        page.keyboard.press("4")  # right is better, from annotate.js
        expect(page.locator("input[name=choice][value=right]")).to_be_checked()
        page.keyboard.press("Enter")  # submitted through htmx
        expect(page).not_to_have_url(first)
        assert any(re.match(r"200 .*/static/js/annotate\.[0-9a-f]{12}\.js$", s) for s in scripts)
        assert any(re.match(r"200 .*/static/.*htmx.*\.js$", s) for s in scripts)
    finally:
        context.close()
