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


def _as_categoricals(df: pd.DataFrame, extra: str) -> pd.DataFrame:
    """The label columns as categoricals holding one more (unused) category, as a filtered frame
    of ``study_frames`` has them, in reverse order."""
    out = df.copy()
    for col in ("rater_id", "rater_kind", "pool", "question_id", "task_type", "model_a", "model_b"):
        names = sorted({*out[col], extra}, reverse=True)
        out[col] = pd.Categorical(out[col], categories=names)
    out["choice"] = pd.Categorical(out["choice"], categories=["tie", "B", "A", "both_bad"])
    return out


def test_categorical_labels_coerce_to_what_the_same_names_as_strings_give(pair_df):
    strings = coerce_pair(pair_df)
    categorical = coerce_pair(_as_categoricals(pair_df, "unused"))
    for col in ("rater_id", "rater_kind", "pool", "task_type", "model_a", "model_b", "choice"):
        assert list(categorical[col].cat.categories) == list(strings[col].cat.categories), col
        assert (categorical[col].cat.codes == strings[col].cat.codes).all(), col
    assert (categorical["question_id"].astype(str) == strings["question_id"]).all()


def test_an_unknown_choice_among_categories_is_refused(pair_df):
    p = _as_categoricals(pair_df, "unused")
    p["choice"] = p["choice"].cat.add_categories(["C"])
    p.loc[p.index[2], "choice"] = "C"
    with pytest.raises(ValueError, match="choices outside"):
        coerce_pair(p)


@pytest.mark.parametrize("dtype", ["str", object])
def test_a_label_column_becomes_the_categorical_pandas_builds(dtype):
    from ranking.stats.schema import _as_category

    names = pd.Series(["b", "a", "c", "a", "b"] * 3, dtype=dtype, name="pool")
    got = _as_category(names)
    pd.testing.assert_series_equal(got, pd.Series(pd.Categorical(names), name="pool"))
    # A value that is not a string: the names as strings, sorted.
    cat = _as_category(pd.Series(["b", 3, "a"], dtype=object))
    assert list(cat.cat.categories) == ["3", "a", "b"] and cat.tolist() == ["b", "3", "a"]


def test_model_columns_of_objects_share_the_same_categories(pair_df):
    p = pair_df.copy()
    p.loc[p.index[0], "model_a"] = "aa-only-a"
    as_objects = p.assign(model_a=p["model_a"].astype(object), model_b=p["model_b"].astype(object))
    out, want = coerce_pair(as_objects), coerce_pair(p)
    for col in ("model_a", "model_b"):
        pd.testing.assert_series_equal(out[col], want[col])
    assert out["model_a"].cat.categories[0] == "aa-only-a"
