"""The report's data-quality table: what in the study's data is not as a rubric expects, how
much of it there is and how the statistics treat it (data as given: nothing is changed).

Every count follows the report's filters (``QualityScope``: pools, rater kinds, task types,
criteria, time range), as the rest of the report does; ``checks_in_scope`` narrows the check
ratings behind the report's gold-accuracy table the same way.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd
from django.db.models import Count, Q

from annotation.models import Item, ParseStatus, Rating, Response, Score, Study
from evaluation.selectors import unparsed_judge_outputs

COLUMNS = ["issue", "criterion", "n", "treatment"]
OUT_OF_RANGE = "score outside the rubric's range"
EMPTY = "empty answer"
UNPARSED = "unparsed judge output"
TREATMENT = {
    OUT_OF_RANGE: "kept as given and flagged (Score.out_of_range); included in every statistic",
    EMPTY: "kept and rated as given (length 0); included in every statistic",
    UNPARSED: (
        "raw text kept (the imported rating's or the judge call's raw output); no score or "
        "choice, left out of the statistics"
    ),
}


@dataclass(frozen=True)
class QualityScope:
    """The report's filters, as the quality counts apply them (``None`` or empty: no filter).
    Time bounds are half-open (start <= submitted < end), as in ``ranking.stats.filters``."""

    pools: tuple[str, ...] = ()
    rater_kinds: tuple[str, ...] = ()
    task_types: tuple[str, ...] = ()
    criteria: tuple[str, ...] = ()
    start: dt.datetime | None = None
    end: dt.datetime | None = None

    @classmethod
    def of(cls, *, criteria: Iterable[str] | None = None, **kw) -> QualityScope:
        """From ``filter_frame``-style keyword arguments (iterables or None)."""
        tuples = {k: tuple(kw.get(k) or ()) for k in ("pools", "rater_kinds", "task_types")}
        return cls(
            **tuples, criteria=tuple(criteria or ()), start=kw.get("start"), end=kw.get("end")
        )

    def narrows(self) -> bool:
        return any(
            (
                self.pools,
                self.rater_kinds,
                self.task_types,
                self.start is not None,
                self.end is not None,
            )
        )

    def ratings_q(self, prefix: str = "") -> Q:
        """The ratings in scope (``prefix`` is the path to the rating, e.g. "rating__")."""
        q = Q()
        if self.pools:
            q &= Q(**{f"{prefix}rater__pool__in": self.pools})
        if self.rater_kinds:
            q &= Q(**{f"{prefix}rater__kind__in": self.rater_kinds})
        if self.task_types:
            q &= Q(**{f"{prefix}item__question__task_type__in": self.task_types})
        if self.start is not None:
            q &= Q(**{f"{prefix}assignment__submitted_at__gte": self.start})
        if self.end is not None:
            q &= Q(**{f"{prefix}assignment__submitted_at__lt": self.end})
        return q

    def keeps_judges(self) -> bool:
        return (not self.pools or "judge" in self.pools) and (
            not self.rater_kinds or "judge" in self.rater_kinds
        )

    def judge_output_in(self, row: dict, task_type: str) -> bool:
        """Whether an unparsed live judge output (``unparsed_judge_outputs``) is in scope; its
        time is when the call finished (it has no submitted rating)."""
        at = row.get("finished_at") or row.get("started_at")
        if self.task_types and task_type not in self.task_types:
            return False
        if at is not None and self.start is not None and at < self.start:
            return False
        return not (at is not None and self.end is not None and at >= self.end)


def checks_in_scope(checks: pd.DataFrame, scope: QualityScope) -> pd.DataFrame:
    """The check ratings (``annotation.quality.check_ratings``: human raters) in scope."""
    if checks.empty or not scope.narrows():
        return checks
    ids = set(
        Rating.objects.filter(scope.ratings_q(), id__in=checks["rating_id"].tolist()).values_list(
            "id", flat=True
        )
    )
    return checks[checks["rating_id"].isin(ids)].reset_index(drop=True)


def _out_of_range(study: Study, scope: QualityScope) -> list[dict]:
    scores = Score.objects.filter(scope.ratings_q("rating__"))
    if scope.criteria:
        scores = scores.filter(criterion__key__in=scope.criteria)
    rows = (
        scores.filter(rating__item__study=study, out_of_range=True)
        .values("criterion__key")
        .annotate(n=Count("id"))
        .order_by("criterion__key")
    )
    per = [{"issue": OUT_OF_RANGE, "criterion": r["criterion__key"], "n": r["n"]} for r in rows]
    return [{"issue": OUT_OF_RANGE, "criterion": "all", "n": sum(r["n"] for r in per)}, *per]


def _empty_answers(study: Study, scope: QualityScope) -> int:
    items = Item.objects.filter(study=study)
    if scope.task_types:
        items = items.filter(question__task_type__in=scope.task_types)
    return (
        Response.objects.filter(length=0)
        .filter(
            Q(id__in=items.values("response_a_id"))
            | Q(id__in=items.exclude(response_b=None).values("response_b_id"))
        )
        .count()
    )


def _unparsed(study: Study, scope: QualityScope) -> int:
    # Imported outputs that could not be read are ratings; live judge runs keep theirs as calls.
    n = Rating.objects.filter(
        scope.ratings_q(), item__study=study, parse_status=ParseStatus.UNPARSED
    ).count()
    if not scope.keeps_judges():
        return n
    live = unparsed_judge_outputs(study)
    if not scope.narrows():
        return n + len(live)
    types = dict(
        Item.objects.filter(id__in={r["item_id"] for r in live}).values_list(
            "id", "question__task_type"
        )
    )
    return n + sum(scope.judge_output_in(r, types.get(r["item_id"], "")) for r in live)


def data_quality(study: Study, scope: QualityScope | None = None) -> pd.DataFrame:
    """One row per issue (and per criterion for out-of-range scores), zero counts included,
    counted within the report's filters (``scope``; none: the whole study)."""
    scope = scope or QualityScope()
    unparsed = _unparsed(study, scope)
    rows = [
        *_out_of_range(study, scope),
        {"issue": EMPTY, "criterion": "", "n": _empty_answers(study, scope)},
        {"issue": UNPARSED, "criterion": "", "n": unparsed},
    ]
    for row in rows:
        row["treatment"] = TREATMENT[row["issue"]]
    return pd.DataFrame(rows, columns=COLUMNS)
