"""The budgets check run by bin/test: long functions, long files and import cycles fail it unless the
baseline lists them, and the baseline may only shrink."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import check_budgets

pytestmark = pytest.mark.database_independent


def _write(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def _two_modules(root: Path, b_imports_a: str = "from ranking import a\n") -> None:
    """ranking.a imports ranking.b at module level; ranking.b imports a as `b_imports_a` says."""
    _write(root, "ranking/__init__.py", "")
    _write(root, "ranking/a.py", "from ranking import b\n")
    _write(root, "ranking/b.py", b_imports_a)


def _function(name: str, body_lines: int) -> str:
    return f"def {name}():\n" + "    x = 1\n" * (body_lines - 1) + "    return x\n"


def _run(root: Path, capsys, trim: bool = False) -> tuple[int, str]:
    code = check_budgets.check(root, root / "baseline.txt", trim=trim)
    return code, capsys.readouterr().out


def test_a_function_of_61_lines_fails_and_one_of_60_passes(tmp_path, capsys):
    _write(tmp_path, "annotation/ok.py", _function("fits", 59))  # def + 59 = 60 lines
    assert _run(tmp_path, capsys)[0] == 0
    method = "".join("    " + line + "\n" for line in _function("m", 60).splitlines())
    _write(tmp_path, "annotation/long.py", "class A:\n" + method)
    code, out = _run(tmp_path, capsys)
    assert code == 1
    assert "over budget: function annotation/long.py::A.m (61 lines)" in out
    assert out.strip().endswith("1 new offender(s), 0 known (baseline), 0 fixed")


def test_a_long_test_function_passes_but_a_long_test_file_fails(tmp_path, capsys):
    _write(tmp_path, "tests/test_x.py", _function("test_long", 100))
    assert _run(tmp_path, capsys)[0] == 0
    _write(tmp_path, "tests/test_y.py", "x = 1\n" * 501)
    code, out = _run(tmp_path, capsys)
    assert code == 1
    assert "over budget: file tests/test_y.py (501 lines)" in out


def test_migrations_are_not_counted(tmp_path, capsys):
    _write(tmp_path, "annotation/migrations/0001_initial.py", _function("f", 200) + "x = 1\n" * 600)
    assert _run(tmp_path, capsys)[0] == 0


def test_a_module_level_import_cycle_fails_and_a_function_level_one_does_not(tmp_path, capsys):
    _two_modules(tmp_path, "def f():\n    from ranking import a\n")
    assert _run(tmp_path, capsys)[0] == 0
    _write(tmp_path, "ranking/b.py", "from . import a\n")
    code, out = _run(tmp_path, capsys)
    assert code == 1
    assert "over budget: cycle ranking.a ranking.b (2 modules)" in out


def test_imports_under_type_checking_do_not_make_a_cycle(tmp_path, capsys):
    _write(tmp_path, "config/__init__.py", "")
    _write(tmp_path, "config/a.py", "import config.b\n")
    _write(
        tmp_path,
        "config/b.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import config.a\n",
    )
    assert _run(tmp_path, capsys)[0] == 0


def test_a_package_importing_its_module_which_imports_the_package_is_a_cycle(tmp_path, capsys):
    _write(tmp_path, "ranking/stats/__init__.py", "from .report import build\n")
    _write(tmp_path, "ranking/stats/report.py", "from . import schema\nbuild = 1\n")
    _write(tmp_path, "ranking/stats/schema.py", "")
    code, out = _run(tmp_path, capsys)
    assert code == 1
    assert "cycle ranking.stats ranking.stats.report" in out


def test_the_baseline_allows_known_offenders_and_reports_fixed_ones(tmp_path, capsys):
    _write(tmp_path, "evaluation/x.py", _function("big", 80))
    baseline = "# comment\nfunction evaluation/x.py::big\nfunction evaluation/gone.py::old\n"
    _write(tmp_path, "baseline.txt", baseline)
    code, out = _run(tmp_path, capsys)
    assert code == 0
    assert "fixed, remove it from the baseline: function evaluation/gone.py::old" in out
    assert (tmp_path / "baseline.txt").read_text() == baseline  # a check alone writes nothing
    code, out = _run(tmp_path, capsys, trim=True)
    assert code == 0
    assert (tmp_path / "baseline.txt").read_text() == "# comment\nfunction evaluation/x.py::big\n"


def test_a_smaller_remainder_of_a_known_cycle_is_known(tmp_path, capsys):
    _two_modules(tmp_path)
    _write(tmp_path, "baseline.txt", "cycle ranking.a ranking.b ranking.c\n")
    code, out = _run(tmp_path, capsys)
    assert code == 0
    assert "0 new offender(s), 1 known (baseline), 0 fixed" in out


def test_the_project_itself_is_within_its_baseline(capsys):
    root = Path(check_budgets.__file__).resolve().parent.parent
    code = check_budgets.check(root, root / "tools" / "budgets_baseline.txt")
    assert code == 0, capsys.readouterr().out
