"""The column contract's coercion: shared model codes, refused choices, the caller's frame kept."""

from __future__ import annotations

import pandas as pd
import pytest

from ranking.stats import synthetic
from ranking.stats.schema import coerce_pair


@pytest.fixture(scope="module")
def pair_df() -> pd.DataFrame:
    return synthetic.generate(n_models=4, n_questions=6, seed=2).pair_df


def test_model_columns_share_sorted_categories(pair_df):
    p = pair_df.copy()
    p.loc[p.index[0], "model_b"] = "zz-only-b"
    out = coerce_pair(p)
    cats = list(out["model_a"].cat.categories)
    assert cats == sorted(set(p["model_a"]) | set(p["model_b"]))
    assert list(out["model_b"].cat.categories) == cats
    assert (out["model_a"].astype(str) == p["model_a"]).all()
    assert (out["model_b"].astype(str) == p["model_b"]).all()
    assert list(out["choice"].cat.categories) == ["A", "B", "tie", "both_bad"]


@pytest.mark.parametrize("bad", ["C", None])
def test_unknown_or_missing_choice_is_refused(pair_df, bad):
    p = pair_df.astype({"choice": object})
    p.loc[p.index[1], "choice"] = bad
    with pytest.raises(ValueError, match="choices outside"):
        coerce_pair(p)


def test_the_callers_frame_is_not_changed(pair_df):
    before = pair_df.copy()
    out = coerce_pair(pair_df)
    out.loc[out.index[0], "len_a"] = -1
    pd.testing.assert_frame_equal(pair_df, before)
