"""The position-bias and diagnostics tables as they were computed before they moved to integer
codes (pandas splits per group): the reference the faster versions are compared with, cell for
cell (tests/stats/test_bias_reference.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ranking.stats.schema import codes_and_names, concat_aligned, empty_frame, time_ordered

# --------------------------------------------------------------------------- position bias

_POS_COLS = {
    "group_by": "str",
    "group": "str",
    "n": "int64",
    "left_share": "float64",
    "right_share": "float64",
    "tie_share": "float64",
    "both_bad_share": "float64",
    "left_of_decisive": "float64",
    "binom_p": "float64",
    "n_both_orders": "int64",
    "position_consistency": "float64",
}


def _sides(pair_df: pd.DataFrame) -> pd.DataFrame:
    # One comparison per label on the column (category codes when categorical), not per use.
    c = pair_df["choice"]
    is_a, is_b = (c == "A").to_numpy(bool), (c == "B").to_numpy(bool)
    left_a = pair_df["left_is_a"].to_numpy(bool)
    left = (is_a & left_a) | (is_b & ~left_a)
    right = (is_b & left_a) | (is_a & ~left_a)
    return pd.DataFrame(
        {
            # The label columns as they are (categoricals group by their codes, not strings).
            "rater_id": pair_df["rater_id"].array,
            "rater_kind": pair_df["rater_kind"].array,
            "pool": pair_df["pool"].array,
            "left": left,
            "right": right,
            "tie": (c == "tie").to_numpy(bool),
            "both_bad": (c == "both_bad").to_numpy(bool),
        }
    )


def _both_orders(pair_df: pd.DataFrame) -> pd.DataFrame:
    """Per (rater, item) judged with A on the left and A on the right: the first rating in each
    order, and whether the canonical choice agrees."""
    cols = ["rater_id", "item_id", "left_is_a", "choice", "submitted_at", "rating_id"]
    first = _first_in_each_order(pair_df)
    if first is None:
        d = time_ordered(pair_df[cols]).drop_duplicates(["rater_id", "item_id", "left_is_a"])
    else:  # the same rows, in frame order (the table only counts them)
        d = pair_df[cols].take(first)
    # One row per (rater, item, order) is left: join A-left to A-right (cheaper than a pivot).
    left = d["left_is_a"].to_numpy(bool)
    keys = ["rater_id", "item_id"]
    both = d.loc[left, [*keys, "choice"]].merge(d.loc[~left, [*keys, "choice"]], on=keys)
    if both.empty:
        return pd.DataFrame(
            {"rater_id": pd.Series([], dtype=str), "consistent": pd.Series([], dtype=bool)}
        )
    same = _same_labels(both["choice_x"], both["choice_y"])
    return pd.DataFrame({"rater_id": both["rater_id"].to_numpy(), "consistent": same})


def _same_labels(x: pd.Series, y: pd.Series) -> np.ndarray:
    """Row by row, whether the two label columns are the same as strings (a missing label equals
    nothing). Two categoricals with the same categories (one column merged with itself) compare
    their codes: no string per row."""
    if (
        isinstance(x.dtype, pd.CategoricalDtype)
        and isinstance(y.dtype, pd.CategoricalDtype)
        and x.cat.categories.equals(y.cat.categories)
    ):
        cx = x.cat.codes.to_numpy()
        return np.asarray((cx == y.cat.codes.to_numpy()) & (cx >= 0))
    return np.asarray((x.astype(str) == y.astype(str)).to_numpy())


def _first_in_each_order(pair_df: pd.DataFrame) -> np.ndarray | None:
    """Positions of the earliest rating (by ``submitted_at``, then ``rating_id``) of each
    (rater, item, order), in frame order: a key rated once is its own first, so only the keys
    rated again (a few percent of the rows) are time-sorted. None when a time is missing (NaT
    sorts last in pandas but first as an integer)."""
    at = pair_df["submitted_at"]
    if at.isna().any() or not hasattr(at.array, "asi8"):
        return None
    key = np.zeros(len(pair_df), dtype=np.int64)
    for col in ("rater_id", "item_id", "left_is_a"):
        codes, uniq = pd.factorize(pair_df[col], use_na_sentinel=False)
        key = key * max(len(uniq), 1) + codes
    again = pd.Series(key).duplicated(keep=False).to_numpy()
    keep = ~again
    rows = np.flatnonzero(again)
    if len(rows):
        order = rows[np.lexsort((pair_df["rating_id"].to_numpy()[rows], at.array.asi8[rows]))]
        _, first = np.unique(key[order], return_index=True)
        keep[order[first]] = True
    return np.flatnonzero(keep)


def position_bias(
    pair_df: pd.DataFrame, *, per_rater_kinds: Sequence[str] = ("judge",)
) -> pd.DataFrame:
    """Share of left / right / tie / both-bad choices per rater kind, pool and judge, a binomial
    test of left vs right among decisive choices, and position consistency on items judged in
    both orders (same canonical choice both times)."""
    if pair_df.empty:
        return empty_frame(_POS_COLS)
    sd = _sides(pair_df)
    bo = _both_orders(pair_df)
    bo = bo.merge(sd.drop_duplicates("rater_id")[["rater_id", "rater_kind", "pool"]], on="rater_id")
    rows = []
    groupings = [("rater_kind", sd["rater_kind"]), ("pool", sd["pool"])]
    per = sd[sd["rater_kind"].isin(per_rater_kinds)]
    for group_by, key in groupings:
        for grp, g in sd.groupby(key, sort=True):
            rows.append(_pos_row(group_by, grp, g, bo[bo[group_by] == grp]))
    for grp, g in per.groupby("rater_id", sort=True):
        rows.append(_pos_row("rater_id", grp, g, bo[bo["rater_id"] == grp]))
    return pd.DataFrame(rows, columns=list(_POS_COLS))


def _pos_row(group_by: str, grp: str, g: pd.DataFrame, bo: pd.DataFrame) -> tuple[Any, ...]:
    n = len(g)
    left, right = int(g["left"].sum()), int(g["right"].sum())
    dec = left + right
    p = float(stats.binomtest(left, dec, 0.5).pvalue) if dec else np.nan
    return (
        group_by,
        str(grp),
        n,
        left / n,
        right / n,
        float(g["tie"].mean()),
        float(g["both_bad"].mean()),
        left / dec if dec else np.nan,
        p,
        len(bo),
        float(bo["consistent"].mean()) if len(bo) else np.nan,
    )


# --------------------------------------------------------------------------- diagnostics

_DIAG_COLS = {
    "rater_id": "str",
    "rater_kind": "str",
    "pool": "str",
    "n_ratings": "int64",
    "n_star": "int64",
    "n_pairwise": "int64",
    "left_of_decisive": "float64",
    "left_bias_p": "float64",
    "tie_share": "float64",
    "both_bad_share": "float64",
    "tie_ratio_to_pool": "float64",
    "both_bad_ratio_to_pool": "float64",
    "median_duration_s": "float64",
    "star_mean": "float64",
}


def _pair_diagnostics(base: pd.DataFrame, pair_df: pd.DataFrame) -> pd.DataFrame:
    """Add the pairwise columns to the per-rater ``base``: left share of decisive choices and its
    exact binomial p, tie and both-bad shares and their ratio to the rater's pool."""
    cols = ("left_of_decisive", "left_bias_p", "tie_share", "both_bad_share")
    if not len(pair_df):
        for c in (*cols, "tie_ratio_to_pool", "both_bad_ratio_to_pool"):
            base[c] = np.nan
        return base
    sd = _sides(pair_df)
    g = sd.groupby("rater_id")[["left", "right", "tie", "both_bad"]].sum()
    n = sd.groupby("rater_id").size()
    dec = g["left"] + g["right"]
    base["left_of_decisive"] = (g["left"] / dec.where(dec > 0)).reindex(base.index)
    # Exact binomial p per rater, vectorised: two-sided p = min(1, 2 * min tail).
    k, m = g["left"].to_numpy(), dec.to_numpy()
    with np.errstate(all="ignore"):
        tail = np.minimum(stats.binom.cdf(k, m, 0.5), stats.binom.sf(k - 1, m, 0.5))
    pval = pd.Series(np.where(m > 0, np.minimum(1.0, 2.0 * tail), np.nan), index=g.index)
    base["left_bias_p"] = pval.reindex(base.index)
    base["tie_share"] = (g["tie"] / n).reindex(base.index)
    base["both_bad_share"] = (g["both_bad"] / n).reindex(base.index)
    pool_tie, pool_bb = _pool_shares(sd, "tie"), _pool_shares(sd, "both_bad")
    base_pool = base["pool"].astype(str)
    base["tie_ratio_to_pool"] = base["tie_share"] / base_pool.map(pool_tie).astype(float)
    base["both_bad_ratio_to_pool"] = base["both_bad_share"] / base_pool.map(pool_bb).astype(float)
    return base


def _pool_shares(sd: pd.DataFrame, col: str) -> pd.Series:
    """Share of ``col`` per pool present, by name (0 as NaN): counts per pool code, the same
    figure as a groupby mean of the flags (integer sums, one division)."""
    codes, names = codes_and_names(sd["pool"])
    n = np.bincount(codes, minlength=len(names))
    hits = np.bincount(codes, weights=sd[col].to_numpy(float), minlength=len(names))
    seen = n > 0
    return pd.Series(hits[seen] / n[seen], index=names[seen]).replace(0, np.nan)


def annotator_diagnostics(star_df: pd.DataFrame, pair_df: pd.DataFrame) -> pd.DataFrame:
    """Per rater: counts, left/right bias (binomial p), tie and both-bad shares and their ratio to
    the pool's share (overuse > 1), median seconds per rating, mean stars given."""
    parts = []
    if len(star_df):
        s = star_df.drop_duplicates("rating_id")
        parts.append(
            s[["rating_id", "rater_id", "rater_kind", "pool", "duration_s"]].assign(mode="star")
        )
    if len(pair_df):
        parts.append(
            pair_df[["rating_id", "rater_id", "rater_kind", "pool", "duration_s"]].assign(
                mode="pairwise"
            )
        )
    if not parts:
        return empty_frame(_DIAG_COLS)
    r = concat_aligned(parts)
    r["is_star"] = (r["mode"] == "star").astype(np.int64)
    base = r.groupby("rater_id").agg(
        rater_kind=("rater_kind", "first"),
        pool=("pool", "first"),
        n_ratings=("rating_id", "size"),
        n_star=("is_star", "sum"),
        median_duration_s=("duration_s", "median"),
    )
    base["n_pairwise"] = base["n_ratings"] - base["n_star"]
    base = _pair_diagnostics(base, pair_df)
    if len(star_df):
        base["star_mean"] = star_df.groupby("rater_id")["score"].mean().reindex(base.index)
    else:
        base["star_mean"] = np.nan
    out = base.reset_index()
    for c in ("n_ratings", "n_star", "n_pairwise"):
        out[c] = out[c].astype(np.int64)
    return out[list(_DIAG_COLS)].sort_values(["pool", "rater_id"]).reset_index(drop=True)
