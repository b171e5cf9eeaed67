"""The task queue: the embedded engine (threads in this process), the immediate engine, and
Celery with a real worker process and the real Redis broker."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from config import taskqueue
from evaluation.services import judge_run_create
from evaluation.tasks import judge_run_execute

ROOT = Path(__file__).resolve().parents[2]
seen: list = []


@taskqueue.task
def _remember(value, *, fail=False):
    if fail:
        raise RuntimeError("job failed on purpose")
    seen.append(value)
    return value


def test_the_embedded_engine_runs_jobs_in_a_background_thread(settings, db):
    settings.TASK_BACKEND = "embedded"
    job = _remember.enqueue("hello")
    assert taskqueue.embedded_jobs[job].result(timeout=10) == "hello"
    assert "hello" in seen


def test_a_failing_embedded_job_is_logged_not_raised_in_the_caller(settings, caplog, db):
    settings.TASK_BACKEND = "embedded"
    job = _remember.enqueue("x", fail=True)
    with pytest.raises(RuntimeError):
        taskqueue.embedded_jobs[job].result(timeout=10)
    assert "failed" in caplog.text


def test_unknown_engines_and_tasks_are_refused(settings):
    settings.TASK_BACKEND = "carrier-pigeon"
    with pytest.raises(ValueError):
        _remember.enqueue(1)
    settings.TASK_BACKEND = "immediate"
    with pytest.raises(LookupError):
        taskqueue.enqueue("tests.evaluation.test_taskqueue.no_such_task")


@pytest.mark.django_db(transaction=True)
def test_a_judge_run_goes_through_the_embedded_engine(settings, make_study, make_judge, fake):
    settings.TASK_BACKEND = "embedded"
    study = make_study(["Q1?", "Q2?"])
    run = judge_run_create(study=study, judge=make_judge(), repeat_rate=0)
    job = judge_run_execute.enqueue(run.pk)
    assert taskqueue.embedded_jobs[job].result(timeout=60) == "done"
    run.refresh_from_db()
    assert run.status == "done" and run.n_ok == 4
    # Jobs are idempotent: running it again does nothing and calls nobody.
    calls = len(fake.log)
    assert judge_run_execute(run.pk) == "skipped" and len(fake.log) == calls


def _redis_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.mark.redis
@pytest.mark.skipif(not _redis_up(), reason="Redis is not reachable at 127.0.0.1:6379")
def test_a_judge_run_goes_through_celery_with_a_real_worker_and_redis(tmp_path, fake):
    """A real `celery worker` process and the Redis broker; the database is a SQLite file the
    worker and the enqueuing process share (the test database is not visible to a worker)."""
    db = tmp_path / "celery.sqlite3"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(
        DATABASE_URL=f"sqlite:///{db}",
        TASK_BACKEND="celery",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
        CELERY_RESULT_BACKEND="",
        CELERY_QUEUE=f"test-judges-{uuid.uuid4().hex[:8]}",
        LLMEVAL_TEST_JUDGE_KEY="sk-test",
        JUDGE_API_KEY_ENVS="LLMEVAL_TEST_JUDGE_KEY",
        JUDGE_ALLOWED_HOSTS="127.0.0.1",
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluation.testing.scenario",
            "--migrate",
            "--items",
            "20",
            "--base-url",
            fake.base_url,
            "--concurrency",
            "4",
            "--key-env",
            "LLMEVAL_TEST_JUDGE_KEY",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    ids = json.loads(out.stdout.strip().splitlines()[-1])
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-P",
            "solo",
            "-l",
            "warning",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        queued = subprocess.run(
            [
                sys.executable,
                "manage.py",
                "judge",
                "--study",
                str(ids["study"]),
                "--judge",
                str(ids["judge"]),
                "--enqueue",
                "--repeat-rate",
                "0",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert queued.returncode == 0, queued.stderr
        assert "queued (job " in queued.stdout

        def status() -> tuple:
            with sqlite3.connect(db, timeout=10) as con:
                return con.execute(
                    "SELECT status, n_done, n_ok FROM evaluation_judgerun"
                ).fetchone()

        deadline = time.monotonic() + 90
        while status()[0] != "done":
            assert time.monotonic() < deadline, f"worker did not finish: {status()}"
            assert worker.poll() is None, worker.stdout.read()
            time.sleep(0.2)
        assert status() == ("done", 20, 20)
        assert len(fake.paid()) == 20
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
