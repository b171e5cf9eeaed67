"""P-values of Spearman's rho and Kendall's tau-b: the permutation distribution, counted in full up
to nine models and against slow references (every pairing, one by one)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ranking.stats import rank_tests
from ranking.stats.rank_tests import EXACT_MAX, N_RANDOM
from ranking.stats.rankings import correlation_table, rank_correlation


def _brute_force_p(x, y, coefficient) -> float:
    """Every pairing of y with x, the coefficient recomputed by scipy for each."""
    observed = abs(coefficient(x, y).statistic)
    values = [abs(coefficient(x, list(p)).statistic) for p in itertools.permutations(y)]
    return float(np.mean([v >= observed - 1e-12 for v in values]))


def _kendall(x, y):
    return stats.kendalltau(x, y, variant="b")


def _slow_spearman_p(x, y) -> float:
    """Every pairing listed by itertools (9! rows for nine models), rho from scipy's mid-ranks
    for each row in floating point: independent of rank_tests' integer ranks and its own
    enumeration of the orders."""
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    orders = np.array(list(itertools.permutations(ry - ry.mean())))
    dx = rx - rx.mean()
    scale = np.sqrt((dx**2).sum() * ((ry - ry.mean()) ** 2).sum())
    rho = orders @ dx / scale
    observed = abs(float((ry - ry.mean()) @ dx / scale))
    return float(np.mean(np.abs(rho) >= observed - 1e-12))


def _series(x, y):
    idx = [f"m{i}" for i in range(len(x))]
    return pd.Series(x, index=idx), pd.Series(y, index=idx)


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
    r = rank_correlation(*_series(x, y))
    assert r["spearman_p"] == pytest.approx(_brute_force_p(x, y, stats.spearmanr), abs=1e-12)
    assert r["kendall_p"] == pytest.approx(_brute_force_p(x, y, _kendall), abs=1e-12)


def test_kendall_with_ties_among_few_models_is_exact_not_the_normal_approximation():
    # Two Points scores tie: scipy falls back to its normal approximation (p = 0.071 here),
    # the 24 pairings give 1/6.
    x, y = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 2.0, 2.0, 4.0])
    r = rank_correlation(*_series(x, y))
    assert r["kendall_p"] == pytest.approx(_brute_force_p(x, y, _kendall), abs=1e-12)
    assert r["kendall_p"] == pytest.approx(4 / 24)
    assert abs(_kendall(x, y).pvalue - r["kendall_p"]) > 0.05


@pytest.mark.parametrize("ties", [False, True])
def test_nine_models_are_counted_in_full(ties):
    rng = np.random.default_rng(5)
    x = rng.normal(size=EXACT_MAX)
    y = x + rng.normal(size=EXACT_MAX)
    if ties:
        x, y = np.round(x), np.round(y)
    r = rank_correlation(*_series(x, y))
    assert r["spearman_p"] == pytest.approx(_slow_spearman_p(x, y), abs=1e-12)
    if not ties:  # without ties scipy's Kendall p is exact: the same distribution
        assert r["kendall_p"] == pytest.approx(_kendall(x, y).pvalue, abs=1e-12)
    # every p is a whole number of pairings out of 9!
    assert (r["spearman_p"] * 362_880) == pytest.approx(round(r["spearman_p"] * 362_880))


def test_beyond_nine_models_the_p_comes_from_random_pairings():
    n = EXACT_MAX + 3
    rng = np.random.default_rng(3)
    x = rng.normal(size=n)
    y = x + 1.5 * rng.normal(size=n)
    r = rank_correlation(*_series(x, y))
    # (1 + hits) / (1 + draws), within Monte-Carlo error of the reference distribution
    assert round(r["spearman_p"] * (N_RANDOM + 1)) >= 1
    shuffled = rng.permuted(np.tile(y, (2_500, 1)), axis=1)
    draws = stats.spearmanr(x, shuffled.T).statistic[0, 1:]  # x against each shuffled column
    reference = np.mean(np.abs(draws) >= abs(r["spearman_rho"]) - 1e-12)
    assert r["spearman_p"] == pytest.approx(reference, abs=0.025)
    assert r["kendall_p"] == pytest.approx(_kendall(x, y).pvalue, abs=1e-12)  # exact, no ties
    # A tie: Kendall's p from the same random pairings, near the reference too.
    y[1] = y[0]
    tied = rank_correlation(*_series(x, y))
    taus = np.array([_kendall(x, rng.permutation(y)).statistic for _ in range(2_500)])
    ref_tau = np.mean(np.abs(taus) >= abs(tied["kendall_tau_b"]) - 1e-12)
    assert tied["kendall_p"] == pytest.approx(ref_tau, abs=0.025)


def test_a_p_is_never_zero_when_drawn():
    n = 15
    x = np.arange(n, dtype=float)
    assert rank_tests.spearman_p(x, x) == pytest.approx(1 / (N_RANDOM + 1))


def test_the_correlations_table_carries_the_exact_p():
    a = pd.Series([4.0, 3.0, 2.0, 1.0], index=list("abcd"))
    table = correlation_table({"bt/human": a, "bt/judge": a + 1})
    assert table["spearman_p"].tolist() == pytest.approx([2 / 24])
    assert table["kendall_p"].tolist() == pytest.approx([2 / 24])
