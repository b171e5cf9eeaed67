"""Position consistency reads the first rating of each (rater, item, order): the keys rated once
are taken as they are, only the others are time-sorted. Same rows as sorting the whole frame."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ranking.stats import synthetic
from ranking.stats.bias import position_bias
from ranking.stats.position import first_in_each_order as _first_in_each_order
from ranking.stats.position import same_labels as _same_labels
from ranking.stats.schema import coerce_pair, time_ordered


def _pairs_with_repeats() -> pd.DataFrame:
    pair = coerce_pair(synthetic.generate(n_models=5, n_questions=12, seed=4).pair_df)
    again = pair.sample(frac=0.3, random_state=1).copy()
    # Repeats in both orders, some earlier than the first rating, some at the same instant.
    again["rating_id"] = again["rating_id"] + 10**6
    k = np.arange(len(again))
    minutes = np.where(k % 5 == 0, 0, np.where(k % 3 == 0, -5, 5))
    again["submitted_at"] = again["submitted_at"] + pd.to_timedelta(minutes, unit="min")
    again["left_is_a"] = np.where(k % 2 == 0, ~again["left_is_a"].to_numpy(bool), True)
    return pd.concat([pair, again], ignore_index=True).sample(frac=1.0, random_state=2)


def test_the_first_rating_of_each_order_is_the_one_a_full_time_sort_keeps():
    pair = _pairs_with_repeats().reset_index(drop=True)
    keys = ["rater_id", "item_id", "left_is_a"]
    expected = time_ordered(pair).drop_duplicates(keys).index
    got = _first_in_each_order(pair)
    assert got is not None
    assert sorted(got.tolist()) == sorted(expected.tolist())


def test_position_consistency_is_the_same_with_a_missing_time():
    pair = _pairs_with_repeats().reset_index(drop=True)
    table = position_bias(pair)
    pair_nat = pair.copy()
    pair_nat.loc[pair_nat.index[0], "submitted_at"] = pd.NaT
    assert _first_in_each_order(pair_nat) is None
    assert len(position_bias(pair_nat)) == len(table)


def test_same_labels_by_codes_reads_as_the_strings_compare():
    x = pd.Series(pd.Categorical(["A", "B", None, "tie", None], categories=["A", "B", "tie"]))
    y = pd.Series(pd.Categorical(["A", "tie", None, "tie", "B"], categories=["A", "B", "tie"]))
    expected = (x.astype(str) == y.astype(str)).to_numpy()
    assert _same_labels(x, y).tolist() == expected.tolist() == [True, False, False, True, False]
    # Categories in another order: the codes are not comparable, the strings are compared.
    z = pd.Series(pd.Categorical(["A", "B", None, "tie", "B"], categories=["tie", "B", "A"]))
    assert _same_labels(x, z).tolist() == [True, True, False, True, False]
