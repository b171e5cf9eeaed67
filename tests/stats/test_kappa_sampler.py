"""The per-pair kappa bootstrap's sampler (ranking.stats.kappa_kernel, docs/decisions/
report-speed.md, fifth round, kernels): each binomial of the chain is drawn by inversion searched
outward from the mode (or numpy's BTPE for large variances), and the chain must give exactly the
multinomial distribution of the table."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ranking.stats import elo

pytestmark = pytest.mark.skipif(not elo.HAVE_NUMBA, reason="compiled kernels need numba")


@pytest.mark.parametrize(
    ("n", "r"), [(1, 0.5), (7, 0.3), (40, 0.025), (60, 0.5), (300, 0.11), (2000, 0.05)]
)
def test_search_from_the_mode_gives_each_value_its_probability(n, r):
    """Deterministic: the inversion maps a fine grid of uniforms to each value in proportion to
    its probability (within the grid's resolution), whatever order it visits the values in."""
    from ranking.stats.kappa_kernel import _search

    grid = (np.arange(200_000) + 0.5) / 200_000
    mode = int((n + 1) * r)
    f = stats.binom.pmf(mode, n, r)
    x = np.array([_search(n, mode, f, r / (1 - r), u) for u in grid])
    freq = np.bincount(x, minlength=n + 1) / len(grid)
    np.testing.assert_allclose(freq, stats.binom.pmf(np.arange(n + 1), n, r), atol=2e-5)


def _g_test(draws: np.ndarray, n: int, p: float) -> float:
    """p-value of a G test of the draws against Binomial(n, p), bins pooled to >= 5 expected."""
    pmf = stats.binom.pmf(np.arange(n + 1), n, p)
    expected = pmf * len(draws)
    observed = np.bincount(draws, minlength=n + 1).astype(float)
    bins = np.cumsum(expected)  # pool consecutive values until each bin expects >= 5
    edges = np.searchsorted(bins, np.arange(5.0, bins[-1], 5.0))
    obs = np.add.reduceat(observed, np.unique(np.r_[0, edges[edges <= n]]))
    exp = np.add.reduceat(expected, np.unique(np.r_[0, edges[edges <= n]]))
    exp *= obs.sum() / exp.sum()
    g = 2 * np.sum(np.where(obs > 0, obs * np.log(np.where(obs > 0, obs, 1) / exp), 0.0))
    return float(stats.chi2.sf(g, len(obs) - 1))


# (cell count, the other cell's count): the first cell of the chain is Binomial(n, a / n).
# p near 0 and 1 (the flip), 1/2, small and large n, both sides of BTPE_VARIANCE.
CASES = [(1, 9), (3, 117), (117, 3), (30, 30), (2, 998), (900, 100), (400, 3600), (10_800, 16_200)]


@pytest.mark.parametrize(("a", "b"), CASES)
def test_first_cell_is_binomial(a, b):
    from ranking.stats.kappa_kernel import resample_tables

    draws = resample_tables(np.array([a, b, 0, 0]), 40_000, seed=11)
    assert (draws.sum(axis=1) == a + b).all()
    assert (draws[:, 2:] == 0).all()
    assert _g_test(draws[:, 0], a + b, a / (a + b)) > 1e-3


def test_chain_is_the_multinomial_of_the_table():
    """A 4 x 4 table with small and large cells: every cell's marginal is binomial, and the
    cells' means and covariances are the multinomial's (n p, n (diag p - p p^T))."""
    from ranking.stats.kappa_kernel import resample_tables

    table = np.array([40, 5, 1, 0, 8, 300, 2, 1, 0, 3, 12, 2, 1, 0, 2, 900])
    n, p = int(table.sum()), table / table.sum()
    draws = resample_tables(table, 40_000, seed=5)
    assert (draws.sum(axis=1) == n).all()
    assert (draws[:, table == 0] == 0).all()
    for cell in np.flatnonzero(table):
        assert _g_test(draws[:, cell], n, p[cell]) > 1e-3, cell
    cov = n * (np.diag(p) - np.outer(p, p))
    se_mean = np.sqrt(np.diag(cov) / len(draws))
    assert (np.abs(draws.mean(axis=0) - n * p) <= 5 * se_mean + 1e-12).all()
    # The sample covariance's standard error: about sqrt((s_ii s_jj + s_ij^2) / B).
    s_ii = np.diag(cov)
    se_cov = np.sqrt((np.outer(s_ii, s_ii) + cov**2) / len(draws))
    assert (np.abs(np.cov(draws.T) - cov) <= 5 * se_cov + 1e-12).all()


def test_resamples_repeat_for_a_seed_and_differ_between_seeds():
    from ranking.stats.kappa_kernel import resample_tables

    table = np.array([20, 3, 4, 25])
    one, again = resample_tables(table, 500, 3), resample_tables(table, 500, 3)
    np.testing.assert_array_equal(one, again)
    assert not np.array_equal(one, resample_tables(table, 500, 4))
