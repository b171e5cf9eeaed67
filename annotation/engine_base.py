"""What every part of the assignment engine shares: its errors, the admission rule, the rater's
row lock and the one-statement insert of an exposure."""

from __future__ import annotations

import dataclasses
import random
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Field

from annotation import engine_sql
from annotation.models import Assignment, Rater, Study

# At least this many other exposures between an item and its hidden repeat.
REPEAT_GAP = 5
# How many of their latest submissions an annotator may go back to and change.
RECENT_EDITS = 10

rng_default = random.SystemRandom()


class StudyUnavailable(Exception):
    """The study is not live (draft, paused or closed)."""


class NotAdmitted(Exception):
    """The study does not admit this rater's pool."""


class AssignmentGone(Exception):
    """The assignment cannot take a rating any more (skipped, or expired and given away)."""


def check_admission(*, study: Study, rater: Rater) -> None:
    if study.status != Study.Status.LIVE:
        raise StudyUnavailable(study.status)
    if rater.kind != Rater.Kind.HUMAN or not study.admits_rater(rater):
        raise NotAdmitted(rater.pool)


def hint_for(study: Study, rng: random.Random) -> bool:
    if study.hint_policy == Study.HintPolicy.SHOWN:
        return True
    if study.hint_policy == Study.HintPolicy.RANDOM:
        return rng.random() < 0.5
    return False


def lock_rater(rater: Rater) -> None:
    # One request per rater at a time: double clicks and parallel tabs queue here. Always the
    # first lock a service takes (rater -> assignment -> item), so services cannot deadlock.
    engine_sql.sql(
        f"SELECT id FROM annotation_rater WHERE id = %s{engine_sql.for_update()}", [rater.pk]
    )


_EXPOSURE_COLUMNS = (
    "public_id", "study_id", "item_id", "rater_id", "seq", "status", "left_is_a", "hint_shown",
    "is_repeat", "repeat_of_id", "served_at", "expires_at", "client_tag",
)  # fmt: skip
_EXPOSURE_INSERT = (
    f"INSERT INTO annotation_assignment ({', '.join(_EXPOSURE_COLUMNS)}) "
    f"VALUES ({', '.join(['%s'] * len(_EXPOSURE_COLUMNS))}) RETURNING id"
)


@dataclass(frozen=True)
class Slot:
    """Where a new exposure goes: the rater's next position in the study, with its lease."""

    study: Study
    rater: Rater
    seq: int
    served_at: datetime
    expires_at: datetime
    client_tag: str

    def fields(self) -> dict[str, Any]:
        """The slot as the fields of its Assignment (they have the same names)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def exposure_new(
    slot: Slot,
    *,
    item_id: int | None,
    left_is_a: bool,
    hint_shown: bool,
    is_repeat: bool = False,
    repeat_of_id: int | None = None,
) -> Assignment:
    """The exposure as an unsaved model instance (item_id None: the pick decides it)."""
    a = Assignment(
        public_id=uuid.uuid4(),
        status=Assignment.Status.SERVED,
        **slot.fields(),
        left_is_a=left_is_a,
        hint_shown=hint_shown,
        is_repeat=is_repeat,
        repeat_of_id=repeat_of_id,
    )
    a.item_id = item_id  # type: ignore[assignment]  # None until the pick decides it
    return a


def exposure_values(a: Assignment) -> dict[str, Any]:
    """The exposure's columns as statement parameters, prepared as the ORM would store them."""
    db = engine_sql.db_value
    return {
        column: db(Assignment, column, getattr(a, column))
        if column in ("public_id", "served_at", "expires_at")
        else getattr(a, column)
        for column in _EXPOSURE_COLUMNS
    }


def exposure_saved(a: Assignment, pk: int) -> Assignment:
    """The instance once its row is written: it is an ordinary loaded model from here on."""
    a.pk = pk
    a._state.adding = False
    a._state.db = connection.alias
    return a


def exposure_insert(a: Assignment) -> Assignment:
    """Write an exposure built by exposure_new (one statement) and return it."""
    values = list(exposure_values(a).values())
    return exposure_saved(a, engine_sql.sql(_EXPOSURE_INSERT, values)[0][0])


def exposure_insert_select(source: str, item_column: str) -> str:
    """INSERT ... SELECT of an exposure whose item comes from `source` (a CTE of the same
    statement; nothing is inserted when it is empty); the other columns are the named
    parameters of exposure_values, each cast to its column's type (a parameter in a select list
    has no type of its own). Returns the new exposure's id and its item's."""
    items = []
    for column in _EXPOSURE_COLUMNS:
        if column == "item_id":
            items.append(f"{source}.{item_column}")
            continue
        field = Assignment._meta.get_field(column)  # by column name (attname) too
        assert isinstance(field, Field)
        text = field.get_internal_type() in ("CharField", "TextField")
        # Text as text: a cast to varchar(n) would cut a longer value instead of refusing it.
        items.append(f"CAST(%({column})s AS {'text' if text else field.cast_db_type(connection)})")
    return (
        f"INSERT INTO annotation_assignment ({', '.join(_EXPOSURE_COLUMNS)}) "
        f"SELECT {', '.join(items)} FROM {source} "
        "RETURNING annotation_assignment.id, annotation_assignment.item_id"
    )
