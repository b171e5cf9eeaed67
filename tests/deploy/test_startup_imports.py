"""What a Django process imports before it does anything: the settings, the apps, the URLconf and
the template libraries (every manage.py command with system checks, every server), and the
queueing of a report refresh after an import (ranking/refresh.py) must not load
the statistics stack, which only a report needs (config/lazy.py, docs/decisions/house.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.lazy import lazy_module
from ranking.forms import BT_TIE_CHOICES, BT_TIES
from ranking.stats import leaderboards

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "pandas", "scipy", "numba", "sklearn", "matplotlib", "openpyxl", "openai")

# A fresh interpreter: the test process itself has imported everything long ago. A module that
# config/lazy.py registered but nobody has read from yet does not count as loaded.
PROBE = f"""
import json, os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
import django
django.setup()
from django.urls import get_resolver
get_resolver().url_patterns
from django.template import engines
for backend in engines.all():
    backend.engine.template_libraries
from django.core.management import call_command
call_command("check", verbosity=0)
# What an import or a finished judge run calls to queue a large study's report refresh.
from ranking import refresh, tasks, warm
refresh.ReportFilters().cache_token()
loaded = [name for name in {HEAVY!r}
          if name in sys.modules and type(sys.modules[name]).__name__ != "_LazyModule"]
print(json.dumps(loaded))
"""

pytestmark = pytest.mark.database_independent


def test_start_up_imports_no_statistics_stack():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    env.pop("DATABASE_URL", None)  # the checks need no database; SQLite is never opened here
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == []


def test_a_lazy_module_is_the_real_module_once_read(monkeypatch):
    import ranking.charts_quality as real

    lazy = lazy_module("ranking.charts_quality")
    assert lazy is real
    monkeypatch.setattr(real, "_has", lambda df, col: False)
    assert lazy._has is real._has


def test_a_lazy_module_runs_on_its_first_attribute_read():
    name = "tests.deploy.lazy_target"
    sys.modules.pop(name, None)
    module = lazy_module(name)
    assert type(module).__name__ == "_LazyModule"
    assert module.VALUE == 42
    assert type(module).__name__ == "module"
    sys.modules.pop(name, None)


def test_a_missing_module_is_refused_at_once():
    with pytest.raises(ModuleNotFoundError):
        lazy_module("ranking.no_such_module")


def test_the_forms_tie_rules_are_the_statistics_ones():
    assert BT_TIES == leaderboards.BT_TIES
    assert [rule for rule, _label in BT_TIE_CHOICES] == list(leaderboards.BT_TIES)


def test_the_server_start_up_loads_the_report_stack_before_the_workers_fork():
    # config/wsgi.py (gunicorn --preload) warms what the first report needs, so that no worker
    # pays for it on a researcher's request (WARM_REPORT_STACK, on by default).
    probe = (
        "import json, sys; import config.wsgi; "
        "print(json.dumps([n for n in ('ranking.stats.report', 'matplotlib', 'scipy') "
        "if n in sys.modules and type(sys.modules[n]).__name__ != '_LazyModule']))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    env.pop("DATABASE_URL", None)
    env.pop("WARM_REPORT_STACK", None)
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == [
        "ranking.stats.report",
        "matplotlib",
        "scipy",
    ]
