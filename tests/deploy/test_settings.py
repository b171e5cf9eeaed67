"""The deployment switches of config/settings.py, read as a fresh process reads them at start-up:
the task backend, and what PgBouncer in transaction mode needs (docs/deploy.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.deploy.cluster import ROOT

# Each test reads the settings in a process of its own, with the DATABASE_URL it sets, and never
# connects: the PostgreSQL pass would repeat the same runs.
pytestmark = pytest.mark.database_independent

PROBE = (
    "import json, config.settings as s; db = s.DATABASES['default']; "
    "print(json.dumps({'tasks': s.TASKS['default']['BACKEND'], "
    "'cursors_off': db.get('DISABLE_SERVER_SIDE_CURSORS'), "
    "'prepare': db.get('OPTIONS', {}).get('prepare_threshold')}))"
)


def read_settings(**env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("TASK_BACKEND", "DATABASE_URL")}
    base = {k: v for k, v in base.items() if not k.startswith("DB_")}
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**base, "DATABASE_URL": "postgres://app@db.internal:6432/llmeval", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_postgres_keeps_prepared_statements_and_server_side_cursors_by_default():
    out = read_settings()
    assert json.loads(out.stdout) == {
        "tasks": "django_tasks_db.DatabaseBackend",
        "cursors_off": False,
        "prepare": 5,
    }


def test_transaction_pooling_turns_off_server_side_cursors_and_prepared_statements():
    out = read_settings(DB_TRANSACTION_POOLING="true", TASK_BACKEND="celery")
    assert json.loads(out.stdout) == {
        "tasks": "config.celery_backend.CeleryBackend",
        "cursors_off": True,
        "prepare": None,
    }
    # A pooler that carries prepared statements (PgBouncer 1.21+, max_prepared_statements) may
    # have them back.
    out = read_settings(DB_TRANSACTION_POOLING="yes", DB_PREPARE_THRESHOLD="5")
    assert json.loads(out.stdout)["cursors_off"] is True and json.loads(out.stdout)["prepare"] == 5


def test_a_misspelt_switch_stops_the_server_instead_of_being_read_as_off():
    for env in (
        {"DB_TRANSACTION_POOLING": "flase"},
        {"TASK_BACKEND": "carrier-pigeon"},
        {"TASK_BACKEND": "celery\x01"},
        {"DB_PREPARE_THRESHOLD": "٣"},
    ):
        out = read_settings(**env)
        assert out.returncode != 0 and "SettingError" in out.stderr, (env, out.stderr[-500:])
