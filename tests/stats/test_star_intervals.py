"""The star leaderboard's 95% intervals, worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ranking.stats.rankings import scale_bounds, star_means, t95
from ranking.stats.report import build_report
from tests.stats.helpers import star_frame

T2, T4 = float(t95(2)), float(t95(4))  # Student's t, 1 and 3 degrees of freedom


def _two_ratings_two_criteria():
    # Model m: rating 1 gives (acc 1, flu 2), rating 2 gives (acc 3, flu 4).
    df = star_frame(
        [(1, 1, "m", "acc", 1), (1, 1, "m", "flu", 2), (2, 1, "m", "acc", 3), (2, 1, "m", "flu", 4)]
    )
    df["rating_id"] = [1, 1, 2, 2]  # one rating carries both criteria, as the selectors give it
    return star_means(df).set_index(["rater_kind", "criterion"]).loc["all"]


def test_student_t_quantiles():
    assert pytest.approx(12.7062047, abs=1e-6) == T2 and pytest.approx(3.1824463, abs=1e-6) == T4
    assert float(t95(1000)) == pytest.approx(1.9623, abs=1e-4)  # towards the normal 1.96
    assert np.isnan(t95(1)) and np.isnan(t95(0))


def test_a_criterion_interval_is_mean_plus_minus_t_sd_over_root_n():
    acc = _two_ratings_two_criteria().loc["acc"]
    # scores 1 and 3: mean 2, sd √2, n 2 -> half width t(1)·√2/√2 = t(1)
    assert acc["mean"] == 2
    assert acc["ci_low"] == pytest.approx(2 - T2)
    assert acc["ci_high"] == pytest.approx(2 + T2)


def test_the_overall_interval_comes_from_each_ratings_average_over_its_criteria():
    overall = _two_ratings_two_criteria().loc["overall"]
    # per-rating averages 1.5 and 3.5: mean 2.5, sd √2, two ratings -> half width t(1)
    assert overall["mean"] == 2.5
    assert overall["ci_low"] == pytest.approx(2.5 - T2)
    assert overall["ci_high"] == pytest.approx(2.5 + T2)


def test_one_rating_has_no_interval():
    row = star_means(star_frame([(1, 1, "m", "acc", 2)])).iloc[0]
    assert row["mean"] == 2 and math.isnan(row["ci_low"]) and math.isnan(row["ci_high"])


def test_the_overall_n_counts_ratings_not_criterion_scores():
    """Two ratings of two criteria each: 2 ratings (the interval's n and the report's "Ratings"
    column), not 4 scores."""
    table = _two_ratings_two_criteria()
    assert table.loc["overall"]["n"] == 2
    assert table.loc["acc"]["n"] == 2 and table.loc["flu"]["n"] == 2


# ---------------------------------------------------------------- the interval stays on the scale

SCALE = scale_bounds({"acc": 1, "flu": 1}, {"acc": 5, "flu": 5})


def _one_criterion(scores, bounds=SCALE, criterion="acc"):
    df = star_frame([(i, i, "m", criterion, s) for i, s in enumerate(scores, 1)])
    return star_means(df, bounds=bounds).set_index(["rater_kind", "criterion"]).loc["all"]


def test_a_near_top_sample_stays_within_the_top_of_the_scale():
    row = _one_criterion([5, 5, 5, 4]).loc["acc"]
    # mean 4.75, sd 0.5, n 4: the upper end 4.75 + t(3)·0.25 = 5.55 is past 5 stars.
    assert row["ci_low"] == pytest.approx(4.75 - T4 * 0.25)
    assert row["ci_high"] == 5.0 and row["ci_clipped"]


def test_an_all_top_sample_stays_at_the_top():
    row = _one_criterion([5, 5, 5]).loc["acc"]
    assert row["ci_low"] == row["ci_high"] == 5.0 and not row["ci_clipped"]


def test_a_near_bottom_sample_stays_within_the_bottom_of_the_scale():
    row = _one_criterion([1, 1, 1, 2]).loc["acc"]
    assert row["ci_low"] == 1.0 and row["ci_clipped"]
    assert row["ci_high"] == pytest.approx(1.25 + T4 * 0.25)


def test_an_interval_inside_the_scale_is_not_touched():
    row = _one_criterion([2, 3, 4, 3]).loc["acc"]
    assert row["ci_low"] == pytest.approx(3 - T4 * math.sqrt(2 / 3) / 2)
    assert row["ci_high"] == pytest.approx(3 + T4 * math.sqrt(2 / 3) / 2)
    assert not row["ci_clipped"]


def test_without_a_rubric_range_nothing_is_clipped():
    row = _one_criterion([5, 5, 5, 4], bounds=None).loc["acc"]
    assert row["ci_high"] == pytest.approx(4.75 + T4 * 0.25) and not row["ci_clipped"]


def test_a_score_below_the_rubric_is_used_as_given_and_widens_the_scale():
    # Flagged 0s on a 1-5 criterion (data as given): the scale is [0, 5] for this mean, so the
    # interval is cut at 0 (mean 0.4 - z·0.245 = -0.08), not at 1 above the mean.
    row = _one_criterion([0, 0, 0, 1, 1]).loc["acc"]
    assert row["mean"] == pytest.approx(0.4) and row["ci_low"] == 0.0 and row["ci_clipped"]


def test_the_overall_interval_is_cut_to_the_mean_of_its_criteria_scales():
    # acc on 1-3, flu on 1-5 (LLMEval-2 mixes such ranges): overall lies in [1, 4].
    rows = [(i, i, "m", "acc", 3) for i in range(1, 5)]
    rows += [(i, i, "m", "flu", s) for i, s in enumerate([5, 5, 5, 3], 1)]
    df = star_frame(rows)
    df["rating_id"] = [1, 2, 3, 4, 1, 2, 3, 4]
    bounds = scale_bounds({"acc": 1, "flu": 1}, {"acc": 3, "flu": 5})
    table = star_means(df, bounds=bounds).set_index(["rater_kind", "criterion"]).loc["all"]
    overall = table.loc["overall"]
    # per-rating averages 4, 4, 4, 3: mean 3.75, sd 0.5, n 4 -> upper 4.24 past the scale's 4
    assert overall["mean"] == pytest.approx(3.75)
    assert overall["ci_high"] == 4.0 and overall["ci_clipped"]
    assert table.loc["flu", "ci_high"] == 5.0 and table.loc["acc", "ci_high"] == 3.0


def test_the_report_counts_the_clipped_intervals():
    df = star_frame([(i, i, "m", "acc", s) for i, s in enumerate([5, 5, 5, 4], 1)])
    report = build_report(
        df, None, criterion_min={"acc": 1}, criterion_max={"acc": 5}, n_bootstrap=0, n_shuffles=0
    )
    star = report["leaderboard_star"]
    assert (star["ci_high"] <= 5).all() and (star["ci_high"] == 5).sum() == 4
    # acc and overall, for all raters and for humans; the table keeps its published columns
    assert report["meta"]["star_ci_clipped"] == 4 and "ci_clipped" not in star.columns
    assert report["meta"]["criterion_min"] == {"acc": 1.0}
