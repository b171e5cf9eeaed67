"""SQLite, the demo's database, under simultaneous writes: several annotators rating at the same
moment through the pages (each with its own connection, as under a threaded server) must all be
served and stored, never "database is locked" (a 500).

With SQLite's default DEFERRED transactions a transaction that has read and then writes cannot
wait for another writer: SQLite refuses it at once, whatever the busy timeout. The settings
begin every transaction IMMEDIATE (the write lock first, so a second writer waits up to the
timeout) and run the file in WAL mode (config/settings.py). The run is a process of its own on
a SQLite file (tests/deploy/sqlite_writers.py), with the settings' own options."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

# A SQLite file of its own in a process of its own: the PostgreSQL pass would repeat the run.
pytestmark = pytest.mark.database_independent

N_ANNOTATORS, PER_ANNOTATOR = 8, 4


def test_simultaneous_annotators_on_a_sqlite_file_never_hit_a_locked_database(tmp_path: Path):
    base = Path(settings.BASE_DIR)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'writers.sqlite3'}",
        PYTHONPATH=str(base),
        TASK_BACKEND="immediate",
    )
    done = subprocess.run(
        [sys.executable, str(base / "tests/deploy/sqlite_writers.py"), str(N_ANNOTATORS),
         str(PER_ANNOTATOR)],
        cwd=base, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["errors"] == []
    assert summary["ratings"] == N_ANNOTATORS * PER_ANNOTATOR
    assert summary["journal_mode"] == "wal"
    assert summary["options"]["transaction_mode"] == "IMMEDIATE"
    assert summary["options"]["timeout"] >= 5
