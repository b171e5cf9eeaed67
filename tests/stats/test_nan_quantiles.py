"""Percentile intervals where a figure is undefined in every resample: NaN, with numpy's numbers
for the other columns and no "All-NaN slice" warning (a report runs on several threads, so the
warning is not filtered process-wide but never raised)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ranking.stats import bradley_terry as bt
from ranking.stats.intervals import nan_quantiles, percentile_interval


@pytest.fixture
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_all_nan_columns_are_nan_and_the_others_are_numpys(no_warnings):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(200, 5))
    x[:, 1] = np.nan
    x[::7, 3] = np.nan
    lo, hi = percentile_interval(x)
    assert np.isnan(lo[1]) and np.isnan(hi[1])
    kept = [0, 2, 3, 4]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = np.nanpercentile(x[:, kept], [2.5, 97.5], axis=0)
    assert np.array_equal(np.vstack([lo[kept], hi[kept]]), expected)
    assert np.isnan(nan_quantiles(np.full((4, 2, 3), np.nan), [0.5], axis=1)).all()
    assert nan_quantiles(np.full((4, 2, 3), np.nan), [0.5], axis=1).shape == (1, 4, 3)


def test_bradley_terry_with_a_model_that_never_played_raises_no_warning(no_warnings):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 300)
    b = (a + 1) % 3  # model 3 never plays
    s = (rng.random(300) < 0.6).astype(float)
    table = bt.table(a, b, s, ["m0", "m1", "m2", "m3"], n_rounds=50, rng=np.random.default_rng(1))
    assert len(table) == 4
