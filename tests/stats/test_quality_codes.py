"""Pooled accuracy per (mode, pool, criterion) over the raters kept, counted per code, is the
table the inner merge and groupby gave (dtypes included), whichever raters are kept."""

from __future__ import annotations

import pytest
from pandas.testing import assert_frame_equal

from ranking.stats import synthetic
from ranking.stats.agreement import (
    accuracy_by_criterion,
    accuracy_by_rater,
    accuracy_flags,
    consistency_units,
    judgements,
)
from ranking.stats.filters import filter_frame
from ranking.stats.rater_facts import rater_counts
from ranking.stats.schema import coerce_pair, coerce_star


def _merged(flags, by_rater):
    kept = flags.merge(by_rater[["rater_id", "mode"]], on=["rater_id", "mode"])
    keys = ["mode", "pool", "criterion"]
    g = kept.groupby(keys)["accurate"].agg(["size", "mean"]).reset_index()
    g.columns = [*keys, "n_judgements", "accuracy"]
    return g


@pytest.mark.parametrize("min_ratings", [1, 5, 40])
@pytest.mark.parametrize("pools", [None, ["crowd", "judge"]])
def test_accuracy_by_criterion_is_the_merged_groupby(min_ratings, pools):
    study = synthetic.generate(n_models=5, n_questions=20, seed=11)
    star = filter_frame(coerce_star(study.star_df), pools=pools)
    pair = filter_frame(coerce_pair(study.pair_df), pools=pools)
    j = judgements(star, pair)
    flags = accuracy_flags(j)
    acc = accuracy_by_rater(flags, j, min_ratings=min_ratings)
    got = accuracy_by_criterion(flags, acc)
    assert_frame_equal(got, _merged(flags, acc), check_exact=True)
    if min_ratings == 40:  # some raters left out: fewer judgements counted
        everyone = accuracy_by_criterion(flags, accuracy_by_rater(flags, j, min_ratings=1))
        assert got["n_judgements"].sum() < everyone["n_judgements"].sum()


def test_consistency_units_find_the_units_rated_again():
    study = synthetic.generate(n_models=5, n_questions=20, seed=11, repeat_rate=0.3)
    j = judgements(coerce_star(study.star_df), coerce_pair(study.pair_df))
    # Leave some units with one repeat alone (their first rating removed): not repeated.
    units = j.groupby(["mode", "criterion", "rater_id", "item_id"], observed=True).ngroup()
    again = units.duplicated(keep=False) & j["is_first"]
    j = j[~(again & (units % 2 == 0))].reset_index(drop=True)
    got = consistency_units(j)
    want = consistency_units(j.drop(columns="is_first"))  # every key hashed: the definition
    assert_frame_equal(got, want, check_exact=True)
    assert len(got) > 0


@pytest.mark.parametrize("case", ["plain", "shared_rating", "sparse_ids"])
def test_rater_counts_are_distinct_first_ratings_per_rater_and_mode(case):
    study = synthetic.generate(n_models=4, n_questions=12, seed=2)
    j = judgements(coerce_star(study.star_df), coerce_pair(study.pair_df))
    if case == "shared_rating":  # one star rating id under two raters: counted for both
        star = j[(j["mode"] == "star") & j["is_first"]]
        other = star[star["rater_id"] != star["rater_id"].iloc[0]].index[0]
        j.loc[star.index[0], "rating_id"] = j.loc[other, "rating_id"]
    if case == "sparse_ids":
        j["rating_id"] = j["rating_id"] * 10**9
    f = j[j["is_first"]]
    want = f.groupby(["rater_id", "mode"], observed=True)["rating_id"].nunique()
    got = rater_counts(j).set_index(["rater_id", "mode"])["n_ratings"]
    assert got.to_dict() == want[want > 0].to_dict()
