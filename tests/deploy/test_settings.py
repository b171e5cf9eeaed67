"""The deployment switches of config/settings.py, read as a fresh process reads them at start-up:
the task backend, and what PgBouncer in transaction mode needs (docs/deploy.md)."""

from __future__ import annotations

import os

import pytest

from tests.settings_probe import probe_settings

# The settings are read in a process of their own, with the DATABASE_URL each case sets, and
# never connect: the PostgreSQL pass would repeat the same runs.
pytestmark = pytest.mark.database_independent

VALUES = (
    "{'tasks': s.TASKS['default']['BACKEND'], "
    "'cursors_off': s.DATABASES['default'].get('DISABLE_SERVER_SIDE_CURSORS'), "
    "'prepare': s.DATABASES['default'].get('OPTIONS', {}).get('prepare_threshold')}"
)

# Every case of this module, read in one process (tests/settings_probe.py).
CASES: dict[str, dict[str, str]] = {
    "default": {},
    "pooling": {"DB_TRANSACTION_POOLING": "true", "TASK_BACKEND": "celery"},
    "pooling+prepare": {"DB_TRANSACTION_POOLING": "yes", "DB_PREPARE_THRESHOLD": "5"},
    "misspelt pooling": {"DB_TRANSACTION_POOLING": "flase"},
    "unknown backend": {"TASK_BACKEND": "carrier-pigeon"},
    "control character": {"TASK_BACKEND": "celery\x01"},
    "arabic digit": {"DB_PREPARE_THRESHOLD": "٣"},
}


@pytest.fixture(scope="module")
def probed() -> dict[str, dict]:
    base = {k: v for k, v in os.environ.items() if k not in ("TASK_BACKEND", "DATABASE_URL")}
    base = {k: v for k, v in base.items() if not k.startswith("DB_")}
    base["DATABASE_URL"] = "postgres://app@db.internal:6432/llmeval"
    return probe_settings({name: {**base, **env} for name, env in CASES.items()}, VALUES)


def test_postgres_keeps_prepared_statements_and_server_side_cursors_by_default(probed):
    assert probed["default"] == {
        "values": {"tasks": "django_tasks_db.DatabaseBackend", "cursors_off": False, "prepare": 5}
    }


def test_transaction_pooling_turns_off_server_side_cursors_and_prepared_statements(probed):
    assert probed["pooling"] == {
        "values": {
            "tasks": "config.celery_backend.CeleryBackend",
            "cursors_off": True,
            "prepare": None,
        }
    }
    # A pooler that carries prepared statements (PgBouncer 1.21+, max_prepared_statements) may
    # have them back.
    values = probed["pooling+prepare"]["values"]
    assert values["cursors_off"] is True and values["prepare"] == 5


@pytest.mark.parametrize(
    "case", ["misspelt pooling", "unknown backend", "control character", "arabic digit"]
)
def test_a_misspelt_switch_stops_the_server_instead_of_being_read_as_off(probed, case):
    assert probed[case]["error"] == "SettingError", probed[case]
