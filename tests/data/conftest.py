"""Fixtures for the data tests: the compact real data in fixtures/, a way to count every table, and
corrupted temporary copies of real files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from annotation.importers import dataset_import

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
