"""The PPI++ section's integer-code groupings give what the pandas groupbys they replace give:
group numbers and keys (``groupby(sort=True).ngroup()``), the outcome rows (a groupby mean per
rating for "overall") and the item tables (groupby means and distinct counts, outer-joined),
value for value."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ranking.stats.ppi_groups import combined_key, group_numbers, int_codes, positions
from ranking.stats.ppi_section import item_table, star_outcomes
from ranking.stats.rankings import OVERALL
from ranking.stats.schema import coerce_star
from ranking.stats.synthetic import generate


def _labels(rng: np.random.Generator, n: int, names: list[str], categorical: bool) -> pd.Series:
    values = pd.Series(rng.choice(np.array(names, dtype=object), n))
    values[rng.random(n) < 0.05] = None  # missing keys belong to no group
    if categorical:  # unsorted categories and one no row uses
        return values.astype(pd.CategoricalDtype([*reversed(names), "unused"]))
    return values


@pytest.mark.parametrize("categorical", [False, True])
def test_group_numbers_are_the_groupby_numbers_and_keys(categorical):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "criterion": _labels(rng, 500, ["b", "a", "overall", "c"], categorical),
            "model": _labels(rng, 500, ["m2", "m10", "m1"], not categorical),
        }
    )
    for by in (["criterion", "model"], "model"):
        numbers, keys = group_numbers(frame, by)
        groups = frame.groupby(by, sort=True, observed=True)
        expected = groups.ngroup().fillna(-1).to_numpy(dtype=np.int64)
        np.testing.assert_array_equal(numbers, expected)
        index = groups.size().index
        assert keys == [k if isinstance(k, tuple) else (k,) for k in index]
        for pos, (_, g) in zip(positions(numbers, len(keys)), groups, strict=True):
            np.testing.assert_array_equal(pos, frame.index.get_indexer(g.index))


def test_the_combined_key_is_one_number_per_distinct_tuple_in_lexicographic_order():
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, 4, 300), rng.integers(0, 5, 300)
    b[:3] = -1  # missing
    for big in (5, 1 << 61):  # the second renumbers the keys before it overflows
        key = combined_key([(a, 4), (b, big)], sort=True)
        assert (key[:3] == -1).all()
        t = list(zip(a[3:], b[3:], strict=True))
        k = key[3:]
        for i in range(0, 290, 7):
            for j in range(1, 290, 11):
                assert (k[i] == k[j]) == (t[i] == t[j])
                assert (k[i] < k[j]) == (t[i] < t[j])
    codes, n = int_codes(np.array([-5, 7, -5, 3]), sort=True)
    np.testing.assert_array_equal(codes, [0, 2, 0, 1])
    assert n == 3


def _old_star_outcomes(star: pd.DataFrame) -> pd.DataFrame:
    """The definition: first ratings with a score, plus each rating's mean over criteria."""
    s = star[~star["is_repeat"]]
    cols = ["rater_id", "rater_kind", "rating_id", "item_id", "model", "criterion", "score"]
    base = s[cols].astype(dict.fromkeys(("rater_id", "rater_kind", "model", "criterion"), str))
    base = base.dropna(subset=["score"])
    keys = ["rater_id", "rater_kind", "rating_id", "item_id", "model"]
    overall = base.groupby(keys, sort=False)["score"].mean().reset_index()
    overall["criterion"] = OVERALL
    return pd.concat([base, overall[base.columns]], ignore_index=True)


def _old_item_table(rows: pd.DataFrame, judge: str, keys: list[str]) -> pd.DataFrame:
    """The definition: groupby means and distinct human ratings, outer join, judged items."""
    human = rows[rows["rater_kind"] == "human"]
    h = human.groupby(keys, sort=True).agg(y=("score", "mean"), n_ratings=("rating_id", "nunique"))
    j = rows[rows["rater_id"] == judge].groupby(keys, sort=True)["score"].mean().rename("f")
    out = h.join(j, how="outer").reset_index()
    out["n_ratings"] = out["n_ratings"].fillna(0).astype(np.int64)
    return out[out["f"].notna()].reset_index(drop=True)


@pytest.fixture(scope="module")
def star():
    s = generate(n_models=4, n_questions=30, n_onsite=6, n_crowd=8, n_public=8, seed=3)
    star = coerce_star(s.star_df)
    rng = np.random.default_rng(5)
    star.loc[rng.random(len(star)) < 0.03, "score"] = np.nan  # unrated criteria
    # Odd scores (means whose rounding depends on the order of the sums) and a duplicated row
    # (a rating counted once).
    star["score"] += rng.integers(0, 3, len(star)) / 7
    return pd.concat([star, star.iloc[[5, 17]]], ignore_index=True)


def test_star_outcomes_are_the_groupby_definition(star):
    new = star_outcomes(star)
    old = _old_star_outcomes(star)
    assert list(new.columns) == list(old.columns)
    assert new["criterion"].cat.categories.is_monotonic_increasing
    for col in old.columns:
        np.testing.assert_array_equal(new[col].astype(old[col].dtype), old[col], err_msg=col)


@pytest.mark.parametrize("judge", ["judge-star", "onsite-0001", "nobody"])
def test_item_tables_are_the_groupby_definition(star, judge):
    rows = star_outcomes(star)
    rows = rows[rows["rating_id"] % 13 != 0]  # items the judge rated and no human did
    if judge == "judge-star":  # a judge group whose every score is missing
        rows = rows.copy()
        rows.loc[
            (rows["rater_id"] == judge) & (rows["item_id"] == rows["item_id"].min()), "score"
        ] = np.nan
    keys = ["item_id", "model", "criterion"]
    new, old = item_table(rows, judge, keys), _old_item_table(rows, judge, keys)
    assert list(new.columns) == list(old.columns)
    assert len(new) == len(old)
    for col in old.columns:
        np.testing.assert_array_equal(new[col].astype(old[col].dtype), old[col], err_msg=col)


def test_judges_are_ordered_by_distinct_ratings_as_the_groupby_counts_them(star):
    from ranking.stats.ppi_section import judge_order, pair_outcomes
    from ranking.stats.schema import coerce_pair

    s = generate(n_models=4, n_questions=30, n_onsite=6, n_crowd=8, n_public=8, seed=3)
    pair = coerce_pair(s.pair_df)
    rows = [star_outcomes(star), pair_outcomes(pair)]
    strings = [r.astype({"rater_id": str, "rater_kind": str}) for r in rows]
    counts: dict[str, int] = {}
    for r in strings:
        j = r[r["rater_kind"] == "judge"]
        for name, n in j.groupby("rater_id")["rating_id"].nunique().items():
            counts[name] = counts.get(name, 0) + int(n)
    expected = sorted(counts, key=lambda k: (-counts[k], k))
    assert len(expected) == 2
    assert judge_order(*rows) == expected
    assert judge_order(*strings) == expected


@pytest.mark.parametrize("case", ["sorted", "segments", "meeting", "shuffled", "long runs"])
def test_distinct_ids_per_group_are_the_groupby_nunique(case):
    """With or without the hash (ids in a few non-decreasing segments whose groups do not
    meet, and runs of equal ids no longer than 16), the counts of ``nunique``."""
    from ranking.stats.ppi_section import _distinct_per_group, _first_of_runs

    rng = np.random.default_rng(len(case))
    run = 20 if case == "long runs" else 5
    ids = (
        np.sort(rng.integers(0, 400, 1000))
        if case != "long runs"
        else np.repeat(np.arange(50), run)
    )
    groups = rng.integers(0, 6, len(ids))
    if case in ("segments", "meeting"):  # a second segment of ids, on other groups or not
        ids = np.concatenate([ids, ids[::3]])
        more = groups[::3] if case == "meeting" else rng.integers(6, 9, len(ids) - len(groups))
        groups = np.concatenate([groups, more])
    if case == "shuffled":
        order = rng.permutation(len(ids))
        ids, groups = ids[order], groups[order]
    expected = pd.Series(ids).groupby(groups).nunique().reindex(range(9), fill_value=0)
    fast = _first_of_runs(groups, ids, 9) is not None
    assert fast == (case in ("sorted", "segments"))
    np.testing.assert_array_equal(_distinct_per_group(groups, ids, 9), expected.to_numpy())


def test_model_names_and_numbers_from_categories_are_those_of_the_strings():
    from ranking.stats.ppi_section import _distinct_names, _model_index

    names = pd.Series(["m3", "m1", "m3", "m2"])
    coded = names.astype(pd.CategoricalDtype(["m3", "unused", "m2", "m1"]))
    idx = {"m1": 0, "m2": 1, "m3": 2}
    assert _distinct_names(coded) == _distinct_names(names) == {"m1", "m2", "m3"}
    np.testing.assert_array_equal(_model_index(coded, idx), [2, 0, 2, 1])
    np.testing.assert_array_equal(_model_index(names, idx), [2, 0, 2, 1])
