"""Running an import: parse -> validated bundle -> one writer, inside one transaction.

A format module only parses: it turns its files into a `Bundle` (bundle.py: questions, responses,
ratings as plain dataclasses) and notes repairs and flags on the way, or raises `ImportRefused`
naming the file and the record. `write_bundle` (writer.py) then does the database work the same
way for every format. This module keeps the names the formats import from one place.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import translation

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
    owner: Any = None  # who imports (None: the command line): names resolve among theirs

    def bundle(self, default: str, description: str, source: str) -> Bundle:
        """An empty bundle for the chosen dataset, else the format's own."""
        return Bundle(
            dataset=self.dataset or default, dataset_description=description, dataset_source=source
        )


@dataclass(frozen=True)
class ImportRequest:
    """One import as asked for: the format and its files, the options its parse() reads, who
    asks (recorded as owner when signed in) and whether only to check. Passed whole from
    `dataset_import` to `run_import`, whose result and ImportRecord it fills."""

    format: str
    paths: tuple[Path, ...]
    options: Options = Options()
    user: Any = None
    dry_run: bool = False

    @property
    def owner(self) -> Any:
        return self.user if getattr(self.user, "is_authenticated", False) else None

    def record(self, *, ok: bool, repairs: list[Repair], **fields: Any) -> ImportRecord:
        """The ImportRecord of this attempt (file names only, never a client's path)."""
        return ImportRecord.objects.create(
            format=self.format,
            paths=[p.name for p in self.paths],
            user=self.owner,
            ok=ok,
            repairs=[r.line() for r in repairs],
            **fields,
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


def run_import(request: ImportRequest, parse: Callable[[RepairLog], Bundle]) -> ImportResult:
    """Parse, then write everything in one transaction. A refusal writes nothing but a failed
    ImportRecord (kept outside the rolled-back transaction, so attempts stay visible)."""
    result = ImportResult(
        format=request.format, paths=[str(p) for p in request.paths], dry_run=request.dry_run
    )
    repairs = RepairLog()
    try:
        t = clock()
        with _no_cyclic_gc():
            bundle = parse(repairs)
        result.repairs = list(repairs)
        t = result.timed("parse", t)
        with transaction.atomic():
            pgcopy.commit_unflushed()  # an import that is lost in a crash is run again
            with _no_cyclic_gc():
                write_bundle(
                    bundle, result, owner=request.owner, progress_enabled=request.options.progress
                )
            if request.dry_run:
                raise _DryRun
            result.record_id = request.record(
                ok=True,
                repairs=result.repairs,
                dataset_id=result.dataset_id,
                counts=result.counts(),
                message="\n".join(result.summary_lines()),
            ).pk
            t = clock()
        result.timed("commit", t)
    except _DryRun:
        pass
    except ImportRefused as exc:
        if not request.dry_run:
            with translation.override("en"):  # the record keeps the message in English
                request.record(ok=False, repairs=list(repairs), message=str(exc))
        raise
    return result


__all__ = [
    "ENTITIES",
    "Bar",
    "Bundle",
    "ImportRefused",
    "ImportRequest",
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
