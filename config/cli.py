"""What the management commands share: naming a row on the command line by id or name, on/off
switches, and handing options on to a service under their own names."""

from __future__ import annotations

from argparse import ArgumentParser, ArgumentTypeError
from typing import Any, Protocol

from django.core.management.base import CommandError
from django.db import models

from annotation.limits import parse_id
from annotation.permissions import AmbiguousName, one_named


def row_id(text: str) -> int:
    """An argparse type for a row id: plain ASCII digits that fit a bigint (int() would take
    '١٢' and '1_0', and a 30-digit id was an OverflowError traceback at the query)."""
    value = parse_id(text)
    if value is None:
        raise ArgumentTypeError(f"{text!r} is not a row id (ASCII digits, at most 18)")
    return value


def add_study_argument(parser: ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument("--study", required=required, help="Study id or exact name.")


class _Arguments(Protocol):
    """An ArgumentParser or one of its groups."""

    def add_argument(self, *args: Any, **kwargs: Any) -> Any: ...


def add_switches(parser: _Arguments, switches: dict[str, str]) -> None:
    """On/off flags (off unless given), in the order given, each with its help text."""
    for flag, help_text in switches.items():
        parser.add_argument(flag, action="store_true", help=help_text)


def passed_on(opts: dict[str, Any], *names: str) -> dict[str, Any]:
    """The options named, under their own names: what a command hands to a service unchanged."""
    return {name: opts[name] for name in names}


def object_by_ref[M: models.Model](model: type[M], ref: str, *, field: str = "name") -> M:
    """The row whose id is ref (ASCII digits) or else whose `field` is ref; a CommandError that
    names ref when there is none or several. An id wins: a study named "12" is found by its own id."""
    pk = parse_id(ref)
    found = model._default_manager.filter(pk=pk).first() if pk is not None else None
    if found is None and "\x00" not in ref:  # PostgreSQL text cannot hold NUL: no such row
        found = _by_name(model, field, ref)
    if found is None:
        raise CommandError(f"No {model._meta.verbose_name} {ref!r} (by id or {field}).")
    return found


def _by_name[M: models.Model](model: type[M], field: str, ref: str) -> M | None:
    """Names are unique per owner where rows have one: the shared (ownerless) row first, else
    the only one; a CommandError listing the ids when several organizers use the name."""
    qs = model._default_manager.all()
    if not any(f.name == "owner" for f in model._meta.fields):
        return qs.filter(**{field: ref}).first()
    try:
        return one_named(qs, None, **{field: ref})
    except AmbiguousName as e:
        raise CommandError(str(e)) from None
