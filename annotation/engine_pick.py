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

from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone

from annotation import engine_sql
from annotation.models import SHUFFLE_MAX, Assignment, Item, Rater, Study

# The hot query on PostgreSQL: pick the first unlocked item of one load level at or after a
# point in shuffle order that this rater was never exposed to, and reserve it, in one round trip.
# The expression matches the item_pick index; FOR UPDATE re-checks the load on the newest row
# version, SKIP LOCKED passes over rows other annotators are taking right now.
_PICK_SQL = """
WITH pick AS (
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
)
UPDATE annotation_item SET n_reserved = annotation_item.n_reserved + 1
FROM pick WHERE annotation_item.id = pick.id
RETURNING annotation_item.id
"""

# Adaptive studies on PostgreSQL: the highest priority among items with room, in the order of
# the item_priority index, reserved in the same round trip.
_PICK_ADAPTIVE_SQL = """
WITH pick AS (
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
)
UPDATE annotation_item SET n_reserved = annotation_item.n_reserved + 1
FROM pick WHERE annotation_item.id = pick.id
RETURNING annotation_item.id
"""


def _unseen(study: Study, rater: Rater) -> QuerySet[Item]:
    seen = Assignment.objects.filter(item=OuterRef("pk"), rater=rater, is_repeat=False)
    return (
        Item.objects.filter(study=study, check_kind="")
        .alias(load=F("n_ratings") + F("n_reserved"))
        .filter(~Exists(seen))
    )


def _reserve_uniform(*, study: Study, rater: Rater, rng: random.Random) -> int | None:
    if engine_sql.uses_row_locks():
        with connection.cursor() as cursor:
            for level in range(study.ratings_per_item):
                pivot = rng.randrange(SHUFFLE_MAX)
                for lo, hi in ((pivot, SHUFFLE_MAX + 1), (0, pivot)):
                    cursor.execute(
                        _PICK_SQL,
                        {"study": study.pk, "level": level, "lo": lo, "hi": hi, "rater": rater.pk},
                    )
                    row = cursor.fetchone()
                    if row is not None:
                        return int(row[0])
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
                return item_id
    return None


def _reserve_adaptive(*, study: Study, rater: Rater) -> int | None:
    if engine_sql.uses_row_locks():
        rows = engine_sql.sql(
            _PICK_ADAPTIVE_SQL,
            {"study": study.pk, "n": study.ratings_per_item, "rater": rater.pk},
        )
        return int(rows[0][0]) if rows else None
    item_id = (
        _unseen(study, rater)
        .filter(load__lt=study.ratings_per_item)  # type: ignore[misc]  # the stubs miss alias()
        .order_by("-priority", "load", "shuffle")
        .values_list("pk", flat=True)
        .first()
    )
    if item_id is not None:
        Item.objects.filter(pk=item_id).update(n_reserved=F("n_reserved") + 1)
    return item_id


def reserve_item(*, study: Study, rater: Rater, rng: random.Random) -> int | None:
    """Pick and reserve one regular item. Returns the item id with n_reserved already
    incremented, or None when nothing is left for this rater."""
    if study.assignment_mode == Study.AssignmentMode.ADAPTIVE:
        return _reserve_adaptive(study=study, rater=rater)
    return _reserve_uniform(study=study, rater=rater, rng=rng)


def reserve_or_reclaim(
    *, study: Study, rater: Rater, now: datetime, rng: random.Random
) -> int | None:
    """Reserve an item; when none is free, reclaim lapsed leases first and try once more."""
    item_id = reserve_item(study=study, rater=rater, rng=rng)
    if item_id is None and assignments_expire(study=study, now=now):
        item_id = reserve_item(study=study, rater=rater, rng=rng)
    return item_id


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
