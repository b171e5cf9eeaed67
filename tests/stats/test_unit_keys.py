"""Unit keys: equal keys exactly for equal (mode, criterion, rater, item), whatever the columns'
dtypes; the keys of a judgements frame are handed to the consistency units while it lives."""

from __future__ import annotations

import gc

import numpy as np
import pandas as pd
from pandas.testing import assert_frame_equal

from ranking.stats import synthetic
from ranking.stats.agreement import consistency_units, judgements
from ranking.stats.grouped import known_units, unit_codes, unit_keys
from ranking.stats.schema import coerce_pair, coerce_star

_KEYS = ["mode", "criterion", "rater_id", "item_id"]


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(pd.factorize(a)[0], pd.factorize(b)[0]))


def _frame(kind: str) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 400
    df = pd.DataFrame(
        {
            "mode": rng.choice(["star", "pairwise"], n),
            "criterion": rng.choice(["a", "b", None], n),
            "rater_id": rng.choice(["r1", "r2", "r3"], n),
            "item_id": rng.integers(-5, 40, n) * (10**12 if kind == "wide" else 1),
        }
    )
    if kind in ("categorical", "wide"):
        for col in ("mode", "criterion", "rater_id"):
            cats = sorted({*df[col].dropna(), "unused"})
            df[col] = pd.Categorical(df[col], categories=cats)
    return df


def test_unit_keys_are_the_groups_of_the_four_columns():
    for kind in ("strings", "categorical", "wide"):
        df = _frame(kind)
        want = df.groupby(_KEYS, dropna=False, observed=True, sort=False).ngroup().to_numpy()
        assert _same_partition(unit_keys(df), want), kind


def test_unit_codes_fall_back_to_a_factorisation_near_the_int64_limit():
    values = pd.Series([10**15, 3, 10**15, 7])
    codes, n = unit_codes(values, 2**50)
    assert n == 3 and list(codes) == [0, 1, 0, 2]
    codes, n = unit_codes(values, 1)
    assert n == 10**15 - 2 and list(codes) == [10**15 - 3, 0, 10**15 - 3, 4]
    cat = pd.Series(pd.Categorical(["x", None, "x"], categories=["x", "y"]))
    codes, n = unit_codes(cat, 1)
    assert n == 3 and list(codes) == [1, 0, 1]


def test_judgements_hand_their_unit_keys_to_the_consistency_units():
    study = synthetic.generate(n_models=4, n_questions=15, seed=5, repeat_rate=0.3)
    j = judgements(coerce_star(study.star_df), coerce_pair(study.pair_df))
    key = known_units(j)
    assert key is not None and _same_partition(key, unit_keys(j))
    copy = j.copy()
    assert known_units(copy) is None  # a derived frame: computed again
    assert known_units(j[j["is_first"]]) is None
    got = consistency_units(j)
    assert_frame_equal(got, consistency_units(copy), check_exact=True)
    assert_frame_equal(got, consistency_units(j.drop(columns="is_first")), check_exact=True)
    assert len(got) > 0
    ident = id(j)
    del j, key
    gc.collect()
    from ranking.stats import grouped

    assert ident not in grouped._UNITS  # forgotten with the frame
