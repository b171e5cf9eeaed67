"""The Points table per rater kind, with model codes read once for all kinds, is each kind's own
``match_arrays`` / ``points_arrays`` table (both ways of scoring both-bad, repeats or not)."""

from __future__ import annotations

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from ranking.stats import synthetic
from ranking.stats.rankings import match_arrays, points_arrays, points_table
from ranking.stats.schema import coerce_pair


@pytest.mark.parametrize("both_bad", ["draw", "exclude"])
@pytest.mark.parametrize("include_repeats", [True, False])
def test_points_per_kind_are_each_kinds_own_table(both_bad, include_repeats):
    pair = coerce_pair(synthetic.generate(n_models=6, n_questions=15, seed=5).pair_df)
    table = points_table(pair, both_bad=both_bad, include_repeats=include_repeats)
    df = pair if include_repeats else pair[~pair["is_repeat"]]
    kinds = [("all", df), *df.groupby("rater_kind", observed=True, sort=True)]
    assert table["rater_kind"].unique().tolist() == [k for k, _ in kinds]
    for kind, g in kinds:
        a, b, s, models = match_arrays(g, both_bad=both_bad)
        want = pd.DataFrame(points_arrays(a, b, s, len(models)))
        want.insert(0, "model", models)
        want = want[want["games"] > 0].reset_index(drop=True)
        got = table[table["rater_kind"] == kind].drop(columns=["rater_kind", "rank"])
        assert_frame_equal(got.reset_index(drop=True), want, check_exact=True)


def test_points_refuse_an_unknown_both_bad_rule():
    pair = coerce_pair(synthetic.generate(n_models=3, n_questions=4, seed=1).pair_df)
    with pytest.raises(ValueError):
        points_table(pair, both_bad="loss")


@pytest.mark.parametrize("include_repeats", [True, False])
def test_subject_sums_by_code_are_the_groupby_sums(include_repeats):
    from ranking.stats.rankings import _subject_sums, infer_criterion_max, total_score
    from ranking.stats.schema import coerce_star

    star = coerce_star(synthetic.generate(n_models=6, n_questions=15, seed=5).star_df)
    crit_max = infer_criterion_max(star)
    df = star.assign(full=star["criterion"].map(crit_max).astype(float))
    for kind in ("human", "judge"):
        g = df[df["rater_kind"] == kind]
        assert_frame_equal(_subject_sums(g, True), _subject_sums(g, False), check_exact=True)
    # Scores that are not whole numbers: the groupby itself.
    half = star.assign(score=star["score"] * 0.37)
    table = total_score(half, crit_max, include_repeats=include_repeats)
    assert len(table) > 0 and table["total"].notna().all()


def test_group_matches_are_match_arrays_of_the_groups_rows():
    import numpy as np

    from ranking.stats.length_control import _group_matches
    from ranking.stats.rankings import labels, match_codes

    pair = coerce_pair(synthetic.generate(n_models=6, n_questions=15, seed=5).pair_df)
    names = sorted(set(labels(pair["model_a"])).union(labels(pair["model_b"])))
    a_all, b_all, s_all = match_codes(pair, names)
    rng = np.random.default_rng(0)
    # A group that never sees model-00: its models are renumbered without it.
    masks = [rng.random(len(pair)) < 0.2, (pair["model_a"] != "model-00").to_numpy()]
    masks[1] = masks[1] & (pair["model_b"] != "model-00").to_numpy()
    for mask in masks:
        a, b, s, models, ok = _group_matches(a_all[mask], b_all[mask], s_all[mask], names)
        want = match_arrays(pair[mask])
        for got_part, want_part in zip((a, b, s), want[:3], strict=True):
            assert np.array_equal(got_part, want_part)
        assert models == want[3] and ok.sum() == len(a)
    assert "model-00" not in models
