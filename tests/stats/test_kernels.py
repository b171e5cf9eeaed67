"""The compiled kernels' resampling streams (docs/decisions/report-speed.md, fifth round): Elo
shuffles shared by the rater kinds, and the per-pair kappa bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from ranking.stats import elo

pytestmark = pytest.mark.skipif(not elo.HAVE_NUMBA, reason="compiled kernels need numba")


def _matches(n: int, n_models: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n_models, n)
    b = (a + rng.integers(1, n_models, n)) % n_models
    return a, b, rng.choice([0.0, 0.5, 1.0], n)


def test_one_group_plays_the_same_order_as_the_union():
    a, b, s = _matches(3000, 6, 1)
    out = elo.elo_shuffles_grouped([(a, b, s)], 6, n_shuffles=7, rng=np.random.default_rng(2))
    assert out is not None
    union, (group,) = out
    np.testing.assert_array_equal(union, group)
    assert union.std(axis=0).min() > 0  # different orders, different ratings
    np.testing.assert_allclose(union.mean(axis=1), 1500.0)


def test_each_group_plays_exactly_its_own_matches():
    """Group 0: one match repeated (any order gives the time-order ratings); group 1: matches
    among models 2-5 only (models 0 and 1 never move), zero-sum."""
    same = (np.zeros(50, int), np.ones(50, int), np.ones(50))
    a, b, s = _matches(2000, 4, 3)
    other = (a + 2, b + 2, s)
    out = elo.elo_shuffles_grouped([same, other], 6, n_shuffles=5, rng=np.random.default_rng(4))
    assert out is not None
    union, (g0, g1) = out
    expected = elo.elo_ratings(*same, 6)
    np.testing.assert_allclose(g0, np.broadcast_to(expected, g0.shape), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(g1[:, :2], 1500.0)
    np.testing.assert_allclose(g1.mean(axis=1), 1500.0)
    assert g1[:, 2:].std(axis=0).min() > 0
    assert not np.allclose(union, g1)  # the union also plays group 0's matches


def test_grouped_shuffles_are_reproducible_and_decode_wide_model_codes():
    """More than 2^14 models: the packed codes no longer fit an int32 (int64 path)."""
    m = 70_000
    a, b = np.array([m - 1] * 20), np.array([0] * 20)
    s = np.ones(20)
    assert elo.pack_matches(a, b, s, m, np.zeros(20, int)).dtype == np.int64
    r1 = elo.elo_shuffles_grouped([(a, b, s)], m, n_shuffles=3, rng=np.random.default_rng(5))
    r2 = elo.elo_shuffles_grouped([(a, b, s)], m, n_shuffles=3, rng=np.random.default_rng(5))
    assert r1 is not None and r2 is not None
    np.testing.assert_array_equal(r1[0], r2[0])
    expected = elo.elo_ratings(a, b, s, m)
    np.testing.assert_allclose(r1[0][0, [0, m - 1]], expected[[0, m - 1]], atol=1e-9)


def test_kappa_kernel_intervals_match_numpys_multinomial_bootstrap():
    """The compiled bootstrap (inline uniforms, a chain of binomials) and numpy's
    multinomial draw resample the same tables: their percentile intervals agree within the
    Monte Carlo error, and the compiled ones repeat exactly for the same seed."""
    from ranking.stats import intervals
    from ranking.stats.kappa_kernel import cohen_intervals_fast

    tables = np.array(
        [
            [[40, 5, 1, 0], [8, 30, 2, 1], [0, 3, 12, 2], [1, 0, 2, 9]],  # chain of binomials
            [[3, 1, 0, 0], [1, 2, 1, 0], [0, 0, 2, 1], [0, 1, 0, 2]],  # few items per cell
            [[400, 60, 0, 0], [70, 350, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],  # large means
        ]
    )
    fast = cohen_intervals_fast(tables, 4000, np.random.default_rng(1))
    again = cohen_intervals_fast(tables, 4000, np.random.default_rng(1))
    assert fast is not None and again is not None
    np.testing.assert_array_equal(fast[0], again[0])
    ref = intervals.cohen_intervals(tables, 4000, np.random.default_rng(2))
    # 16 items: kappa takes few values, so its percentiles jump (by 0.06 between numpy seeds).
    tol = np.array([0.015, 0.1, 0.015])
    assert (np.abs(fast[0] - ref[0]) <= tol).all()
    assert (np.abs(fast[1] - ref[1]) <= tol).all()


def test_bt_compiled_cell_sums_equal_the_numpy_sums():
    """Bradley-Terry's bootstrap sums each round's cell draws into W and N: the compiled loop
    and the numpy gather / reduceat give the same matrices, bit for bit (sums of whole and half
    counts), so the intervals do not depend on numba."""
    from ranking.stats import bradley_terry as bt

    rng = np.random.default_rng(8)
    m = 6
    a = rng.integers(0, m, 500)
    b = (a + rng.integers(1, m, 500)) % m
    code = (a * m + b) * 3 + rng.integers(0, 3, 500)
    cells, counts = np.unique(code, return_counts=True)
    draws = rng.multinomial(int(counts.sum()), counts / counts.sum(), size=50)
    pair, out = np.divmod(cells, 3)
    ca, cb = np.divmod(pair, m)
    cs = out / 2.0
    ab, ba = ca * m + cb, cb * m + ca
    assert bt._add_cells is not None
    w, n = bt._add_cells(draws, ab, ba, cs, m)
    d = draws.astype(float)
    np.testing.assert_array_equal(w, bt._sum_columns(d, np.r_[ab, ba], np.r_[cs, 1 - cs], m))
    np.testing.assert_array_equal(n, bt._sum_columns(d, np.r_[ab, ba], np.ones(2 * len(cs)), m))
    assert (n.sum(axis=(1, 2)) == 2 * counts.sum()).all()
