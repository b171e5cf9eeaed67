"""Spearman's p for few models: an exact permutation p, not scipy's t approximation."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ranking.stats.rankings import SPEARMAN_EXACT_MAX, correlation_table, rank_correlation


def _brute_force_p(x, y) -> float:
    """Every pairing, rho recomputed by scipy for each: the slow reference."""
    observed = abs(stats.spearmanr(x, y).statistic)
    rhos = [abs(stats.spearmanr(x, list(p)).statistic) for p in itertools.permutations(y)]
    return float(np.mean([r >= observed - 1e-12 for r in rhos]))


def test_four_models_in_the_same_order_give_two_of_twenty_four():
    x = pd.Series([4.0, 3.0, 2.0, 1.0], index=list("abcd"))
    r = rank_correlation(x, x * 10)
    assert r["spearman_rho"] == pytest.approx(1.0)
    assert r["spearman_p"] == pytest.approx(2 / 24)  # scipy's t approximation says 0
    assert r["kendall_p"] == pytest.approx(2 / 24)


def test_five_models_in_reverse_order():
    x = pd.Series([1.0, 2.0, 3.0, 4.0, 5.0], index=list("abcde"))
    r = rank_correlation(x, -x)
    assert r["spearman_rho"] == pytest.approx(-1.0)
    assert r["spearman_p"] == pytest.approx(2 / 120)


@pytest.mark.parametrize("seed", range(12))
def test_exact_p_equals_the_slow_reference_ties_included(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 7))
    x = rng.integers(0, 4, n).astype(float)  # ties on purpose
    y = rng.integers(0, 4, n).astype(float)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        x[0], y[0] = 10.0, 10.0
    idx = [f"m{i}" for i in range(n)]
    r = rank_correlation(pd.Series(x, index=idx), pd.Series(y, index=idx))
    assert r["spearman_p"] == pytest.approx(_brute_force_p(x, y), abs=1e-12)


def test_from_nine_models_on_the_t_approximation_is_kept():
    n = SPEARMAN_EXACT_MAX + 1
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=n), rng.normal(size=n)
    idx = [f"m{i}" for i in range(n)]
    r = rank_correlation(pd.Series(x, index=idx), pd.Series(y, index=idx))
    assert r["spearman_p"] == pytest.approx(stats.spearmanr(x, y).pvalue)


def test_the_correlations_table_carries_the_exact_p():
    a = pd.Series([4.0, 3.0, 2.0, 1.0], index=list("abcd"))
    table = correlation_table({"bt/human": a, "bt/judge": a + 1})
    assert table["spearman_p"].tolist() == pytest.approx([2 / 24])
