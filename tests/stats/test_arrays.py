"""``arrays.distinct`` is ``np.unique`` (sorted distinct values), element for element; the
group helpers list what a sorted groupby lists."""

from __future__ import annotations

import numpy as np
import pandas as pd
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


def test_mode_criterion_groups_are_the_sorted_groupby():
    from ranking.stats.arrays import key_groups, mode_criterion_groups

    f = pd.DataFrame(
        {
            "mode": pd.Categorical(["star", "pairwise", "star", "star", "pairwise"]),
            "criterion": pd.Categorical(["b", "pairwise", "a", "b", "pairwise"]),
        }
    )
    expected = [
        (str(m), str(c), g.index.to_numpy())
        for (m, c), g in f.groupby(["mode", "criterion"], sort=True, observed=True)
    ]
    got = mode_criterion_groups(f)
    assert [(m, c) for m, c, _ in got] == [(m, c) for m, c, _ in expected]
    for (_, _, rows), (_, _, want) in zip(got, expected, strict=True):
        np.testing.assert_array_equal(rows, want)
    assert mode_criterion_groups(f.iloc[:0]) == []
    got_keys = key_groups(np.array([2, 0, 2]), 3)
    assert [k for k, _ in got_keys] == [0, 2]
    np.testing.assert_array_equal(got_keys[1][1], [0, 2])


def test_first_ratings_selects_once():
    from ranking.stats.arrays import first_ratings

    j = pd.DataFrame({"is_first": [True, False, True], "a": [1, 2, 3], "b": [4, 5, 6]})
    f = first_ratings(j, ["a", "is_first"])
    assert list(f.columns) == ["a", "is_first"]
    assert f["a"].tolist() == [1, 3]
    # Already the first ratings: the frame itself, not another copy.
    assert first_ratings(f, ["a"]) is f
    assert first_ratings(j.iloc[:0], ["a"]).empty


def test_run_pairs_lists_runs_by_length_then_position_in_triu_order() -> None:
    from ranking.stats.arrays import run_pairs

    key = np.array([5, 5, 5, 6, 7, 7, 8, 8])
    a, b = run_pairs(key)
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == [
        (4, 5),
        (6, 7),
        (0, 1),
        (0, 2),
        (1, 2),
    ]
    assert run_pairs(np.array([1, 2, 3]))[0].shape == (0,)


def test_rater_pairs_numbers_pairs_the_same_with_32_and_64_bit_keys() -> None:
    from ranking.stats.arrays import rater_pairs

    rng = np.random.default_rng(0)
    rater = rng.integers(0, 40, 3000)
    a = rng.integers(0, 3000, 5000)
    b = rng.integers(0, 3000, 5000)
    small = rater_pairs(rater, 40, a, b, 3)  # 32-bit keys
    big = rater_pairs(rater * 1000, 50_000, a, b, 3)  # 50_000**2 >= 2**31: 64-bit keys
    assert np.array_equal(small[0], big[0])
    assert np.array_equal(small[1] // 40 * 1000, big[1] // 50_000)
    assert small[1].dtype == big[1].dtype == np.int64
    # The kept pairs: two different raters, >= 3 row pairs, numbered by first appearance; the
    # other row pairs in the spare slot.
    pid, keys = small
    n_p = len(keys)
    ra, rb = rater[a], rater[b]
    counts = pd.Series(ra * 40 + rb).value_counts()
    want = [k for k in pd.unique(ra * 40 + rb) if counts[k] >= 3 and k // 40 != k % 40]
    assert keys.tolist() == want and n_p > 0
    assert np.array_equal(keys[pid[pid < n_p]], (ra * 40 + rb)[pid < n_p])
    assert ((pid == n_p) == ~np.isin(ra * 40 + rb, keys)).all()
