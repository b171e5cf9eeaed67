"""Running an import: parse -> validated bundle -> one writer, inside one transaction.

A format module only parses: it turns its files into a `Bundle` (bundle.py: questions, responses,
ratings as plain dataclasses) and notes repairs and flags on the way, or raises `ImportRefused`
naming the file and the record. `write_bundle` (writer.py) then does the database work the same
way for every format. This module keeps the names the formats import from one place.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from annotation import pgcopy
from annotation.importers.bundle import (
    Bundle,
    ImportRefused,
    QuestionSpec,
    RaterSpec,
    RatingSpec,
    ResponseSpec,
    StudySpec,
)
from annotation.importers.reading import Bar, as_text, at, check_score, progress, whole_number
from annotation.importers.results import ENTITIES, ImportResult, Repair, RepairLog, clock
from annotation.importers.writer import write_bundle
from annotation.models import ImportRecord


@dataclass(frozen=True)
class Options:
    """What the user chose for an import; each format's parse() reads the options it takes."""

    dataset: str | None = None
    study: str | None = None
    rater: str | None = None
    rater_kind: str | None = None
    rubric: str | None = None
    progress: bool = True

    def bundle(self, default: str, description: str, source: str) -> Bundle:
        """An empty bundle for the chosen dataset, else the format's own."""
        return Bundle(
            dataset=self.dataset or default, dataset_description=description, dataset_source=source
        )


class _DryRun(Exception):
    pass


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """A million-record import allocates millions of small objects that all live to the end:
    the cyclic garbage collector would walk them again and again and find nothing to free."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def run_import(
    *,
    format: str,
    paths: Sequence[str | Path],
    parse: Callable[[RepairLog], Bundle],
    user=None,
    dry_run: bool = False,
    progress_enabled: bool = True,
) -> ImportResult:
    """Parse, then write everything in one transaction. A refusal writes nothing but a failed
    ImportRecord (kept outside the rolled-back transaction, so attempts stay visible)."""
    result = ImportResult(format=format, paths=[str(p) for p in paths], dry_run=dry_run)
    repairs = RepairLog()
    owner = user if getattr(user, "is_authenticated", False) else None
    try:
        t = clock()
        with _no_cyclic_gc():
            bundle = parse(repairs)
        result.repairs = list(repairs)
        t = result.timed("parse", t)
        with transaction.atomic():
            pgcopy.commit_unflushed()  # an import that is lost in a crash is run again
            with _no_cyclic_gc():
                write_bundle(bundle, result, owner=owner, progress_enabled=progress_enabled)
            if dry_run:
                raise _DryRun
            record = ImportRecord.objects.create(
                format=format,
                paths=[Path(p).name for p in paths],
                dataset_id=result.dataset_id,
                user=owner,
                ok=True,
                counts=result.counts(),
                repairs=[r.line() for r in result.repairs],
                message="\n".join(result.summary_lines()),
            )
            result.record_id = record.pk
            t = clock()
        result.timed("commit", t)
    except _DryRun:
        pass
    except ImportRefused as exc:
        if not dry_run:
            ImportRecord.objects.create(
                format=format,
                paths=[Path(p).name for p in paths],
                user=owner,
                ok=False,
                message=str(exc),
                repairs=[r.line() for r in repairs],
            )
        raise
    return result


__all__ = [
    "ENTITIES",
    "Bar",
    "Bundle",
    "ImportRefused",
    "ImportResult",
    "Options",
    "QuestionSpec",
    "RaterSpec",
    "RatingSpec",
    "Repair",
    "RepairLog",
    "ResponseSpec",
    "StudySpec",
    "as_text",
    "at",
    "check_score",
    "progress",
    "run_import",
    "whole_number",
    "write_bundle",
]
