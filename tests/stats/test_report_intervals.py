"""Every bootstrap or normal interval of the report, on small synthetic studies: it contains its
point estimate, it is the same on a second build with the same seed, and it narrows when the
study has four times the questions."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from ranking.stats import synthetic
from ranking.stats.report import build_report

# (table, estimate, low, high): every interval the report gives.
INTERVALS = [
    ("leaderboard_star", "mean", "ci_low", "ci_high"),
    ("leaderboard_bt", "rating", "ci_low", "ci_high"),
    ("leaderboard_bt", "rank", "rank_ci_low", "rank_ci_high"),
    ("kappa_pairs", "kappa", "ci_low", "ci_high"),
    ("chance_agreement", "estimate", "ci_low", "ci_high"),
    ("ranking_agreement", "spearman_rho", "spearman_ci_low", "spearman_ci_high"),
    ("ranking_agreement", "kendall_tau_b", "kendall_ci_low", "kendall_ci_high"),
    ("ppi", "human", "human_low", "human_high"),
    ("ppi", "ppi", "ppi_low", "ppi_high"),
]


def _report(n_questions: int, seed: int) -> dict:
    s = synthetic.generate(n_models=4, n_questions=n_questions, n_pairs_per_question=3,
                           n_onsite=4, n_crowd=6, n_public=5, seed=seed)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_report(s.star_df, s.pair_df, n_bootstrap=200, seed=seed)


def _defined(t: dict, name: str, est: str, lo: str, hi: str) -> pd.DataFrame:
    return t[name][[est, lo, hi]].astype(float).dropna()


def _width(d: pd.DataFrame, lo: str, hi: str) -> float:
    return float((d[hi] - d[lo]).median())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_interval_contains_its_estimate_and_repeats(seed):
    t, again = _report(20, seed), _report(20, seed)
    for name, est, lo, hi in INTERVALS:
        d = _defined(t, name, est, lo, hi)
        assert len(d), name
        assert ((d[lo] <= d[est] + 1e-9) & (d[est] <= d[hi] + 1e-9)).all(), (name, est)
        pd.testing.assert_frame_equal(t[name], again[name])


def test_intervals_narrow_with_more_questions():
    small, large = _report(20, 1), _report(80, 1)
    for name, est, lo, hi in INTERVALS:
        if name == "ranking_agreement" or (name, est) == ("leaderboard_bt", "rank"):
            continue  # four models: the rank intervals are whole numbers, often already tight
        w_small = _width(_defined(small, name, est, lo, hi), lo, hi)
        w_large = _width(_defined(large, name, est, lo, hi), lo, hi)
        assert w_large < w_small, (name, est, w_small, w_large)
        assert np.isfinite(w_large)
