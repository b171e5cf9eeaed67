"""One way to record finished ratings in bulk: an assignment (the exposure), its rating and the
rating's scores, a few multi-row INSERTs per batch.

Importers, the judge recorder (evaluation) and the simulator (ranking) all write ratings that are
already complete, so they share this service instead of each building Assignment, Rating and
Score rows by hand. The assignment engine, which serves one item at a time and reserves it first,
keeps its own path.

A repeat exposure names its origin either by id (`repeat_of_id`, an assignment already stored)
or by another `NewRating` of the same call (`repeat_of`); origins are written first.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from annotation.models import Assignment, Rating, Score

BATCH = 2000


@dataclass
class NewRating:
    """A finished rating to record. Scores map criterion ids to values; `out_of_range` names the
    criterion ids whose published value lies outside the rubric's range (kept as given)."""

    study_id: int
    item_id: int
    rater_id: int
    choice: str = ""
    scores: dict[int, int] = field(default_factory=dict)
    out_of_range: frozenset[int] = frozenset()
    left_is_a: bool = True
    hint_shown: bool = False
    is_repeat: bool = False
    repeat_of_id: int | None = None
    repeat_of: NewRating | None = None
    seq: int = 0
    served_at: dt.datetime | None = None
    submitted_at: dt.datetime | None = None
    active_ms: int | None = None
    comment: str = ""
    parse_status: str = ""
    raw_output: str = ""
    # Filled in by ratings_record_bulk.
    assignment: Assignment | None = None
    rating: Rating | None = None


def _assignment(row: NewRating, now: dt.datetime) -> Assignment:
    submitted = row.submitted_at or now
    origin = row.repeat_of.assignment if row.repeat_of is not None else None
    return Assignment(
        study_id=row.study_id,
        item_id=row.item_id,
        rater_id=row.rater_id,
        seq=row.seq,
        status=Assignment.Status.SUBMITTED,
        left_is_a=row.left_is_a,
        hint_shown=row.hint_shown,
        is_repeat=row.is_repeat,
        repeat_of_id=origin.pk if origin is not None else row.repeat_of_id,
        served_at=row.served_at or submitted,
        submitted_at=submitted,
        active_ms=row.active_ms,
    )


def _rating(row: NewRating) -> Rating:
    a = row.assignment
    return Rating(
        assignment=a,
        item_id=row.item_id,
        rater_id=row.rater_id,
        choice=row.choice,
        comment=row.comment,
        parse_status=row.parse_status,
        raw_output=row.raw_output,
        created_at=a.submitted_at,
        updated_at=a.submitted_at,
    )


def _scores(rows: Sequence[NewRating]) -> list[Score]:
    return [
        Score(
            rating=row.rating, criterion_id=cid, value=value, out_of_range=cid in row.out_of_range
        )
        for row in rows
        for cid, value in row.scores.items()
    ]


def _write(rows: list[NewRating], now: dt.datetime, batch: int) -> int:
    assignments = Assignment.objects.bulk_create(
        [_assignment(r, now) for r in rows], batch_size=batch
    )
    if any(a.pk is None for a in assignments):
        raise RuntimeError("the database backend did not return ids from a bulk insert")
    for row, a in zip(rows, assignments, strict=True):
        row.assignment = a
    ratings = Rating.objects.bulk_create([_rating(r) for r in rows], batch_size=batch)
    for row, rating in zip(rows, ratings, strict=True):
        row.rating = rating
    return len(Score.objects.bulk_create(_scores(rows), batch_size=batch * 2))


@transaction.atomic
def ratings_record_bulk(
    *,
    rows: Sequence[NewRating],
    batch: int = BATCH,
    on_batch: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Write the rows' assignments, ratings and scores; origins before their repeats. Returns
    the counts written. Each row gets its `assignment` and `rating` (with primary keys)."""
    now = timezone.now()
    pending = list(rows)
    counts = {"assignments": 0, "ratings": 0, "scores": 0}
    while pending:
        ready = [r for r in pending if r.repeat_of is None or r.repeat_of.assignment is not None]
        if not ready:
            raise ValueError("a repeat names an origin that is not among the rows")
        ready_ids = {id(r) for r in ready}
        pending = [r for r in pending if id(r) not in ready_ids]
        for start in range(0, len(ready), batch):
            chunk = ready[start : start + batch]
            counts["scores"] += _write(chunk, now, batch)
            counts["assignments"] += len(chunk)
            counts["ratings"] += len(chunk)
            if on_batch is not None:
                on_batch(len(chunk))
    return counts
