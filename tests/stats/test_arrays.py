"""``arrays.distinct`` is ``np.unique`` (sorted distinct values), element for element."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ranking.stats.arrays import distinct


@given(st.lists(st.integers(-(2**40), 2**40), max_size=200))
def test_distinct_is_numpys_unique_for_integers(values: list[int]) -> None:
    x = np.asarray(values, dtype=np.int64)
    out = distinct(x)
    assert out.dtype == np.unique(x).dtype
    assert np.array_equal(out, np.unique(x))


@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True)), max_size=100))
def test_distinct_is_numpys_unique_for_floats_with_nan(values: list[float]) -> None:
    x = np.asarray(values, dtype=float)
    assert np.array_equal(distinct(x), np.unique(x), equal_nan=True)


def test_distinct_keeps_small_integer_codes_and_strings() -> None:
    codes = np.array([3, 1, 3, 0, 1], dtype=np.int8)
    assert distinct(codes).dtype == np.int8
    assert distinct(codes).tolist() == [0, 1, 3]
    names = np.array(["b", "a", "b"], dtype=object)
    assert distinct(names).tolist() == ["a", "b"]
    assert len(distinct(np.zeros(0, np.int64))) == 0
