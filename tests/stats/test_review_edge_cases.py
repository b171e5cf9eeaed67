"""Found by reviewing the report's figures on synthetic studies with known answers (imported as a
user would): the humans row of ``judge_bias`` and Krippendorff's alpha when every value is the
same."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from ranking.stats import synthetic
from ranking.stats.agreement import agreement_tables, judgements, krippendorff_alpha
from ranking.stats.bias import position_bias
from ranking.stats.judge_report import judge_bias, judge_costs
from ranking.stats.leaderboards import bt_table
from ranking.stats.length_control import length_controlled
from ranking.stats.schema import coerce_pair, coerce_star

from .helpers import pair_frame


def test_the_humans_row_of_judge_bias_has_the_humans_position_consistency():
    pair = coerce_pair(synthetic.generate(n_models=4, n_questions=30, seed=5).pair_df)
    pos = position_bias(pair)
    human = pos[(pos["group_by"] == "rater_kind") & (pos["group"] == "human")].iloc[0]
    assert human["n_both_orders"] > 0
    bias = judge_bias(pair, length_controlled(pair), pos, judge_costs(None))
    row = bias[(bias["group_by"] == "humans") & (bias["group"] == "all")].iloc[0]
    assert row["n_both_orders"] == human["n_both_orders"]
    assert row["position_consistency"] == human["position_consistency"]


def test_alpha_of_identical_values_is_undefined_like_fleiss_and_the_interval_table():
    # Two raters who both say "tie" on every item: no variation, so D_e = 0 and alpha = 0/0
    # (the `krippendorff` package refuses such data); Fleiss' kappa is undefined there too.
    units = np.repeat(np.arange(8), 2)
    assert math.isnan(krippendorff_alpha(units, np.zeros(16), "nominal"))
    star = coerce_star(synthetic.generate(n_models=2, n_questions=4, seed=1).star_df)
    star = star.assign(score=2.0)
    alpha, kappa = agreement_tables(judgements(star, coerce_pair(None)))
    assert len(alpha) > 0
    assert alpha["alpha"].isna().all()
    assert kappa["fleiss_kappa"].isna().all()


# The Bradley-Terry worked example of docs/statistics.md: six pairs of four models, m4 never wins.
BT_GAMES = {
    ("m1", "m2"): (6, 3, 1),
    ("m2", "m3"): (6, 3, 1),
    ("m1", "m3"): (8, 1, 1),
    ("m1", "m4"): (5, 0, 0),
    ("m2", "m4"): (4, 0, 1),
    ("m3", "m4"): (4, 0, 1),
}


def _bt_example() -> pd.DataFrame:
    rows, item = [], 0
    for (a, b), (wins, losses, ties) in BT_GAMES.items():
        for choice in ["A"] * wins + ["B"] * losses + ["tie"] * ties:
            item += 1
            rows.append(("g1", item, a, b, choice))
    return coerce_pair(pair_frame(rows))


@pytest.mark.parametrize(
    ("ties", "ratings", "games"),
    [
        ("half", (1748.3, 1610.2, 1488.4, 1153.2), (25, 25, 25, 15)),
        ("exclude", (1849.4, 1701.4, 1554.4, 894.9), (23, 22, 22, 13)),
    ],
)
def test_bradley_terry_worked_example(ties, ratings, games):
    t = bt_table(
        _bt_example(), both_bad="draw", n_bootstrap=0, rng=np.random.default_rng(0), ties=ties
    )
    t = t[t["rater_kind"] == "all"].set_index("model")
    assert tuple(t["rating"].round(1)) == ratings
    assert tuple(t["games"]) == games

    # The same maximum, found directly: ties as half wins plus 0.1 virtual tied games per pair.
    def nll(beta: np.ndarray) -> float:
        b = np.r_[beta, 0.0]
        total = 0.0
        for (x, y), (w, lose, d) in BT_GAMES.items():
            i, j = int(x[1]) - 1, int(y[1]) - 1
            half = d / 2 if ties == "half" else 0.0
            p = 1 / (1 + np.exp(b[j] - b[i]))
            total -= (w + half + 0.05) * np.log(p) + (lose + half + 0.05) * np.log(1 - p)
        return total

    beta = np.r_[optimize.minimize(nll, np.zeros(3), method="BFGS", tol=1e-12).x, 0.0]
    direct = 1500 + 400 * (beta - beta.mean()) / np.log(10)
    assert t["rating"].to_numpy() == pytest.approx(direct, abs=1e-3)


def test_position_consistency_worked_example():
    # docs/statistics.md: item 1 seen with A left ("A") and with A right ("A"): consistent; item 2
    # "A" then "B" after the swap: not. 1 of 2.
    rows = [
        ("r1", 1, "x", "y", "A", True),
        ("r1", 1, "x", "y", "A", False, True),
        ("r1", 2, "x", "y", "A", True),
        ("r1", 2, "x", "y", "B", False, True),
    ]
    pos = position_bias(coerce_pair(pair_frame(rows)))
    row = pos[(pos["group_by"] == "rater_kind") & (pos["group"] == "human")].iloc[0]
    assert row["n_both_orders"] == 2
    assert row["position_consistency"] == 0.5
