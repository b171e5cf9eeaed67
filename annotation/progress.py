"""Reads for the annotator and organizer pages: a rater's progress, a study's progress."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Q, Sum
from django.utils import timezone

from annotation.engine_sql import sql
from annotation.models import Assignment, Item, Rater, Study


def rater_submitted_count(*, study: Study, rater: Rater) -> int:
    return rater_status_count(study=study, rater=rater, status=Assignment.Status.SUBMITTED)


def rater_status_count(*, study: Study, rater: Rater, status: str) -> int:
    """How many of the rater's exposures in the study have this status."""
    return int(
        sql(
            "SELECT count(*) FROM annotation_assignment WHERE rater_id = %s AND study_id = %s "
            "AND status = %s",
            [rater.pk, study.pk, status],
        )[0][0]
    )


@dataclass
class RaterProgress:
    done: int
    quota: int | None
    remaining: int | None

    @property
    def percent(self) -> int:
        if self.quota:
            return min(100, round(100 * self.done / self.quota))
        total = self.done + (self.remaining or 0)
        return round(100 * self.done / total) if total else 100


def rater_progress(*, study: Study, rater: Rater, done: int | None = None) -> RaterProgress:
    """done: the rater's submitted count when the caller knows it (a submit counted it)."""
    if done is None:
        done = rater_submitted_count(study=study, rater=rater)
    quota = study.quota_for(rater.pool)
    remaining = None
    if quota is None:
        # The study's outstanding ratings: an aggregate, so it says nothing about any item. Only
        # items below N contribute (a range of the item_next index, not the whole study), and
        # every page shares one figure for a few seconds.
        def outstanding() -> int:
            n = study.ratings_per_item
            agg = Item.objects.filter(study=study, check_kind="", n_ratings__lt=n).aggregate(
                r=Sum("n_ratings"), c=Count("id")
            )
            return max(0, (agg["c"] or 0) * n - (agg["r"] or 0))

        remaining = _remaining_memo(study.public_id, outstanding)
    return RaterProgress(done=done, quota=quota, remaining=remaining)


# {study public id: (monotonic deadline, outstanding ratings)}: one figure per process for
# REMAINING_SECONDS. Kept in the process, not the shared cache, so the annotator's page costs no
# cache round trip for it; each server process computes it at most once per interval.
REMAINING_SECONDS = 5.0
_remaining: dict[str, tuple[float, int]] = {}


def _remaining_memo(key: str, compute: Callable[[], int]) -> int:
    now = time.monotonic()
    hit = _remaining.get(key)
    if hit is not None and hit[0] > now:
        return hit[1]
    if len(_remaining) > 1000:  # studies come and go; keep the map small
        _remaining.clear()
    value = compute()
    _remaining[key] = (now + REMAINING_SECONDS, value)
    return value


def study_progress(*, study: Study, now: datetime | None = None) -> dict[str, Any]:
    """Organizer view of a study: coverage, open reservations and per-annotator figures."""
    now = now or timezone.now()
    n = study.ratings_per_item
    # Quality checks are outside the coverage: they are never rated toward N.
    items = Item.objects.filter(study=study, check_kind="").aggregate(
        total=Count("id"),
        complete=Count("id", filter=Q(n_ratings__gte=n)),
        ratings=Sum("n_ratings"),
        reserved=Sum("n_reserved"),
    )
    open_q = Assignment.objects.filter(study=study, status=Assignment.Status.SERVED)
    per_rater: dict[int, dict[str, Any]] = {}
    rows = (
        Assignment.objects.filter(study=study)
        .values("rater_id", "rater__pseudonym", "rater__pool", "status", "is_repeat")
        .annotate(c=Count("id"))
    )
    for r in rows:
        entry = per_rater.setdefault(
            r["rater_id"],
            {
                "pseudonym": r["rater__pseudonym"],
                "pool": r["rater__pool"],
                "submitted": 0,
                "repeats": 0,
                "skipped": 0,
                "open": 0,
                "median_s": None,
            },
        )
        if r["status"] == Assignment.Status.SUBMITTED:
            entry["submitted"] += r["c"]
            if r["is_repeat"]:
                entry["repeats"] += r["c"]
        elif r["status"] == Assignment.Status.SKIPPED:
            entry["skipped"] += r["c"]
        elif r["status"] == Assignment.Status.SERVED:
            entry["open"] += r["c"]
    durations: dict[int, list[float]] = {}
    for rater_id, served, submitted in Assignment.objects.filter(
        study=study, status=Assignment.Status.SUBMITTED
    ).values_list("rater_id", "served_at", "submitted_at"):
        if submitted is not None:
            durations.setdefault(rater_id, []).append((submitted - served).total_seconds())
    for rater_id, ds in durations.items():
        per_rater[rater_id]["median_s"] = round(statistics.median(ds), 1)
    total_needed = (items["total"] or 0) * n
    return {
        "items_total": items["total"] or 0,
        "items_complete": items["complete"] or 0,
        "ratings": items["ratings"] or 0,
        "ratings_needed": total_needed,
        "percent": round(100 * (items["ratings"] or 0) / total_needed) if total_needed else 0,
        "open_reservations": open_q.count(),
        "lapsed_reservations": open_q.filter(expires_at__lte=now).count(),
        "annotators": sorted(per_rater.values(), key=lambda e: -e["submitted"]),
    }
