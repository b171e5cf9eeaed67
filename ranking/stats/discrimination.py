"""Discrimination: the spread (best - worst model) per criterion and per task type, per rater kind."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .grouped import group_means, whole_numbers
from .rankings import labels, match_codes
from .schema import rows_frame

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


def _present(codes: np.ndarray, n: int) -> np.ndarray:
    """The codes used, ascending (a count per code: no sort)."""
    return np.flatnonzero(np.bincount(codes[codes >= 0], minlength=n))


def _spread(
    head: tuple[str, Any, str, Any], model: np.ndarray, score: np.ndarray
) -> list[tuple[Any, ...]]:
    """One row (mode, kind, dimension, value, ...) of a value's model scores, none if all NaN.

    The best model is the first (in name order) at the highest score, the worst the last at
    the lowest, so models that all tie name two models with spread 0, not one model as both.
    One model has no spread: its worst model and spread are empty (undefined), not 0.
    """
    ok = ~np.isnan(score)
    if not ok.any():
        return []
    score, model = score[ok], model[ok]
    b, w = int(np.argmax(score)), len(score) - 1 - int(np.argmin(score[::-1]))
    best, worst = float(score[b]), float(score[w])
    if len(score) < 2:
        return [(*head[:3], str(head[3]), 1, model[b], best, "", np.nan, np.nan)]
    return [(*head[:3], str(head[3]), len(score), model[b], best, model[w], worst, best - worst)]


def _star_spreads(sdf: pd.DataFrame) -> list[tuple[Any, ...]]:
    """Model means per criterion and per task type, per rater kind, from integer codes.

    Each (value, model) mean is pandas' grouped mean over the same rows in the same order as
    a groupby of the labels, so the figures are the same floats; the codes are read once.
    """
    kind, kinds = _coded(sdf["rater_kind"])
    model, models = _coded(sdf["model"])
    score = sdf["score"].to_numpy(dtype=float)
    whole = whole_numbers(score)
    names = np.asarray(models, dtype=object)
    rows: list[tuple[Any, ...]] = []
    for k in [-1, *_present(kind, len(kinds))]:
        sel = model >= 0 if k < 0 else (model >= 0) & (kind == k)
        for dim in ("criterion", "task_type"):
            value, values = _coded(sdf[dim])
            keep = sel & (value >= 0)
            key = value[keep] * len(models) + model[keep]
            at, mean = group_means(key, score[keep], len(values) * len(models), whole=whole)
            v, m = np.divmod(at, len(models))
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

    A choice scores 0, 0.5 or 1, so the points of any subset of matches add up exactly in any
    order: one bincount per rater kind over (task type, model) gives ``points_arrays``' games
    and scores for every task type at once. Models without a game are left out as before.
    """
    kind, kinds = _coded(pair_df["rater_kind"])
    task, tasks = _coded(pair_df["task_type"])
    models = sorted(set(labels(pair_df["model_a"])).union(labels(pair_df["model_b"])))
    a, b, s = match_codes(pair_df, models)
    names = np.asarray(models, dtype=object)
    n_m, n_t = len(models), len(tasks)
    ok = (a >= 0) & (b >= 0) & (a != b) & (task >= 0)
    # One count over (kind + 1, task type, model); slot 0 holds a missing kind, "all" is the
    # sum over the slots (whole and half points: exact).
    cell = (kind[ok] + 1) * n_t + task[ok]
    ka, kb, ks, n = cell * n_m + a[ok], cell * n_m + b[ok], s[ok], (len(kinds) + 1) * n_t * n_m
    shape = (len(kinds) + 1, n_t, n_m)
    games_k = (np.bincount(ka, minlength=n) + np.bincount(kb, minlength=n)).reshape(shape)
    points_k = (np.bincount(ka, ks, n) + np.bincount(kb, 1.0 - ks, n)).reshape(shape)
    rows: list[tuple[Any, ...]] = []
    for k in [-1, *_present(kind, len(kinds))]:
        games = games_k.sum(axis=0) if k < 0 else games_k[k + 1]
        points = points_k.sum(axis=0) if k < 0 else points_k[k + 1]
        # The task types in their labels' order, as a groupby of the concatenated tables was.
        for t in sorted(np.flatnonzero(games.sum(axis=1)), key=lambda c: str(tasks[c])):
            played = games[t] > 0
            with np.errstate(invalid="ignore", divide="ignore"):
                score = points[t] / games[t]
            head = ("pairwise", "all" if k < 0 else kinds[k], "task_type", tasks[t])
            rows += _spread(head, names[played], score[played])
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
