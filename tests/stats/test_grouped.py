"""``grouped``: group means over integer keys are pandas' groupby means, float for float, on the
bincount path (whole numbers, dense or sparse keys) and the groupby path (other values)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ranking.stats.grouped import dense_codes, group_means, whole_numbers


@pytest.mark.parametrize("spread", [10, 10**9])
@pytest.mark.parametrize("scale", [1.0, 0.1, -3.0])
def test_group_means_are_the_groupby_means(spread, scale):
    rng = np.random.default_rng(spread)
    key = rng.integers(0, spread, 50_000)
    values = rng.integers(-5, 6, len(key)) * scale
    at, mean = group_means(key, values, spread)
    want = pd.Series(values).groupby(key, sort=True).mean()
    assert at.tolist() == want.index.tolist()
    assert np.array_equal(mean, want.to_numpy())  # bit for bit
    assert whole_numbers(values) == (scale != 0.1)


def test_whole_numbers_refuse_nan_inf_and_empty():
    assert not whole_numbers(np.array([1.0, np.nan]))
    assert not whole_numbers(np.array([1.0, np.inf]))
    assert not whole_numbers(np.array([]))
    assert whole_numbers(np.array([1.0, -2.0, 0.0]))


def test_dense_codes_equal_values_equal_codes():
    v = np.array([105, 100, 105, 2_000_000_000, 100])
    codes, n = dense_codes(v)
    assert codes[0] == codes[2] and codes[1] == codes[4] and len(set(codes.tolist())) == 3
    assert codes.min() >= 0 and codes.max() < n
    codes, n = dense_codes(np.array([7, 9, 7]))
    assert (codes.tolist(), n) == ([0, 2, 0], 3)
