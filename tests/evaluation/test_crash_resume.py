"""A judge run killed with SIGKILL mid-run resumes to completion with no duplicate paid calls.

The run is a real `manage.py judge` process on a throwaway SQLite file, against a real HTTP
server. To kill it "mid-run" deterministically the server holds its responses for a moment
(requests stay in flight), the test waits until every answer the server has delivered is in
the database, then kills; the calls in flight die with the process, unpaid (the server logs
them as aborted)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from benchmarks import judge_throughput as bench
from evaluation.testing.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "CRASH_TEST_JUDGE_KEY"


def _env(db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(DATABASE_URL=f"sqlite:///{db}", JUDGE_BACKOFF_BASE="0.05")
    env[KEY_ENV] = "sk-crash-test"
    env.update(JUDGE_API_KEY_ENVS=KEY_ENV, JUDGE_ALLOWED_HOSTS="127.0.0.1")
    return env


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _count(db: Path, sql: str) -> int:
    with sqlite3.connect(db, timeout=10) as con:
        return con.execute(sql).fetchone()[0]


RECORDED = "SELECT count(*) FROM evaluation_judgecall WHERE cached = 0 AND status = 'ok'"


def _kill_midway(db: Path, env: dict, ids: dict, server: FakeOpenAI) -> int:
    """Start the run, SIGKILL it with requests in flight once 80 calls are recorded; its id."""
    cmd = bench.judge_cmd(ids, repeat_rate="0.05")
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    # 180 s: the wait includes the process start-up, 20 s and more on a loaded machine.
    _wait(lambda: db.exists() and _count(db, RECORDED) >= 80, 180, "80 recorded calls")
    server.paused = True  # responses are held: requests stay in flight
    _wait(lambda: _count(db, RECORDED) == len(server.paid()), 10, "writes to catch up")
    in_flight = server.in_flight
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    server.paused = False
    assert proc.returncode == -signal.SIGKILL
    assert in_flight > 0  # it really was killed mid-run
    run_id = _count(db, "SELECT max(id) FROM evaluation_judgerun")
    running = f"SELECT count(*) FROM evaluation_judgerun WHERE id={run_id} AND status='running'"
    assert _count(db, running) == 1
    return run_id


def _assert_each_planned_call_recorded_once(db: Path, run_id: int) -> None:
    """Every planned call is recorded once: judged, or failed with a reason."""
    planned = _count(db, f"SELECT n_planned FROM evaluation_judgerun WHERE id={run_id}")
    assert _count(db, "SELECT count(*) FROM evaluation_judgecall") == planned
    assert _count(db, f"SELECT n_done FROM evaluation_judgerun WHERE id={run_id}") == planned
    twice = (
        "SELECT count(*) FROM (SELECT item_id, purpose FROM evaluation_judgecall "
        "GROUP BY item_id, purpose HAVING count(*) > 1)"
    )
    assert _count(db, twice) == 0
    silent = "SELECT count(*) FROM evaluation_judgecall WHERE status='failed' AND error = ''"
    assert _count(db, silent) == 0
    unjudged = (
        "SELECT count(*) FROM annotation_item i WHERE NOT EXISTS (SELECT 1 "
        "FROM evaluation_judgecall c WHERE c.item_id = i.id AND c.purpose='primary')"
    )
    assert _count(db, unjudged) == 0


# Its processes share a SQLite file of their own whatever the test database: the same run on
# the PostgreSQL pass would repeat this one.
@pytest.mark.database_independent
def test_a_killed_run_resumes_to_completion_without_paying_twice(tmp_path):
    db = tmp_path / "crash.sqlite3"
    server = FakeOpenAI(latency=0.05).start()
    try:
        env = _env(db)
        ids = bench.scenario(env, server.base_url, 240, 16, migrate=True, key_env=KEY_ENV)
        run_id = _kill_midway(db, env, ids, server)
        done_before = _count(db, "SELECT count(*) FROM evaluation_judgecall")
        resumed = bench.resume(env, run_id)
        assert resumed.returncode == 0, resumed.stderr
        assert f"Run {run_id} done" in resumed.stdout
        planned = _count(db, f"SELECT n_planned FROM evaluation_judgerun WHERE id={run_id}")
        assert 0 < done_before < planned
        _assert_each_planned_call_recorded_once(db, run_id)
        # No request was paid twice, across the crash.
        assert server.duplicates() == 0
        assert len(server.paid()) == _count(db, RECORDED)
        assert server.stats()["aborted"] >= 1
    finally:
        server.stop()
