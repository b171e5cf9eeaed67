"""Fixtures for the data tests: the compact real data in fixtures/, a way to count every table, and
corrupted temporary copies of real files."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import transaction

from annotation.importers import dataset_import
from annotation.models import Item, Response, Score, Study
from ranking.services import ReportFilters, report_build

# Test modules import these from here.
from tests.factories import FIXTURES, L2, SHARED, l2_files, table_counts

__all__ = ["FIXTURES", "L2", "SHARED", "l2_files", "table_counts"]


@pytest.fixture
def l2_scores_imported(db):
    """The fixture LLMEval-2 subjects with both score sets."""
    return dataset_import(
        format="llmeval2-scores",
        paths=l2_files("results/human-score") + l2_files("results/gpt-score"),
        progress=False,
    )


@pytest.fixture
def cae_imported(db):
    return dataset_import(
        format="chinese-alpaca-eval", paths=[FIXTURES / "chinese-alpaca-eval"], progress=False
    )


@pytest.fixture
def corrupt_json(tmp_path) -> Callable:
    """Copy a real JSON file into tmp (keeping its folder name) and change one record."""

    def make(src: Path, mutate: Callable[[list], None]) -> Path:
        target = tmp_path / src.parent.name / src.name
        target.parent.mkdir(parents=True, exist_ok=True)
        data = json.loads(src.read_text(encoding="utf-8"))
        mutate(data)
        target.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        return target

    return make


@pytest.fixture
def copy_tree(tmp_path) -> Callable:
    def make(src: Path) -> Path:
        target = tmp_path / src.name
        shutil.copytree(src, target)
        return target

    return make


# --- The published data sets in ../shared/data (test_published_figures, test_published_readme) --

PUBLISHED_OPTIONS = {"n_shuffles": 0, "n_bootstrap": 0, "gap_ks": (1, 2, 3, 4)}


def require(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"the published data is not present at {path} (see ../shared/data/README.md)")


def published_import(fmt: str, *paths) -> None:
    """Import files the way a user would: `manage.py import_dataset`."""
    out = io.StringIO()
    call_command("import_dataset", *map(str, paths), format=fmt, no_progress=True, stdout=out)


def published_report(study_name: str) -> dict:
    """The report's tables (point estimates: no shuffles or bootstrap) of the named study."""
    study = Study.objects.get(name=study_name)
    filters = ReportFilters.build(**PUBLISHED_OPTIONS)
    return report_build(study=study, filters=filters, use_cache=False).tables


@pytest.fixture(scope="session")
def llmeval2(django_db_setup, django_db_blocker):
    """LLMEval-2 imported as a user would (questions and answers, then both score sets); the
    report's tables, and the flagged scores. Rolled back afterwards. Session-scoped: the release
    is imported once for every module that checks its published figures."""
    l2 = SHARED / "llmeval-2"
    require(l2)
    with django_db_blocker.unblock(), transaction.atomic():
        published_import("llmeval2", *sorted((l2 / "data").glob("*_data.json")))
        published_import(
            "llmeval2-scores",
            *sorted((l2 / "results" / "human-score").glob("*.json")),
            *sorted((l2 / "results" / "gpt-score").glob("*.json")),
        )
        tables = published_report("LLMEval-2 (imported scores)")
        flagged = sorted(
            Score.objects.filter(out_of_range=True).values_list("criterion__key", "value")
        )
        transaction.set_rollback(True)
    return {"tables": tables, "flagged": flagged}


@pytest.fixture
def star_items(small_dataset, star_rubric):
    """A closed star study with one item per answer to Q1: (study, items)."""
    study = Study.objects.create(
        name="s", dataset=small_dataset, mode="star", rubric=star_rubric, status="closed"
    )
    items = [
        Item.objects.create(study=study, question=r.question, response_a=r)
        for r in Response.objects.filter(question__external_id="Q1").order_by("id")
    ]
    return study, items
