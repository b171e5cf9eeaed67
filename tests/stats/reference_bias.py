"""Length bias, gaps, discrimination, position bias and diagnostics as computed before they
moved to integer codes (pandas splits per group, first ratings by a full time sort): the reference the faster versions are compared with, cell for
cell (tests/stats/test_bias_reference.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ranking.stats.bias import _DIAG_COLS, _GAP_COLS, _LEN_COLS
from ranking.stats.discrimination import _DISC_COLS, _coded, _present, _runs, _spread
from ranking.stats.position import POS_COLS as _POS_COLS
from ranking.stats.rankings import labels, match_codes, points_arrays
from ranking.stats.schema import (
    CHOICE_SCORE_A,
    codes_and_names,
    concat_aligned,
    empty_frame,
    rows_frame,
    time_ordered,
)


def length_bias(pair_df: pd.DataFrame, thresholds: Sequence[int] = (100, 300)) -> pd.DataFrame:
    if pair_df.empty:
        return empty_frame(_LEN_COLS)
    delta = (pair_df["len_a"] - pair_df["len_b"]).to_numpy()
    s = pair_df["choice"].map(CHOICE_SCORE_A).to_numpy(dtype=float)
    longer = np.where(delta > 0, s, 1.0 - s)
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


def gaps(
    star_df: pd.DataFrame,
    ks: Iterable[float] | None = None,
    ranges: dict[str, float] | None = None,
) -> pd.DataFrame:
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
        # The rubric's range where wider, at least 1: a criterion without variance keeps a row.
        span = max(span, (ranges or {}).get(crit, 0.0), 1.0)
        levels = list(ks) if ks is not None else list(range(1, int(np.floor(span)) + 1))
        for k in levels:
            hit = int((d.to_numpy() >= k - 1e-9).sum())
            rows.append((crit, float(k), len(d), hit, hit / len(d) if len(d) else np.nan))
    return rows_frame(rows, _GAP_COLS)


def _star_spreads(sdf: pd.DataFrame) -> list[tuple[Any, ...]]:
    kind, kinds = _coded(sdf["rater_kind"])
    model, models = _coded(sdf["model"])
    score = sdf["score"].to_numpy(dtype=float)
    names = np.asarray(models, dtype=object)
    rows: list[tuple[Any, ...]] = []
    for k in [-1, *_present(kind, len(kinds))]:
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


def _pair_spreads(pair_df: pd.DataFrame) -> list[tuple[Any, ...]]:
    kind, kinds = _coded(pair_df["rater_kind"])
    task, tasks = _coded(pair_df["task_type"])
    models = sorted(set(labels(pair_df["model_a"])).union(labels(pair_df["model_b"])))
    a, b, s = match_codes(pair_df, models)
    names = np.asarray(models, dtype=object)
    ok = (a >= 0) & (b >= 0) & (a != b)
    rows: list[tuple[Any, ...]] = []
    for k in [-1, *_present(kind, len(kinds))]:
        in_kind = ok if k < 0 else ok & (kind == k)
        for t in sorted(_present(task[in_kind], len(tasks)), key=lambda c: str(tasks[c])):
            sel = in_kind & (task == t)
            p = points_arrays(a[sel], b[sel], s[sel], len(models))
            played = p["games"] > 0
            head = ("pairwise", "all" if k < 0 else kinds[k], "task_type", tasks[t])
            rows += _spread(head, names[played], p["score"][played])
    return rows


def discrimination(star_df: pd.DataFrame, pair_df: pd.DataFrame) -> pd.DataFrame:
    rows: list[tuple[Any, ...]] = []
    cols = ["rater_kind", "criterion", "task_type", "model", "score"]
    sdf = star_df.loc[star_df["score"].notna(), cols]
    if len(sdf):
        rows += _star_spreads(sdf)
    if len(pair_df):
        rows += _pair_spreads(pair_df[["rater_kind", "task_type", "model_a", "model_b", "choice"]])
    return rows_frame(rows, _DISC_COLS)


def _sides(pair_df: pd.DataFrame) -> pd.DataFrame:
    c = pair_df["choice"]
    is_a, is_b = (c == "A").to_numpy(bool), (c == "B").to_numpy(bool)
    left_a = pair_df["left_is_a"].to_numpy(bool)
    left = (is_a & left_a) | (is_b & ~left_a)
    right = (is_b & left_a) | (is_a & ~left_a)
    return pd.DataFrame(
        {
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
    cols = ["rater_id", "item_id", "left_is_a", "choice", "submitted_at", "rating_id"]
    d = time_ordered(pair_df[cols]).drop_duplicates(["rater_id", "item_id", "left_is_a"])
    left = d["left_is_a"].to_numpy(bool)
    keys = ["rater_id", "item_id"]
    both = d.loc[left, [*keys, "choice"]].merge(d.loc[~left, [*keys, "choice"]], on=keys)
    if both.empty:
        return pd.DataFrame(
            {"rater_id": pd.Series([], dtype=str), "consistent": pd.Series([], dtype=bool)}
        )
    same = (both["choice_x"].astype(str) == both["choice_y"].astype(str)).to_numpy()
    return pd.DataFrame({"rater_id": both["rater_id"].to_numpy(), "consistent": same})


def position_bias(
    pair_df: pd.DataFrame, *, per_rater_kinds: Sequence[str] = ("judge",)
) -> pd.DataFrame:
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


def _pair_diagnostics(base: pd.DataFrame, pair_df: pd.DataFrame) -> pd.DataFrame:
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
    codes, names = codes_and_names(sd["pool"])
    n = np.bincount(codes, minlength=len(names))
    hits = np.bincount(codes, weights=sd[col].to_numpy(float), minlength=len(names))
    seen = n > 0
    return pd.Series(hits[seen] / n[seen], index=names[seen]).replace(0, np.nan)


def annotator_diagnostics(star_df: pd.DataFrame, pair_df: pd.DataFrame) -> pd.DataFrame:
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
