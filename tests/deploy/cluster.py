"""Two app servers, one task worker, one PostgreSQL database and one Redis, as docs/deploy.md
lays them out, started as real processes on 127.0.0.1 for tests/deploy.

Every process runs from this interpreter's environment (`sys.executable -m gunicorn`, `-m
celery`), with DEBUG off and the static files collected first, as in production. The database
is a throwaway one on the PostgreSQL server of DATABASE_URL, dropped at the end; Redis keys are
kept apart by a fresh Celery queue name and, for per-address rules, fresh client addresses.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import httpx2

ROOT = Path(__file__).resolve().parents[2]
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
KEY_ENV = "LLMEVAL_TEST_JUDGE_KEY"


def redis_up() -> bool:
    try:
        with socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def postgres_server() -> str | None:
    """postgres://user@host:port of DATABASE_URL when it names a reachable PostgreSQL server."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return None
    import psycopg

    server = url.rsplit("/", 1)[0]
    try:
        psycopg.connect(server + "/postgres", connect_timeout=2).close()
    except psycopg.Error:
        return None
    return server


def _admin(server: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        conn.execute(statement)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment(db_url: str, judge_url: str, tmp: Path) -> dict[str, str]:
    """What every process of the deployment shares: the same database, Redis, queue, secret."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "CELERY_"))}
    env.update(
        DATABASE_URL=db_url,
        DEBUG="false",
        SECRET_KEY="deploy-test-" + uuid.uuid4().hex,  # one secret for every app server
        ALLOWED_HOSTS="127.0.0.1",
        SESSION_COOKIE_SECURE="false",
        CSRF_COOKIE_SECURE="false",
        DB_CONN_MAX_AGE="60",
        LOG_LEVEL="ERROR",
        WARM_REPORT_STACK="false",  # annotator-facing servers: no report is computed here
        REDIS_URL=f"redis://{REDIS_HOST}:{REDIS_PORT}/14",
        TRUSTED_PROXIES="127.0.0.1",  # the clients play a proxy that names each annotator
        TASK_BACKEND="celery",
        CELERY_BROKER_URL=f"redis://{REDIS_HOST}:{REDIS_PORT}/0",
        CELERY_RESULT_BACKEND="",
        CELERY_QUEUE=f"deploy-{uuid.uuid4().hex[:8]}",
        JUDGE_API_KEY_ENVS=KEY_ENV,
        JUDGE_ALLOWED_HOSTS="127.0.0.1",
        STATIC_ROOT=str(tmp / "static"),
        **{KEY_ENV: "sk-deploy-test"},
    )
    env.pop("ANNOTATION_OPEN_PER_ADDRESS", None)  # the default cap applies
    return env


def _wait_until_serving(proc: subprocess.Popen, base: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the app server at {base} exited"
        try:
            httpx2.get(base + "/", timeout=2)
            return
        except httpx2.HTTPError:
            time.sleep(0.2)
    raise AssertionError(f"the app server at {base} did not start")


def _start(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env)


def app_server(env: dict, port: int) -> subprocess.Popen:
    return _start(
        env, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
        "--workers", "1", "--worker-class", "gthread", "--threads", "4", "--log-level", "warning",
    )  # fmt: skip


def task_worker(env: dict) -> subprocess.Popen:
    return _start(
        env, "-m", "celery", "-A", "config", "worker", "-P", "solo", "-l", "warning",
        "--without-gossip", "--without-mingle", "--without-heartbeat",
    )  # fmt: skip


def _stop(procs: list[subprocess.Popen]) -> None:
    # SIGQUIT: gunicorn's quick shutdown (SIGTERM waits for keep-alive connections), Celery's
    # cold one; nothing is running by now.
    for proc in procs:
        proc.send_signal(signal.SIGQUIT)
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _prepare(env: dict, judge_url: str) -> dict:
    """Migrate and load the test data while the static files are collected (both take a while
    on a busy machine); the ids of the test data."""
    data = subprocess.Popen(
        [sys.executable, "-m", "tests.deploy.cluster_data", "--judge-url", judge_url]
        + ["--key-env", KEY_ENV],
        **{"cwd": ROOT, "env": env, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE},
        text=True,
    )
    # The API documentation's assets (24 MB of Swagger UI and ReDoc) are left out: nothing here
    # asks for them, and compressing them would double the start-up time.
    static = subprocess.Popen(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"]
        + ["--ignore", "drf_spectacular_sidecar"],
        cwd=ROOT,
        env=env,
    )
    out, err = data.communicate(timeout=180)
    assert data.returncode == 0, err[-3000:]
    assert static.wait(timeout=180) == 0, "collectstatic failed"
    return json.loads(out.strip().splitlines()[-1])


@contextmanager
def deployment(server: str, judge_url: str, tmp: Path):
    """Yield (ids of the test data, [base URL of each app server], environment)."""
    name = f"deploy_{uuid.uuid4().hex[:12]}"
    _admin(server, f'CREATE DATABASE "{name}"')
    env = environment(f"{server}/{name}", judge_url, tmp)
    procs: list[subprocess.Popen] = []
    try:
        ids = _prepare(env, judge_url)
        ports = [free_port(), free_port()]
        procs = [app_server(env, port) for port in ports] + [task_worker(env)]
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        for proc, base in zip(procs, bases, strict=False):
            _wait_until_serving(proc, base)
        yield ids, bases, env
    finally:
        _stop(procs)
        _admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
