"""Length bias, gaps, discrimination, position bias and annotator diagnostics over integer codes give the tables the
pandas splits gave, cell for cell (dtypes included), on plain, filtered, repeated, time-less and
empty frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from ranking.stats import synthetic
from ranking.stats.bias import annotator_diagnostics, gaps, length_bias, position_bias
from ranking.stats.discrimination import discrimination
from ranking.stats.filters import filter_frame
from ranking.stats.schema import coerce_pair, coerce_star

from . import reference_bias as ref


def _frames(case: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    study = synthetic.generate(n_models=5, n_questions=14, seed=7)
    star, pair = coerce_star(study.star_df), coerce_pair(study.pair_df)
    if case == "filtered":
        star = filter_frame(star, pools=["crowd", "judge"])
        pair = filter_frame(pair, pools=["crowd", "judge"])
    if case == "repeats":
        again = pair.sample(frac=0.3, random_state=1).copy()
        again["rating_id"] = again["rating_id"] + 10**6
        k = np.arange(len(again))
        again["left_is_a"] = np.where(k % 2 == 0, ~again["left_is_a"].to_numpy(bool), True)
        again["choice"] = again["choice"].where(k % 3 > 0, "tie")
        pair = coerce_pair(pd.concat([pair, again], ignore_index=True).sample(frac=1.0))
    if case == "nat":
        pair = pair.copy()
        pair.loc[pair.index[0], "submitted_at"] = pd.NaT
    if case == "empty":
        star, pair = star.iloc[:0], pair.iloc[:0]
    if case == "strings":  # label columns as plain strings: the stacked frame's groupby
        labels = {c: star[c].astype(str) for c in ("rater_id", "rater_kind", "pool")}
        star = star.assign(**labels)
    return star, pair


@pytest.mark.parametrize("case", ["plain", "filtered", "repeats", "nat", "empty"])
def test_position_bias_is_the_split_table(case):
    _, pair = _frames(case)
    for kinds in (("judge",), ("human", "judge")):
        got = position_bias(pair, per_rater_kinds=kinds)
        assert_frame_equal(got, ref.position_bias(pair, per_rater_kinds=kinds), check_exact=True)
    if case == "repeats":
        assert got["n_both_orders"].gt(0).any()


@pytest.mark.parametrize("case", ["plain", "filtered", "repeats", "empty", "strings"])
def test_annotator_diagnostics_is_the_split_table(case):
    star, pair = _frames(case)
    want = ref.annotator_diagnostics(star, pair)
    assert_frame_equal(annotator_diagnostics(star, pair), want, check_exact=True)
    for s, p in ((star.iloc[:0], pair), (star, pair.iloc[:0])):
        assert_frame_equal(annotator_diagnostics(s, p), ref.annotator_diagnostics(s, p))


@pytest.mark.parametrize("case", ["plain", "filtered", "repeats", "empty"])
@pytest.mark.parametrize("scale", [1.0, 0.37])
def test_length_bias_gaps_and_discrimination_are_the_split_tables(case, scale):
    star, pair = _frames(case)
    # Scores that are not whole numbers take the groupby path of the means.
    star = star.assign(score=star["score"] * scale)
    assert_frame_equal(length_bias(pair, (0, 100, 300)), ref.length_bias(pair, (0, 100, 300)))
    assert_frame_equal(gaps(star), ref.gaps(star), check_exact=True)
    assert_frame_equal(gaps(star, [0.5, 1]), ref.gaps(star, [0.5, 1]), check_exact=True)
    ranges = {str(c): 4.0 for c in set(star["criterion"].astype(str))}
    assert_frame_equal(gaps(star, None, ranges), ref.gaps(star, None, ranges), check_exact=True)
    got, want = discrimination(star, pair), ref.discrimination(star, pair)
    assert_frame_equal(got, want, check_exact=True)
    if case == "plain" and scale == 1.0:
        assert len(got) > 10 and len(gaps(star)) > 0


def test_gaps_need_both_kinds():
    star, _ = _frames("plain")
    humans = star[star["rater_kind"] == "human"]
    assert_frame_equal(gaps(humans), ref.gaps(humans), check_exact=True)
    assert gaps(humans).empty
