"""Picking and reserving the next regular item, and taking lapsed reservations back.

Uniform studies: among items this rater was never exposed to, the lowest load level first
(ratings + live reservations), a random item within it. Adaptive studies: the highest priority
first (annotation.engine_adaptive keeps Item.priority), then the lowest load level, then shuffle
order. Either way only regular items (check_kind "") are reserved, and a reservation takes a
place under the study's N in the same statement that finds it.
"""

from __future__ import annotations

import random
from datetime import datetime
from functools import cache
from typing import Any

from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone

from annotation import engine_sql
from annotation.engine_base import (
    exposure_insert,
    exposure_insert_select,
    exposure_saved,
    exposure_values,
)
from annotation.exposure_reads import ITEM
from annotation.models import SHUFFLE_MAX, Assignment, Item, Rater, Study

# The hot query on PostgreSQL: pick the first unlocked item of one load level at or after a
# point in shuffle order that this rater was never exposed to, and reserve it, in one round trip.
# The expression matches the item_pick index; FOR UPDATE re-checks the load on the newest row
# version, SKIP LOCKED passes over rows other annotators are taking right now. For a new exposure
# the same statement also writes it (_pick_sql).
_PICK_UNIFORM = """
    SELECT i.id FROM annotation_item i
    WHERE i.study_id = %(study)s
      AND (i.n_ratings + i.n_reserved) = %(level)s
      AND i.shuffle >= %(lo)s AND i.shuffle < %(hi)s
      AND i.check_kind = ''
      AND NOT EXISTS (
          SELECT 1 FROM annotation_assignment a
          WHERE a.item_id = i.id AND a.rater_id = %(rater)s AND NOT a.is_repeat
      )
    ORDER BY i.shuffle
    LIMIT 1
    FOR UPDATE OF i SKIP LOCKED
"""
_RESERVE = """
UPDATE annotation_item SET n_reserved = annotation_item.n_reserved + 1
FROM pick WHERE annotation_item.id = pick.id
RETURNING annotation_item.id
"""

# Adaptive studies on PostgreSQL: the highest priority among items with room, in the order of
# the item_priority index, reserved in the same round trip.
_PICK_ADAPTIVE = """
    SELECT i.id FROM annotation_item i
    WHERE i.study_id = %(study)s
      AND i.check_kind = ''
      AND (i.n_ratings + i.n_reserved) < %(n)s
      AND NOT EXISTS (
          SELECT 1 FROM annotation_assignment a
          WHERE a.item_id = i.id AND a.rater_id = %(rater)s AND NOT a.is_repeat
      )
    ORDER BY i.priority DESC, (i.n_ratings + i.n_reserved), i.shuffle
    LIMIT 1
    FOR UPDATE OF i SKIP LOCKED
"""


# With the new exposure, the reservation returns the whole item row as it is after the update.
_RESERVE_ROW = _RESERVE.replace("RETURNING annotation_item.id", "RETURNING annotation_item.*")


@cache
def _pick_sql(pick: str, insert: bool) -> str:
    """The pick and its reservation in one statement; with insert, the new exposure is written
    by the same statement (engine_base.exposure_insert_select), which then returns its id, the
    item's, and the item with its question and answers as exposure_reads.ITEM reads them (the
    next screen shows them: no read of its own)."""
    if not insert:
        return f"WITH pick AS ({pick}) {_RESERVE}"
    exposure = exposure_insert_select("reserved", "id")
    shown = ITEM.select_over("x CROSS JOIN reserved i", ["x.id", "x.item_id"])
    return f"WITH pick AS ({pick}), reserved AS ({_RESERVE_ROW}), x AS ({exposure}) {shown}"


def _unseen(study: Study, rater: Rater) -> QuerySet[Item]:
    seen = Assignment.objects.filter(item=OuterRef("pk"), rater=rater, is_repeat=False)
    return (
        Item.objects.filter(study=study, check_kind="")
        .alias(load=F("n_ratings") + F("n_reserved"))
        .filter(~Exists(seen))
    )


# What a reservation gives: the item's id, and the new exposure's id and its item (with the
# question and answers) when the pick's statement wrote the exposure as well.
Reserved = tuple[int, int | None, Item | None]


def _reserve_uniform(
    *, study: Study, rater: Rater, rng: random.Random, exposure: dict[str, Any] | None
) -> Reserved | None:
    if engine_sql.uses_row_locks():
        statement = _pick_sql(_PICK_UNIFORM, exposure is not None)
        cursor = engine_sql.cursor()
        for level in range(study.ratings_per_item):
            pivot = rng.randrange(SHUFFLE_MAX)
            for lo, hi in ((pivot, SHUFFLE_MAX + 1), (0, pivot)):
                where = {"study": study.pk, "level": level, "lo": lo, "hi": hi}
                cursor.execute(statement, {**where, "rater": rater.pk, **(exposure or {})})
                row = cursor.fetchone()
                if row is not None:
                    return _reserved(row, exposure)
        return None
    # Elsewhere (SQLite: one writer at a time) the same pick through the ORM.
    base = _unseen(study, rater)
    for level in range(study.ratings_per_item):
        pivot = rng.randrange(SHUFFLE_MAX)
        for half in (Q(shuffle__gte=pivot), Q(shuffle__lt=pivot)):
            item_id = (
                base.filter(half, load=level)  # type: ignore[misc]  # the stubs miss alias()
                .order_by("shuffle")
                .values_list("pk", flat=True)
                .first()
            )
            if item_id is not None:
                Item.objects.filter(pk=item_id).update(n_reserved=F("n_reserved") + 1)
                return item_id, None, None
    return None


def _reserved(row: tuple[Any, ...], exposure: dict[str, Any] | None) -> Reserved:
    """What a pick's row says: (item) or, with the exposure, (exposure, item, the item read)."""
    if exposure is None:
        return int(row[0]), None, None
    item = ITEM.instances(row, 2)
    return int(row[1]), int(row[0]), item if isinstance(item, Item) else None


def _reserve_adaptive(
    *, study: Study, rater: Rater, exposure: dict[str, Any] | None
) -> Reserved | None:
    if engine_sql.uses_row_locks():
        rows = engine_sql.sql(
            _pick_sql(_PICK_ADAPTIVE, exposure is not None),
            {"study": study.pk, "n": study.ratings_per_item, "rater": rater.pk, **(exposure or {})},
        )
        return _reserved(rows[0], exposure) if rows else None
    item_id = (
        _unseen(study, rater)
        .filter(load__lt=study.ratings_per_item)  # type: ignore[misc]  # the stubs miss alias()
        .order_by("-priority", "load", "shuffle")
        .values_list("pk", flat=True)
        .first()
    )
    if item_id is None:
        return None
    Item.objects.filter(pk=item_id).update(n_reserved=F("n_reserved") + 1)
    return item_id, None, None


def _reserve(
    *, study: Study, rater: Rater, rng: random.Random, exposure: dict[str, Any] | None = None
) -> Reserved | None:
    if study.assignment_mode == Study.AssignmentMode.ADAPTIVE:
        return _reserve_adaptive(study=study, rater=rater, exposure=exposure)
    return _reserve_uniform(study=study, rater=rater, rng=rng, exposure=exposure)


def reserve_item(*, study: Study, rater: Rater, rng: random.Random) -> int | None:
    """Pick and reserve one regular item. Returns the item id with n_reserved already
    incremented, or None when nothing is left for this rater."""
    reserved = _reserve(study=study, rater=rater, rng=rng)
    return reserved[0] if reserved is not None else None


def reserve_or_reclaim(
    *, study: Study, rater: Rater, now: datetime, rng: random.Random
) -> int | None:
    """Reserve an item; when none is free, reclaim lapsed leases first and try once more."""
    item_id = reserve_item(study=study, rater=rater, rng=rng)
    if item_id is None and assignments_expire(study=study, now=now):
        item_id = reserve_item(study=study, rater=rater, rng=rng)
    return item_id


def reserve_exposure(a: Assignment, *, now: datetime, rng: random.Random) -> Assignment | None:
    """Reserve an item for the unsaved exposure `a` (engine_base.exposure_new, no item yet) and
    write it, reclaiming lapsed leases when nothing is free, as reserve_or_reclaim does. On
    PostgreSQL the pick's own statement writes the exposure (one round trip for both) and
    returns its item with the question and answers, attached to the exposure; elsewhere it is
    inserted after the reservation. None when nothing is left for the rater."""
    exposure = exposure_values(a) if engine_sql.uses_row_locks() else None
    reserved = _reserve(study=a.study, rater=a.rater, rng=rng, exposure=exposure)
    if reserved is None and assignments_expire(study=a.study, now=now):
        reserved = _reserve(study=a.study, rater=a.rater, rng=rng, exposure=exposure)
    if reserved is None:
        return None
    a.item_id, pk, item = reserved
    if pk is None:
        return exposure_insert(a)
    if item is not None:
        a.item = item
    return exposure_saved(a, pk)


@transaction.atomic
def assignments_expire(*, study: Study | None = None, now: datetime | None = None) -> int:
    """Expire lapsed reservations and return their items to the pool. Returns how many.
    Repeats and quality checks hold no place, so nothing goes back for them."""
    now = now or timezone.now()
    qs = Assignment.objects.filter(status=Assignment.Status.SERVED, expires_at__lte=now)
    if study is not None:
        qs = qs.filter(study=study)
    if engine_sql.uses_row_locks():
        qs = qs.select_for_update(skip_locked=True)
    rows = list(qs.order_by("pk").values_list("pk", "item_id", "is_repeat")[:5000])
    if not rows:
        return 0
    Assignment.objects.filter(pk__in=[r[0] for r in rows]).update(
        status=Assignment.Status.EXPIRED, expired_at=now
    )
    per_item: dict[int, int] = {}
    for _pk, item_id, is_repeat in rows:
        if not is_repeat:
            per_item[item_id] = per_item.get(item_id, 0) + 1
    for item_id in sorted(per_item):
        Item.objects.filter(pk=item_id, check_kind="").update(
            n_reserved=F("n_reserved") - per_item[item_id]
        )
    return len(rows)
