"""A judge in the demo (issue 13, item 5): load_demo points the organizer's judge at the local
test server, and bin/demo starts that server with a key set and stops it with the demo."""

from __future__ import annotations

import contextlib
import io
import os
import queue
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
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


# Its processes share a SQLite file of their own whatever the test database: the same run on
# the PostgreSQL pass would repeat this one.
@pytest.mark.database_independent
def test_bin_demo_runs_the_judge_server_with_a_key_and_stops_it_with_the_demo(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", DEMO_KEY))}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'demo.sqlite3'}", DEMO_PORT=str(_free_port()))
    demo = subprocess.Popen(
        # Started as a terminal starts it, with Ctrl-C's signal at its default: a test run that
        # was itself started in the background of a script (CI) inherits SIGINT ignored, and
        # every process of the demo would then ignore the Ctrl-C below.
        [sys.executable, "-c", _WITH_DEFAULT_SIGINT, "bin/demo"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    out = _pump(demo)
    try:
        deadline = time.monotonic() + 240
        while (line := _next_line(out, deadline)) is not None:
            lines.append(line)
            if "==> the demo answers on" in line:
                break
        text = "".join(lines)
        # The line a newcomer waits for comes once the server answers, not before (the data's
        # "Demo ready" line came 40 s before the server on a busy machine).
        site = f"http://127.0.0.1:{env['DEMO_PORT']}/"
        assert f"==> the demo answers on {site} now" in text, text[-2000:]
        assert httpx2.get(site + "accounts/login/", timeout=5).status_code == 200
        m = re.search(r"judge test server on (http://127\.0\.0\.1:(\d+)/v1) \(pid (\d+)", text)
        assert m, text[-2000:]
        url, fake_pid = m.group(1), int(m.group(3))
        assert f"Judge: Demo judge (local test server) -> {url} (key in {DEMO_KEY})" in text
        models = httpx2.get(url + "/models", timeout=5).json()
        assert "fake-judge" in [m["id"] for m in models["data"]]
        worker_pid = int(re.search(r"task worker for judge runs \(pid (\d+)", text).group(1))
        assert _a_queued_run_is_finished_by_the_demos_worker(env, tmp_path / "demo.sqlite3")
    finally:
        _stop(demo)
    for pid, what in ((fake_pid, "the judge test server"), (worker_pid, "the task worker")):
        _assert_stopped(pid, what)
    # Whatever else of the demo's group may still be stopping.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(demo.pid, signal.SIGKILL)


_WITH_DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def _a_queued_run_is_finished_by_the_demos_worker(env: dict, db: Path) -> bool:
    """A judge run queued from another process (as the organizer's page does) is picked up by the
    worker bin/demo started, and finishes against the demo's judge server."""
    env = {
        **env,
        DEMO_KEY: "demo-key-for-the-local-test-server",
        "JUDGE_ALLOWED_HOSTS": "127.0.0.1",
    }
    env["JUDGE_API_KEY_ENVS"] = DEMO_KEY
    command = [
        "--study",
        "Demo: ChineseAlpacaEval pairwise",
        "--judge",
        "Demo judge (local test server)",
    ]
    queued = subprocess.run(
        [sys.executable, "manage.py", "judge", *command, "--limit", "2", "--repeat-rate", "0"]
        + ["--enqueue"],
        cwd=ROOT,
        env={**env, "TASK_BACKEND": "database"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert queued.returncode == 0, queued.stderr
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with sqlite3.connect(db, timeout=10) as con:
            row = con.execute("SELECT status, n_done, n_ok FROM evaluation_judgerun").fetchone()
        if row is not None and row[0] == "done":
            break
        time.sleep(0.3)
    else:
        pytest.fail(f"the demo's worker did not finish the run: {row}")
    # The run's two calls, each recorded once, and the job ended as the queue's row says (the
    # real `db_worker` check that test_tasks.py made with a worker of its own).
    assert row == ("done", 2, 2)
    with sqlite3.connect(db, timeout=10) as con:
        calls = con.execute("SELECT item_id, purpose, status FROM evaluation_judgecall").fetchall()
        jobs = con.execute(
            "SELECT status, return_value FROM django_tasks_database_dbtaskresult "
            "WHERE task_path = 'evaluation.tasks.judge_run_execute'"
        ).fetchall()
    assert len(calls) == 2 and len(set(calls)) == 2 and {c[2] for c in calls} == {"ok"}
    assert jobs == [("SUCCESSFUL", '"done"')]
    return True


def _pump(demo: subprocess.Popen) -> queue.Queue[str | None]:
    """The demo's output a line at a time, read on a thread to its end (None): the test waits for
    a line with a deadline, and the processes, which keep writing as they stop (request logs,
    the worker, tracebacks), never block on a full pipe. Not ``communicate``: it waits for the
    pipe's end of file, which any process that holds the pipe can hold back."""
    out: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in demo.stdout:
            out.put(line)
        out.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return out


def _next_line(out: queue.Queue[str | None], deadline: float) -> str | None:
    """The next line, or None at the end of the output or the deadline."""
    try:
        return out.get(timeout=max(0.0, deadline - time.monotonic()))
    except queue.Empty:
        return None


def _stop(demo: subprocess.Popen) -> None:
    """Ctrl-C to the demo's process group, then wait for bin/demo itself to end (its output is
    drained by `_pump`'s thread)."""
    os.killpg(demo.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
    try:
        demo.wait(timeout=60)  # a loaded machine stops them slowly
    except subprocess.TimeoutExpired:  # never leave a demo running after the test
        alive = subprocess.run(
            ["ps", "-o", "pid,stat,etime,args", "-g", str(demo.pid)], capture_output=True, text=True
        ).stdout
        os.killpg(demo.pid, signal.SIGKILL)
        demo.wait()
        pytest.fail(f"bin/demo did not stop within 60 s of Ctrl-C; still running:\n{alive}")


def _assert_stopped(pid: int, what: str) -> None:
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    pytest.fail(f"{what} outlived the demo")
