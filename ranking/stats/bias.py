"""Length bias, human-vs-judge gaps, hint effect, position bias, diagnostics (discrimination:
``discrimination.py``)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .schema import (
    CHOICE_SCORE_A,
    codes_and_names,
    concat_aligned,
    empty_frame,
    rows_frame,
    time_ordered,
)

# --------------------------------------------------------------------------- length bias

_LEN_COLS = {
    "group_by": "str",
    "group": "str",
    "min_delta": "int64",
    "n": "int64",
    "win": "int64",
    "draw": "int64",
    "loss": "int64",
    "win_share": "float64",
    "draw_share": "float64",
    "loss_share": "float64",
}


def length_bias(pair_df: pd.DataFrame, thresholds: Sequence[int] = (100, 300)) -> pd.DataFrame:
    """Among pairwise ratings with |len_a - len_b| >= threshold, how often the longer answer won,
    drew (tie or both bad) or lost; per rater kind and per pool (seed Table 3)."""
    if pair_df.empty:
        return empty_frame(_LEN_COLS)
    delta = (pair_df["len_a"] - pair_df["len_b"]).to_numpy()
    s = pair_df["choice"].map(CHOICE_SCORE_A).to_numpy(dtype=float)
    # Score of the longer answer: A's score when A is longer, else B's.
    longer = np.where(delta > 0, s, 1.0 - s)
    # Outcome codes win 0, draw 1, loss 2; counts per group by integer codes and bincount.
    outcome = np.select([longer == 1.0, longer == 0.0], [0, 2], 1)
    absd = np.abs(delta)
    groups = {}
    for group_by in ("rater_kind", "pool"):
        codes, uniq = pd.factorize(pair_df[group_by].to_numpy())
        groups[group_by] = (codes, sorted(zip(uniq.tolist(), range(len(uniq)), strict=True)))
    rows = []
    for t in thresholds:
        keep = absd >= t
        for group_by in ("rater_kind", "pool"):
            codes, order = groups[group_by]
            ok = keep & (codes >= 0)
            counts = np.bincount(codes[ok] * 3 + outcome[ok], minlength=3 * len(order))
            for grp, code in order:
                win, draw, loss = (int(x) for x in counts[3 * code : 3 * code + 3])
                n = win + draw + loss
                rows.append(
                    (group_by, grp, int(t), n, win, draw, loss)
                    + ((win / n, draw / n, loss / n) if n else (np.nan,) * 3)
                )
    return pd.DataFrame(rows, columns=list(_LEN_COLS))


# --------------------------------------------------------------------------- human vs judge gaps

_GAP_COLS = {
    "criterion": "str",
    "k": "float64",
    "n_items": "int64",
    "n_at_least_k": "int64",
    "share": "float64",
}


def gaps(star_df: pd.DataFrame, ks: Iterable[float] | None = None) -> pd.DataFrame:
    """Share of items where |mean human score - mean judge score| >= k, per criterion.

    Only first ratings count and only items rated by at least one human and one judge. With one
    human panel and one judge per item (LLMEval-2) this is exactly the paper's Tables 4-5.
    ``ks`` default: 1, 2, ... up to the criterion's observed range.
    """
    df = star_df[~star_df["is_repeat"] & star_df["score"].notna()]
    if df.empty:
        return empty_frame(_GAP_COLS)
    m = df.groupby(["criterion", "item_id", "rater_kind"])["score"].mean().unstack("rater_kind")
    if "human" not in m.columns or "judge" not in m.columns:
        return empty_frame(_GAP_COLS)
    m = m.dropna(subset=["human", "judge"])
    diff = (m["human"] - m["judge"]).abs()
    rows = []
    for crit, d in diff.groupby(level="criterion", sort=True):
        crit_scores = df.loc[df["criterion"] == crit, "score"]
        span = float(crit_scores.max() - crit_scores.min())
        levels = list(ks) if ks is not None else list(range(1, int(np.floor(span)) + 1))
        for k in levels:
            hit = int((d.to_numpy() >= k - 1e-9).sum())
            rows.append((crit, float(k), len(d), hit, hit / len(d) if len(d) else np.nan))
    return rows_frame(rows, _GAP_COLS)


# --------------------------------------------------------------------------- hint effect

_HINT_COLS = {
    "mode": "str",
    "metric": "str",
    "criterion": "str",
    "n_hint": "int64",
    "n_no_hint": "int64",
    "mean_hint": "float64",
    "mean_no_hint": "float64",
    "diff": "float64",
    "rel_diff": "float64",
    "welch_t": "float64",
    "welch_p": "float64",
    "mannwhitney_p": "float64",
}


def _compare(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Welch t (statistic, p) and Mann-Whitney p of x (hint) vs y (no hint)."""
    nan = float("nan")
    if len(x) < 2 or len(y) < 2:
        return nan, nan, nan
    with np.errstate(all="ignore"), warnings.catch_warnings():
        # Identical samples (e.g. a criterion every answer maxes out) make scipy warn about
        # precision loss; the resulting nan / p-value is reported as is.
        warnings.simplefilter("ignore", RuntimeWarning)
        t = stats.ttest_ind(x, y, equal_var=False)
        try:
            u = stats.mannwhitneyu(x, y, alternative="two-sided").pvalue
        except ValueError:
            u = nan
    return float(t.statistic), float(t.pvalue), float(u)


def hint_effect(star_df: pd.DataFrame, flags: pd.DataFrame | None = None) -> pd.DataFrame:
    """Mean stars and accuracy with vs without the hint, where ``hint_shown`` takes both values.

    ``diff`` = no hint - hint and ``rel_diff`` = diff / mean with hint: the paper reports that
    annotators scored 9.79 % higher without hints. Tests: Welch's t and Mann-Whitney U.
    """
    rows = []
    # Only the columns read (every criterion's split copies them).
    sdf = star_df[["criterion", "hint_shown", "score"]]
    sdf = sdf[sdf["hint_shown"].notna() & sdf["score"].notna()]
    if len(sdf) and sdf["hint_shown"].nunique() == 2:
        for crit, g in [("overall", sdf), *sdf.groupby("criterion", sort=True)]:
            h = g.loc[g["hint_shown"].astype(bool), "score"].to_numpy(float)
            nh = g.loc[~g["hint_shown"].astype(bool), "score"].to_numpy(float)
            rows.append(("star", "score", crit, h, nh))
    if flags is not None and len(flags):
        f = flags[["mode", "criterion", "hint_shown", "accurate"]]
        f = f[f["hint_shown"].notna()]
        for mode, gm in f.groupby("mode", sort=True):
            if gm["hint_shown"].nunique() < 2:
                continue
            for crit, g in [("overall", gm), *gm.groupby("criterion", sort=True)]:
                hs = g["hint_shown"].astype(bool)
                rows.append(
                    (
                        mode,
                        "accuracy",
                        crit,
                        g.loc[hs, "accurate"].to_numpy(float),
                        g.loc[~hs, "accurate"].to_numpy(float),
                    )
                )
    out = []
    for mode, metric, crit, h, nh in rows:
        mh = float(h.mean()) if len(h) else np.nan
        mn = float(nh.mean()) if len(nh) else np.nan
        diff = mn - mh
        rel = diff / mh if mh else np.nan
        out.append((mode, metric, crit, len(h), len(nh), mh, mn, diff, rel, *_compare(h, nh)))
    return rows_frame(out, _HINT_COLS)


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
