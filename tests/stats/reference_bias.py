"""The length-bias, gaps, discrimination, position-bias and diagnostics tables as they were computed before they moved to integer
codes (pandas splits per group): the reference the faster versions are compared with, cell for
cell (tests/stats/test_bias_reference.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ranking.stats.rankings import labels, match_codes, points_arrays
from ranking.stats.schema import (
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


# --------------------------------------------------------------------------- discrimination

_DISC_COLS = {
    "mode": "str",
    "rater_kind": "str",
    "dimension": "str",
    "value": "str",
    "n_models": "int64",
    "best_model": "str",
    "best_score": "float64",
    "worst_model": "str",
    "worst_score": "float64",
    "spread": "float64",
}


def _coded(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes (-1 when missing) and their names, numbered in a sorted groupby's order."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.cat.codes.to_numpy(dtype=np.int64), values.cat.categories
    codes, names = pd.factorize(values, sort=True)
    return codes.astype(np.int64), pd.Index(names)


def _disc_present(codes: np.ndarray, n: int) -> np.ndarray:
    """The codes used, ascending (a count per code: no sort)."""
    return np.flatnonzero(np.bincount(codes[codes >= 0], minlength=n))


def _spread(
    head: tuple[str, Any, str, Any], model: np.ndarray, score: np.ndarray
) -> list[tuple[Any, ...]]:
    """One row (mode, kind, dimension, value, ...) of a value's model scores, none if all NaN."""
    # argmax/argmin give the first best and worst model, as idxmax/idxmin on the rows with a
    # score would.
    ok = ~np.isnan(score)
    if not ok.any():
        return []
    score, model = score[ok], model[ok]
    b, w = int(np.argmax(score)), int(np.argmin(score))
    best, worst = float(score[b]), float(score[w])
    return [(*head[:3], str(head[3]), len(score), model[b], best, model[w], worst, best - worst)]


def _star_spreads(sdf: pd.DataFrame) -> list[tuple[Any, ...]]:
    """Model means per criterion and per task type, per rater kind, from integer codes.

    Each (value, model) mean is pandas' grouped mean over the same rows in the same order as
    a groupby of the labels, so the figures are the same floats; the codes are read once.
    """
    kind, kinds = _coded(sdf["rater_kind"])
    model, models = _coded(sdf["model"])
    score = sdf["score"].to_numpy(dtype=float)
    names = np.asarray(models, dtype=object)
    rows: list[tuple[Any, ...]] = []
    for k in [-1, *_disc_present(kind, len(kinds))]:
        sel = model >= 0 if k < 0 else (model >= 0) & (kind == k)
        for dim in ("criterion", "task_type"):
            value, values = _coded(sdf[dim])
            keep = sel & (value >= 0)
            key = value[keep] * len(models) + model[keep]
            means = pd.Series(score[keep]).groupby(key, sort=True).mean()
            v, m = np.divmod(means.index.to_numpy(), len(models))
            mean = means.to_numpy()
            for start, stop in _runs(v):
                head = ("star", "all" if k < 0 else kinds[k], dim, values[v[start]])
                rows += _spread(head, names[m[start:stop]], mean[start:stop])
    return rows


def _runs(v: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of each run of equal values in a sorted array."""
    cuts = np.flatnonzero(np.diff(v)) + 1
    return list(zip(np.r_[0, cuts], np.r_[cuts, len(v)], strict=True))


def _pair_spreads(pair_df: pd.DataFrame) -> list[tuple[Any, ...]]:
    """Points score per task type, per rater kind; model codes read once for the whole frame.

    Each (kind, task type) keeps its matches in row order, so the bincount sums are those of
    ``match_arrays`` on that subset; models without a game are left out as before.
    """
    kind, kinds = _coded(pair_df["rater_kind"])
    task, tasks = _coded(pair_df["task_type"])
    models = sorted(set(labels(pair_df["model_a"])).union(labels(pair_df["model_b"])))
    a, b, s = match_codes(pair_df, models)
    names = np.asarray(models, dtype=object)
    ok = (a >= 0) & (b >= 0) & (a != b)
    rows: list[tuple[Any, ...]] = []
    for k in [-1, *_disc_present(kind, len(kinds))]:
        in_kind = ok if k < 0 else ok & (kind == k)
        # The task types in their labels' order, as a groupby of the concatenated tables was.
        for t in sorted(_disc_present(task[in_kind], len(tasks)), key=lambda c: str(tasks[c])):
            sel = in_kind & (task == t)
            p = points_arrays(a[sel], b[sel], s[sel], len(models))
            played = p["games"] > 0
            head = ("pairwise", "all" if k < 0 else kinds[k], "task_type", tasks[t])
            rows += _spread(head, names[played], p["score"][played])
    return rows


def discrimination(star_df: pd.DataFrame, pair_df: pd.DataFrame) -> pd.DataFrame:
    """Spread (best - worst model) per criterion and per task type, per rater kind.

    Star: model means per criterion; per task type the model's mean over all its stars of that
    task type (criteria pooled). Pairwise: the Points score per task type.
    """
    rows: list[tuple[Any, ...]] = []
    cols = ["rater_kind", "criterion", "task_type", "model", "score"]
    sdf = star_df.loc[star_df["score"].notna(), cols]
    if len(sdf):
        rows += _star_spreads(sdf)
    if len(pair_df):
        rows += _pair_spreads(pair_df[["rater_kind", "task_type", "model_a", "model_b", "choice"]])
    return rows_frame(rows, _DISC_COLS)


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
