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
    if rater.kind != Rater.Kind.HUMAN or not study.admits(rater.pool):
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


_EXPOSURE_INSERT = (
    "INSERT INTO annotation_assignment (public_id, study_id, item_id, rater_id, seq, status, "
    "left_is_a, hint_shown, is_repeat, repeat_of_id, served_at, expires_at, client_tag) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
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


def exposure_create(
    slot: Slot,
    *,
    item_id: int,
    left_is_a: bool,
    hint_shown: bool,
    is_repeat: bool = False,
    repeat_of_id: int | None = None,
) -> Assignment:
    """Insert an exposure (one statement) and return it as a model instance."""
    a = Assignment(
        public_id=uuid.uuid4(),
        status=Assignment.Status.SERVED,
        **slot.fields(),
        item_id=item_id,
        left_is_a=left_is_a,
        hint_shown=hint_shown,
        is_repeat=is_repeat,
        repeat_of_id=repeat_of_id,
    )
    db = engine_sql.db_value
    a.pk = engine_sql.sql(
        _EXPOSURE_INSERT,
        [
            db(Assignment, "public_id", a.public_id),
            a.study_id,
            a.item_id,
            a.rater_id,
            a.seq,
            a.status,
            a.left_is_a,
            a.hint_shown,
            a.is_repeat,
            a.repeat_of_id,
            db(Assignment, "served_at", a.served_at),
            db(Assignment, "expires_at", a.expires_at),
            a.client_tag,
        ],
    )[0][0]
    a._state.adding = False
    a._state.db = connection.alias
    return a
