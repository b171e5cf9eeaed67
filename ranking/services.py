"""Computing a study's report: frames from the selectors, statistics from ``ranking.stats``, and
a snapshot in the cache.

The snapshot key is the study, the filters and a stamp of its ratings (count, newest id and newest
change), so a new or edited rating makes the next request recompute; nothing has to invalidate it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
from django.core.cache import cache
from django.utils import timezone

from annotation import quality as annotator_quality
from annotation.models import Study
from ranking import selectors
from ranking.quality import QualityScope, checks_in_scope, data_quality
from ranking.refresh import (  # noqa: F401 (callers import them from here too)
    REFRESH_SECONDS,
    ReportFilters,
    refresh_pending,
    report_refresh_soon,
)
from ranking.stats.filters import filter_frame
from ranking.stats.report import (
    AGREEMENT_KEYS,
    BIAS_KEYS,
    LEADERBOARD_KEYS,
    REPORT_KEYS,
    build_report,
)
from ranking.warm import stale_min_ratings

CACHE_SECONDS = 60 * 60
# The newest snapshot's key is kept longer than the snapshot, so a stale one is found while held.
STALE_SECONDS = CACHE_SECONDS
# Bump when the report's layout changes so that old snapshots are not served.
CACHE_VERSION = 7  # bump when the report gains or changes tables (v4: PPI++, quality, stale;
# v5: pairs oriented by model name, equal Elo ratings share a rank; v6: points_rank an integer;
# v7: gaps up to the rubric's range, discrimination ties and single models, accuracy variants
# without raters below min_ratings, reliability on shared items only, judge parse share filtered)

# Tables of the report, in the order pages and exports show them (``meta`` and ``elo_variance``
# are dicts, the rest DataFrames). Anything new the statistics add is appended at the end.
TABLE_ORDER: tuple[str, ...] = (
    *LEADERBOARD_KEYS,
    "accuracy_by_pool",
    "accuracy_by_rater",
    "accuracy_by_criterion",
    "consistency_by_pool",
    "consistency_by_rater",
    "consistency_by_criterion",
    *BIAS_KEYS,
    "elo_stability",
    "elo_trajectory",
    "elo_shuffles",
    *AGREEMENT_KEYS,
    "data_quality",
    "exclusions",
    "annotator_reliability",
    "gold_by_pool",
    "judge_agreement",
    "judge_confusion",
    "accuracy_variants",
    "star_vs_human",
    "kappa_pairs",
    "chance_agreement",
    "ranking_agreement",
    "length_controlled",
    "judge_bias",
)


def table_names() -> list[str]:
    """Every DataFrame table the report has (for the API's table endpoint and the exports)."""
    extra = [k for k in REPORT_KEYS if k not in TABLE_ORDER and k not in ("meta", "elo_variance")]
    return [*TABLE_ORDER, *extra]


@dataclass
class StudyReport:
    study: Study
    filters: ReportFilters
    tables: dict[str, Any]
    cached: bool = False
    cache_key: str | None = None
    # An older snapshot, served while a background refresh computes the current one.
    stale: bool = False
    # No snapshot yet and a background job is computing the first one: ``tables`` is empty.
    computing: bool = False

    @property
    def as_of(self) -> dt.datetime | None:
        """When the served tables were computed."""
        value = self.meta.get("computed_at")
        return dt.datetime.fromisoformat(value) if value else None

    def table(self, name: str) -> pd.DataFrame:
        """A table of the report, or an empty frame when the statistics did not produce it."""
        value = self.tables.get(name)
        return value if isinstance(value, pd.DataFrame) else pd.DataFrame()

    @property
    def meta(self) -> dict[str, Any]:
        value = self.tables.get("meta")
        return value if isinstance(value, dict) else {}


def report_build(
    *,
    study: Study,
    filters: ReportFilters | None = None,
    use_cache: bool = True,
    stale_ok: bool = False,
) -> StudyReport:
    """The full report of ``study`` under ``filters``, from the cache when the ratings are unchanged.

    ``stale_ok`` (the report page): when the ratings changed since the last snapshot of a large
    study (``settings.REPORT_STALE_MIN_RATINGS`` or more), that snapshot is served at once,
    marked ``stale``, and a background refresh computes the current one (docs/reports.md).
    Full marks per criterion come from the study's rubric (the LLMEval-2 total score needs them;
    inferring them from the data would under-count a criterion nobody rated at the top).
    """
    filters = filters or ReportFilters()
    if not use_cache:
        tables = _compute(study, filters)
        return StudyReport(study=study, filters=filters, tables=tables)
    count, stamp = selectors.study_rating_stamp(study)
    stamp += "|x" + annotator_quality.exclusions_stamp(study)  # an exclusion changes it
    key = report_cache_key(study.pk, filters, count, stamp)
    latest = _latest_key(study.pk, filters)
    if stale_ok and count >= stale_min_ratings():
        old_key, old = _stale_snapshot(latest, key)
        if old is not None:
            report_refresh_soon(study_id=study.pk, filters=filters)
            # Under the old snapshot's key: what is cached next to it (the charts) is drawn
            # from its tables, and must not be served for the current snapshot.
            return StudyReport(study, filters, old, cached=True, cache_key=old_key, stale=True)
        if cache.get(key) is None and refresh_pending(study.pk, filters):
            return StudyReport(study, filters, {}, cache_key=key, computing=True)
    tables, cached = snapshot(key, lambda: _compute(study, filters))
    if not cached:
        cache.set(latest, key, STALE_SECONDS)
    return StudyReport(study=study, filters=filters, tables=tables, cached=cached, cache_key=key)


# The report's filters that narrow the ratings (``filter_frame`` keywords; criteria: star only).
SCOPE_KEYS = ("pools", "rater_kinds", "task_types", "start", "end")


def _quality_in_scope(
    study: Study, frames: selectors.StudyFrames, kwargs: Mapping[str, Any]
) -> tuple[selectors.StudyFrames, dict[str, Any]]:
    """The frames within the report's filters, and the quality tables (reliability, gold
    accuracy, data quality) of the same ratings: the filters apply to them as to every table."""
    scope = {k: kwargs.get(k) for k in SCOPE_KEYS}
    frames = selectors.StudyFrames(
        filter_frame(frames.star_df, criteria=kwargs.get("criteria"), **scope),
        filter_frame(frames.pair_df, **scope),
    )
    frames, tables = annotator_quality.report_quality(study, frames)
    quality_scope = QualityScope.of(criteria=kwargs.get("criteria"), **scope)
    if quality_scope.narrows():
        excluded = annotator_quality.excluded_pseudonyms(study)
        checks = annotator_quality.check_ratings(study)
        checks = checks_in_scope(checks[~checks["rater_id"].isin(excluded)], quality_scope)
        tables["gold_by_pool"] = annotator_quality.gold_by_pool(checks)
    tables["data_quality"] = data_quality(study, quality_scope)  # flagged values, treatment
    return frames, tables


def _compute(study: Study, filters: ReportFilters) -> dict[str, Any]:
    frames = selectors.study_frames(study, exclude_simulated=filters.exclude_simulated)
    kwargs = filters.build_kwargs()
    frames, quality_tables = _quality_in_scope(study, frames, kwargs)
    kwargs.setdefault("criterion_max", selectors.criterion_max(study) or None)
    kwargs.setdefault("criterion_min", selectors.criterion_min(study) or None)
    scope = QualityScope.of(
        criteria=kwargs.get("criteria"), **{k: kwargs.get(k) for k in SCOPE_KEYS}
    )
    kwargs.setdefault("judge_runs", selectors.judge_run_frame(study, scope))
    computed_at = timezone.now()
    tables = build_report(frames.star_df, frames.pair_df, **kwargs)
    tables.update(quality_tables)  # exclusions, reliability, gold, data quality (docs/quality.md)
    tables["meta"]["computed_at"] = computed_at.isoformat()
    return tables


def _latest_key(study_pk: int, filters: ReportFilters) -> str:
    """Where the key of the newest snapshot of (study, filters) is kept."""
    return f"ranking:report:v{CACHE_VERSION}:{study_pk}:{filters.cache_token()}:latest"


def _stale_snapshot(latest: str, key: str) -> tuple[str | None, dict[str, Any] | None]:
    """(its key, the newest stored snapshot) when it is not the current one; (None, None) when
    there is none, or when the current one is stored: then it is served as usual."""
    old_key = cache.get(latest)
    if old_key is None or old_key == key or cache.get(key) is not None:
        return None, None
    return old_key, cache.get(old_key)


def report_refresh(*, study_id: int, filters: Mapping[str, Any] | None = None) -> bool:
    """Compute and store the current snapshot (the background job). False when the study is
    gone."""
    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        return False
    report_build(study=study, filters=ReportFilters.from_dict(filters or {}))
    return True


def snapshot(key: str | None, compute: Callable[[], dict[str, Any]]) -> tuple[dict, bool]:
    """(tables, from the cache?): the stored snapshot under ``key``, else ``compute()`` stored.

    ``key`` None means "do not cache". The benchmark (benchmarks/stats_speed.py) times this very
    function for the first and the warm request.
    """
    if key is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit, True
    tables = compute()
    if key is not None:
        cache.set(key, tables, CACHE_SECONDS)
    return tables, False


def report_cache_key(study_pk: int, filters: ReportFilters, count: int, stamp: str) -> str:
    """The snapshot's key: study, filters and the rating stamp (count, newest id, newest change).

    Any new, edited or withdrawn rating changes the stamp, so nothing has to invalidate a snapshot;
    an old one simply expires.
    """
    return (
        f"ranking:report:v{CACHE_VERSION}:{study_pk}:{filters.cache_token()}:"
        f"{count}:{hashlib.sha256(stamp.encode()).hexdigest()[:16]}"
    )
