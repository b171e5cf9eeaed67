"""Equal Elo ratings share a rank, as equal scores do on every other leaderboard (Points,
Bradley-Terry, star means: ``add_rank``, method "min"). Before 2026-11-27 the Elo ranks broke
ties by the models' alphabetical position: a study of ties only, where every model stays at
1500, ranked them 1, 2, 3."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from ranking.stats import elo
from ranking.stats.report import build_report

from .helpers import pair_frame


def _ties_only() -> pd.DataFrame:
    rows = []
    for item, (a, b) in enumerate([("x", "y"), ("y", "z"), ("x", "z")] * 4):
        rows += [(r, item, a, b, "tie") for r in ("h1", "h2")]
    return pair_frame(rows)


def test_a_study_of_ties_only_ranks_every_model_first_in_every_elo_table():
    t = build_report(None, _ties_only(), n_shuffles=5, n_bootstrap=0, trajectory_rounds=3)
    lead = t["leaderboard_elo"]
    assert set(lead["elo"]) == {1500.0}
    assert set(lead["rank"]) == {1}
    stab = t["elo_stability"]
    assert set(stab["elo_rank"]) == {1}
    assert set(stab["rank_mean"]) == {1.0} and set(stab["rank_max"]) == {1}
    assert set(t["elo_shuffles"]["rank"]) == {1}
    assert set(t["elo_trajectory"]["rank"]) == {1}
    # The other leaderboards of the same matches say the same.
    assert set(t["leaderboard_points"]["rank"]) == {1}
    assert set(t["leaderboard_bt"]["rank"]) == {1}


def test_ranks_desc_is_rank_min_of_the_negated_ratings_on_every_row():
    rng = np.random.default_rng(5)
    # Few distinct values, so that rows have ties; -inf marks models without a game.
    ratings = rng.choice([1480.0, 1500.0, 1516.0, -np.inf], size=(200, 6))
    expected = rankdata(-ratings, method="min", axis=-1)
    np.testing.assert_array_equal(elo.ranks_desc(ratings), expected)
    np.testing.assert_array_equal(elo.ranks_desc(ratings[0]), expected[0])


def test_points_rank_of_the_stability_table_is_an_integer_like_every_other_rank():
    """``points_rank`` was pandas' float rank (the API and the JSON download said 1.0 where
    every other rank says 1); its declared type is int64, as ``elo_rank``'s."""
    rows = []
    for item, (a, b, choice) in enumerate([("x", "y", "A"), ("y", "z", "A"), ("x", "z", "tie")]):
        rows += [(r, item, a, b, choice) for r in ("h1", "h2")]
    stab = build_report(None, pair_frame(rows), n_shuffles=3, n_bootstrap=0)["elo_stability"]
    assert len(stab) and str(stab["points_rank"].dtype) == "int64"
    assert str(stab["elo_rank"].dtype) == "int64"
    assert sorted(stab.loc[stab["rater_kind"] == "all", "points_rank"]) == [1, 2, 3]
