"""Per-rater facts of the judgements that several quality tables read (``agreement``): first
ratings per (rater, mode) and each rater's kind and pool, computed once per report."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


def _rater_meta(j: pd.DataFrame) -> pd.DataFrame:
    return j.drop_duplicates("rater_id")[["rater_id", "rater_kind", "pool"]]


@dataclass(frozen=True)
class RaterFacts:
    """What the per-rater quality tables read of the judgements besides their own figures: first
    ratings per (rater, mode) and each rater's kind and pool, computed once per report."""

    counts: pd.DataFrame
    meta: pd.DataFrame

    @classmethod
    def of(cls, j: pd.DataFrame) -> RaterFacts:
        return cls(rater_counts(j), _rater_meta(j))


def rater_counts(j: pd.DataFrame) -> pd.DataFrame:
    """Number of first ratings (distinct rating ids) per (rater, mode)."""
    f = j.loc[j["is_first"], ["rater_id", "mode", "rating_id"]]
    fast = _rater_counts_fast(f)
    if fast is not None:
        return fast
    return f.groupby(["rater_id", "mode"])["rating_id"].nunique().rename("n_ratings").reset_index()


def _rater_counts_fast(f: pd.DataFrame) -> pd.DataFrame | None:
    """``rater_counts`` from the categorical codes: distinct (rating, mode, rater) keys counted
    per (rater, mode) in category order, the groupby's rows and dtypes (None when the columns
    are not categoricals or the key would not fit in 63 bits)."""
    rater, mode = f["rater_id"], f["mode"]
    if not all(isinstance(c.dtype, pd.CategoricalDtype) for c in (rater, mode)):
        return None
    r, m = rater.cat.codes.to_numpy(np.int64), mode.cat.codes.to_numpy(np.int64)
    rid = f["rating_id"].to_numpy(np.int64)
    n_r, n_m = len(rater.cat.categories), len(mode.cat.categories)
    if len(f) == 0 or (r < 0).any() or (m < 0).any() or rid.min() < 0:
        return None
    if (int(rid.max()) + 1) * n_m * n_r >= 2**62:
        return None
    group = r * n_m + m
    counts = _one_rater_per_rating(rid, m, r, n_m, n_r)
    if counts is None:
        keys = pd.unique(rid * (n_r * n_m) + group)
        counts = np.bincount(keys % (n_r * n_m), minlength=n_r * n_m)
    seen = np.flatnonzero(counts)
    return pd.DataFrame(
        {
            "rater_id": pd.Categorical.from_codes(seen // n_m, dtype=rater.dtype),
            "mode": pd.Categorical.from_codes(seen % n_m, dtype=mode.dtype),
            "n_ratings": counts[seen].astype(np.int64),
        }
    )


def _one_rater_per_rating(
    rid: np.ndarray, m: np.ndarray, r: np.ndarray, n_m: int, n_r: int
) -> np.ndarray | None:
    """Distinct (rating, mode, rater) keys per (rater, mode) cell when rating ids span a short
    range and every (mode, rating) has one rater (as a rating belongs to its rater): each
    (mode, rating) slot is then one key, counted without hashing. None otherwise."""
    lo, hi = int(rid.min()), int(rid.max())
    span = hi - lo + 1
    if span * n_m > 4 * len(rid) + 1024:
        return None
    slot = m * span + (rid - lo)
    rater = np.full(span * n_m, -1, dtype=np.int64)
    rater[slot] = r  # one of each slot's raters; all the same when the check below holds
    if not np.array_equal(rater[slot], r):
        return None
    used = np.flatnonzero(rater >= 0)
    return np.bincount(rater[used] * n_m + used // span, minlength=n_r * n_m)
