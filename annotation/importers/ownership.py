"""Whose data an import may add to (annotation.permissions has the rule).

An import by an organizer adds to their own dataset or a new one. Into another organizer's dataset
or study it is refused before anything is written, with the same words whether or not that
dataset holds anything: the name is taken, nothing of its content is shown. Into the shared
catalogue (a dataset with no owner) it may add scores of the answers stored there, in the
organizer's own studies, but no question or answer: every organizer reads that catalogue. The
command line (no user) and superusers may add anything anywhere.
"""

from __future__ import annotations

from typing import Any

from annotation.importers.bundle import ImportRefused
from annotation.importers.results import ImportResult
from annotation.models import Dataset, Study
from annotation.permissions import may_write_dataset


def check_dataset(owner: Any, dataset: Dataset) -> None:
    """Refuse an existing dataset that belongs to another organizer."""
    if dataset.owner_id is not None and not may_write_dataset(owner, dataset):
        raise ImportRefused(
            f"the dataset name {dataset.name!r} is taken by another organizer; "
            "import under another dataset name"
        )


def check_added(owner: Any, dataset: Dataset, result: ImportResult) -> None:
    """Refuse new questions or answers in a dataset the importer may not write (the shared
    catalogue); call it once they are counted."""
    if may_write_dataset(owner, dataset):
        return
    if result.added.get("questions") or result.added.get("responses"):
        raise ImportRefused(
            f"the dataset {dataset.name!r} is the shared catalogue: only an administrator adds "
            "questions or answers to it; import them under a dataset name of your own "
            "(scores of its stored answers may be imported into it)"
        )


def check_study(owner: Any, study: Study) -> None:
    """Refuse an existing study that is not the importer's."""
    if owner is None or owner.is_superuser or study.owner_id == owner.pk:
        return
    raise ImportRefused(
        f"the study name {study.name!r} is taken by another organizer; "
        "import under another study name"
    )
