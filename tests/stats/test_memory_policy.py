"""The report's memory policy (ranking/stats/memory.py): glibc's mallopt, once per process."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from ranking.stats import memory

# No database: its subprocess only computes a report in memory.
pytestmark = pytest.mark.database_independent

ROOT = Path(__file__).resolve().parents[2]


class _Recorder:
    def __init__(self, answer: int = 1) -> None:
        self.calls: list[tuple[int, int]] = []
        self.answer = answer

    def __call__(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return self.answer


@pytest.fixture
def fresh(monkeypatch):
    """The module as in a new process (nothing applied yet), mallopt recorded."""
    monkeypatch.setattr(memory, "_done", None)
    recorder = _Recorder()
    monkeypatch.setattr(memory, "_mallopt", lambda: recorder)
    monkeypatch.delenv("REPORT_MALLOC_TUNING", raising=False)
    return recorder


def test_applies_the_documented_settings_once(fresh):
    assert memory.keep_freed_memory() is True
    assert memory.keep_freed_memory() is True
    assert fresh.calls == [
        (memory.M_MMAP_THRESHOLD, 32 * 1024 * 1024),
        (memory.M_TRIM_THRESHOLD, 1024 * 1024 * 1024),
        (memory.M_ARENA_MAX, 2),
    ]


@pytest.mark.parametrize("value", ["0", "off", "false", " No "])
def test_turned_off_by_the_environment(fresh, monkeypatch, value):
    monkeypatch.setenv("REPORT_MALLOC_TUNING", value)
    assert memory.keep_freed_memory() is False
    assert fresh.calls == []


def test_a_refused_setting_is_reported(fresh):
    fresh.answer = 0
    assert memory.keep_freed_memory() is False


def test_without_glibc_nothing_happens(monkeypatch):
    monkeypatch.setattr(memory, "_done", None)
    monkeypatch.setattr(memory, "_mallopt", lambda: None)
    assert memory.keep_freed_memory() is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")
def test_glibc_accepts_them_and_the_report_applies_them():
    """In a new process: a report sets the policy (glibc answers 1 to each setting)."""
    code = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings');"
        "django.setup();"
        "from ranking.stats import memory, synthetic, build_report;"
        "assert memory._done is None;"
        "s = synthetic.generate(n_models=3, n_questions=4, seed=1);"
        "build_report(s.star_df, s.pair_df, n_bootstrap=5, n_shuffles=2);"
        "print(memory._done)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "True"
