"""Cohen's kappa of a pair that never varies (docs/statistics.md, "Chance-corrected
agreement"): two raters who gave one and the same value throughout have p_e = 1, so kappa is
undefined (listed with an empty kappa, left out of the mean and of n_rater_pairs); a pair where
only one rater never varies has kappa 0 and counts. Checked against scikit-learn."""

from __future__ import annotations

import math

from sklearn.metrics import cohen_kappa_score

from ranking.stats.report import build_report

from .helpers import star_frame

H3 = [1, 3, 2, 3, 1, 2, 3, 3]


def test_a_constant_pair_is_undefined_and_left_out_of_the_mean_a_half_constant_pair_is_zero():
    rows = [(r, i, "m", "fluency", 2) for r in ("h1", "h2") for i in range(len(H3))]
    rows += [("h3", i, "m", "fluency", v) for i, v in enumerate(H3)]
    t = build_report(star_frame(rows), None, n_shuffles=0, n_bootstrap=0, trajectory_rounds=0)
    pairs = {(r.rater_a, r.rater_b): r.kappa for r in t["kappa_pairs"].itertuples()}
    assert set(pairs) == {("h1", "h2"), ("h1", "h3"), ("h2", "h3")}
    assert math.isnan(pairs[("h1", "h2")])
    constant = [2] * len(H3)
    assert pairs[("h1", "h3")] == cohen_kappa_score(constant, H3) == 0.0
    assert pairs[("h2", "h3")] == 0.0
    row = t["kappa"].query("pool == 'all'").iloc[0]
    assert row["n_rater_pairs"] == 2
    assert row["mean_cohen_kappa"] == 0.0
