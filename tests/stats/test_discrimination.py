"""Discrimination from integer codes read once: the same table as grouping the labels per rater
kind and per task type (the way it was computed before), and a hand-worked case."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from ranking.stats import synthetic
from ranking.stats.discrimination import _DISC_COLS, discrimination
from ranking.stats.rankings import match_arrays, points_arrays
from ranking.stats.schema import coerce_pair, coerce_star, rows_frame


def _spread(scores: pd.DataFrame, head: tuple[str, Any, str], col: str) -> list[tuple[Any, ...]]:
    rows = []
    for value, g in scores.groupby(col, sort=True):
        g = g[g["score"].notna()]
        if len(g) == 1:  # one model: no worst model, no spread
            best = g["score"].iloc[0]
            rows.append((*head, str(value), 1, g["model"].iloc[0], best, "", np.nan, np.nan))
        elif len(g):
            # The first model at the best score, the last at the worst (rows in name order).
            b, w = g["score"].idxmax(), g["score"][::-1].idxmin()
            best, worst = g.loc[b, "score"], g.loc[w, "score"]
            row = (*head, str(value), len(g), g.loc[b, "model"], best, g.loc[w, "model"], worst)
            rows.append((*row, best - worst))
    return rows


def _by_labels(star: pd.DataFrame, pair: pd.DataFrame) -> pd.DataFrame:
    """The reference: a groupby of the labels for every (kind, dimension) and task type."""
    rows: list[tuple[Any, ...]] = []
    sdf = star[star["score"].notna()]
    for kind, g in [("all", sdf), *sdf.groupby("rater_kind", sort=True)]:
        for dim in ("criterion", "task_type"):
            means = g.groupby([dim, "model"])["score"].mean().reset_index()
            rows += _spread(means, ("star", kind, dim), dim)
    for kind, g in [("all", pair), *pair.groupby("rater_kind", sort=True)]:
        parts = []
        for tt, gt in g.groupby("task_type", sort=True):
            a, b, s, models = match_arrays(gt)
            p = points_arrays(a, b, s, len(models))
            t = pd.DataFrame({"model": models, "score": p["score"], "games": p["games"]})
            parts.append(t[t["games"] > 0].assign(task_type=tt).reset_index(drop=True))
        if parts:
            both = pd.concat(parts, ignore_index=True)
            rows += _spread(both, ("pairwise", kind, "task_type"), "task_type")
    return rows_frame(rows, _DISC_COLS)


def _frames(coerced: bool, with_gaps: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    s = synthetic.generate(n_models=6, n_questions=15, seed=3)
    star, pair = s.star_df.copy(), s.pair_df.copy()
    if coerced:  # categorical labels, as the report reads them
        star, pair = coerce_star(star), coerce_pair(pair)
    if with_gaps:  # missing labels and a missing score leave those rows out
        star.loc[star.index[::7], "task_type"] = None
        star.loc[star.index[::11], "score"] = np.nan
        pair.loc[pair.index[::5], "task_type"] = None
        pair.loc[pair.index[::13], "model_b"] = None
    return star, pair


@pytest.mark.parametrize("with_gaps", [False, True])
@pytest.mark.parametrize("coerced", [False, True])
def test_the_table_is_the_one_grouping_the_labels_gives(coerced, with_gaps):
    star, pair = _frames(coerced, with_gaps)
    got = discrimination(star, pair)
    assert len(got) > 20
    pd.testing.assert_frame_equal(got, _by_labels(star, pair))


def test_the_spread_is_best_minus_worst_model_mean():
    star = pd.DataFrame(
        {
            "rater_kind": ["human"] * 4,
            "criterion": ["fluency"] * 4,
            "task_type": ["qa"] * 4,
            "model": ["m1", "m1", "m2", "m3"],
            "score": [4.0, 2.0, 5.0, 1.0],
        }
    )
    pair = pd.DataFrame(columns=["rater_kind", "task_type", "model_a", "model_b", "choice"])
    got = discrimination(star, pair)
    row = got[(got["rater_kind"] == "human") & (got["dimension"] == "criterion")].iloc[0]
    assert (row["n_models"], row["best_model"], row["worst_model"]) == (3, "m2", "m3")
    assert row["spread"] == 4.0
