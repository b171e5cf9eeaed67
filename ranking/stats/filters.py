"""Filters applied to both frames before a report: pool, criteria, task type, time range, raters."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd


def _ts(value: object) -> pd.Timestamp | None:
    if value is None:
        return None
    ts = pd.Timestamp(value)
    # Naive bounds are taken as UTC, the timezone of ``submitted_at``.
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def filter_frame(
    df: pd.DataFrame,
    *,
    pools: Iterable[str] | None = None,
    rater_kinds: Iterable[str] | None = None,
    task_types: Iterable[str] | None = None,
    criteria: Iterable[str] | None = None,
    start: object = None,
    end: object = None,
    raters: Iterable[str] | None = None,
    exclude_raters: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Rows of a star or pairwise frame that pass every given filter (``None`` = no filter).

    ``criteria`` applies to star frames only (pairwise ratings have no criterion column).
    The time range is half-open: start <= submitted_at < end.
    """
    mask = pd.Series(True, index=df.index)
    if pools is not None:
        mask &= df["pool"].isin(list(pools))
    if rater_kinds is not None:
        mask &= df["rater_kind"].isin(list(rater_kinds))
    if task_types is not None:
        mask &= df["task_type"].isin(list(task_types))
    if criteria is not None and "criterion" in df.columns:
        mask &= df["criterion"].isin(list(criteria))
    lo, hi = _ts(start), _ts(end)
    if lo is not None:
        mask &= df["submitted_at"] >= lo
    if hi is not None:
        mask &= df["submitted_at"] < hi
    if raters is not None:
        mask &= df["rater_id"].isin(list(raters))
    if exclude_raters is not None:
        mask &= ~df["rater_id"].isin(list(exclude_raters))
    return df[mask] if not mask.all() else df


def raters_below(
    accuracy: pd.DataFrame,
    consistency: pd.DataFrame,
    *,
    min_accuracy: float | None = None,
    min_consistency: float | None = None,
) -> set[str]:
    """Raters whose accuracy or consistency (in any mode) is below the threshold.

    Raters without a measure (too few ratings, or no repeated items) are kept: there is no
    evidence against them.
    """
    out: set[str] = set()
    if min_accuracy is not None and len(accuracy):
        out |= set(accuracy.loc[accuracy["accuracy"] < min_accuracy, "rater_id"])
    if min_consistency is not None and len(consistency):
        out |= set(consistency.loc[consistency["consistency"] < min_consistency, "rater_id"])
    return out
