"""The bootstrap's rank correlations, all resamples at once, against scipy one resample at a time."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from ranking.stats import ranking_agreement as ra
from ranking.stats import synthetic


def _scipy_rows(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """scipy's spearmanr and kendalltau (tau-b) per row; NaN where a row has a missing model or no
    spread (what the vectorised function promises)."""
    rho, tau = np.full(len(x), np.nan), np.full(len(x), np.nan)
    for k, (a, b) in enumerate(zip(x, y, strict=True)):
        if np.isnan(a).any() or np.isnan(b).any() or np.ptp(a) == 0 or np.ptp(b) == 0:
            continue
        rho[k] = stats.spearmanr(a, b).statistic
        tau[k] = stats.kendalltau(a, b, variant="b").statistic
    return rho, tau


def test_twenty_models_with_ties_equal_scipy_to_1e12():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 6, (400, 20)).astype(float)
    y = rng.integers(0, 6, (400, 20)).astype(float) / 3  # many ties on both sides
    x[:5] = 2.0  # rows with no spread
    y[5, 3] = np.nan  # a model missing from a resample
    rho, tau = ra.rank_corr_rows(x, y)
    ref_rho, ref_tau = _scipy_rows(x, y)
    assert np.array_equal(np.isnan(rho), np.isnan(ref_rho)) and np.isnan(rho).sum() == 6
    assert np.nanmax(np.abs(rho - ref_rho)) < 1e-12
    assert np.nanmax(np.abs(tau - ref_tau)) < 1e-12


def test_the_report_table_is_the_same_with_scipy_per_resample(monkeypatch):
    s = synthetic.generate(n_models=6, n_questions=25, seed=4)
    fast = ra.ranking_agreement(s.star_df, s.pair_df, n_boot=200)
    monkeypatch.setattr(ra, "rank_corr_rows", _scipy_rows)
    slow = ra.ranking_agreement(s.star_df, s.pair_df, n_boot=200)
    assert len(fast) >= 2 and fast["spearman_ci_low"].notna().all()
    pd.testing.assert_frame_equal(fast, slow, check_exact=False, rtol=0, atol=1e-12)
