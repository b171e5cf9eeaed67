"""Found by reviewing the report's figures on synthetic studies with known answers (imported as a
user would): the humans row of ``judge_bias`` and Krippendorff's alpha when every value is the
same."""

from __future__ import annotations

import math

import numpy as np

from ranking.stats import synthetic
from ranking.stats.agreement import agreement_tables, judgements, krippendorff_alpha
from ranking.stats.bias import position_bias
from ranking.stats.judge_report import judge_bias, judge_costs
from ranking.stats.length_control import length_controlled
from ranking.stats.schema import coerce_pair, coerce_star


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
