"""A judge in the demo (issue 13, item 5): load_demo points the organizer's judge at the local
test server, and bin/demo starts that server with a key set and stops it with the demo."""

from __future__ import annotations

import io
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx2
import pytest
from django.core.management import CommandError, call_command

from annotation.models import Study
from evaluation.launch import judge_run_start
from evaluation.models import JudgeConfig
from evaluation.runner import execute_run

ROOT = Path(__file__).resolve().parents[2]
DEMO_KEY = "LLMEVAL_DEMO_JUDGE_KEY"


@pytest.fixture
def demo_rules(settings, monkeypatch):
    settings.JUDGE_API_KEY_ENVS = ["OPENAI_API_KEY", DEMO_KEY]
    monkeypatch.setenv(DEMO_KEY, "demo-key")


def test_load_demo_points_the_organizers_judge_at_the_test_server_and_it_runs(db, fake, demo_rules):
    call_command("load_demo", "--judge-url", fake.base_url, stdout=io.StringIO())
    judge = JudgeConfig.objects.get()
    assert judge.owner.username == "organizer" and judge.base_url == fake.base_url
    assert judge.api_key_env == DEMO_KEY and judge.key_is_set
    study = Study.objects.get(name="Demo: ChineseAlpacaEval pairwise")
    run, estimate = judge_run_start(study=study, judge=judge, limit=3, repeat_rate=0, enqueue=False)
    assert estimate.model_listed is True
    run = execute_run(run.pk, backoff=0.01)
    assert run.status == "done" and run.n_done == 3 and run.n_ok == 3
    # Again with the server on another port: the same judge, re-pointed.
    other = fake.base_url.replace(str(fake.port), str(fake.port + 1))
    call_command("load_demo", "--judge-url", other, stdout=io.StringIO())
    assert JudgeConfig.objects.get().base_url == other


def test_load_demo_refuses_a_judge_url_the_operator_has_not_allowed(db, demo_rules, settings):
    settings.JUDGE_ALLOWED_HOSTS = []
    with pytest.raises(CommandError, match="demo judge refused: .*JUDGE_ALLOWED_HOSTS"):
        call_command("load_demo", "--judge-url", "http://127.0.0.1:9/v1", stdout=io.StringIO())
    assert not JudgeConfig.objects.exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bin_demo_runs_the_judge_server_with_a_key_and_stops_it_with_the_demo(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", DEMO_KEY))}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'demo.sqlite3'}", DEMO_PORT=str(_free_port()))
    demo = subprocess.Popen(
        ["bin/demo"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 240
        for line in demo.stdout:
            lines.append(line)
            if "Quit the server" in line or time.monotonic() > deadline:
                break
        text = "".join(lines)
        m = re.search(r"judge test server on (http://127\.0\.0\.1:(\d+)/v1) \(pid (\d+)", text)
        assert m, text[-2000:]
        url, fake_pid = m.group(1), int(m.group(3))
        assert f"Judge: Demo judge (local test server) -> {url} (key in {DEMO_KEY})" in text
        models = httpx2.get(url + "/models", timeout=5).json()
        assert "fake-judge" in [m["id"] for m in models["data"]]
    finally:
        os.killpg(demo.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
        demo.wait(timeout=30)
    for _ in range(50):
        try:
            os.kill(fake_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(fake_pid, signal.SIGKILL)
        pytest.fail("the judge test server outlived the demo")
