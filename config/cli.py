"""What the management commands share: naming a row on the command line by id or name."""

from __future__ import annotations

from argparse import ArgumentParser

from django.core.management.base import CommandError
from django.db import models

from annotation.limits import parse_id


def add_study_argument(parser: ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument("--study", required=required, help="Study id or exact name.")


def object_by_ref[M: models.Model](model: type[M], ref: str, *, field: str = "name") -> M:
    """The row whose id is ref (ASCII digits) or else whose `field` is ref; a CommandError that
    names ref when there is none. An id wins: a study named "12" is found by its own id."""
    pk = parse_id(ref)
    found = model._default_manager.filter(pk=pk).first() if pk is not None else None
    if found is None and "\x00" not in ref:  # PostgreSQL text cannot hold NUL: no such row
        found = model._default_manager.filter(**{field: ref}).first()
    if found is None:
        raise CommandError(f"No {model._meta.verbose_name} {ref!r} (by id or {field}).")
    return found
