"""The star leaderboard's 95% intervals, worked by hand."""

from __future__ import annotations

import math

import pytest

from ranking.stats.rankings import Z95, star_means
from tests.stats.helpers import star_frame


def _two_ratings_two_criteria():
    # Model m: rating 1 gives (acc 1, flu 2), rating 2 gives (acc 3, flu 4).
    df = star_frame(
        [(1, 1, "m", "acc", 1), (1, 1, "m", "flu", 2), (2, 1, "m", "acc", 3), (2, 1, "m", "flu", 4)]
    )
    df["rating_id"] = [1, 1, 2, 2]  # one rating carries both criteria, as the selectors give it
    return star_means(df).set_index(["rater_kind", "criterion"]).loc["all"]


def test_a_criterion_interval_is_mean_plus_minus_z_sd_over_root_n():
    acc = _two_ratings_two_criteria().loc["acc"]
    # scores 1 and 3: mean 2, sd √2, n 2 -> half width z·√2/√2 = z
    assert acc["mean"] == 2
    assert acc["ci_low"] == pytest.approx(2 - Z95)
    assert acc["ci_high"] == pytest.approx(2 + Z95)


def test_the_overall_interval_comes_from_each_ratings_average_over_its_criteria():
    overall = _two_ratings_two_criteria().loc["overall"]
    # per-rating averages 1.5 and 3.5: mean 2.5, sd √2, two ratings -> half width z
    assert overall["mean"] == 2.5
    assert overall["ci_low"] == pytest.approx(2.5 - Z95)
    assert overall["ci_high"] == pytest.approx(2.5 + Z95)


def test_one_rating_has_no_interval():
    row = star_means(star_frame([(1, 1, "m", "acc", 2)])).iloc[0]
    assert row["mean"] == 2 and math.isnan(row["ci_low"]) and math.isnan(row["ci_high"])


def test_the_overall_n_counts_ratings_not_criterion_scores():
    """Two ratings of two criteria each: 2 ratings (the interval's n and the report's "Ratings"
    column), not 4 scores."""
    table = _two_ratings_two_criteria()
    assert table.loc["overall"]["n"] == 2
    assert table.loc["acc"]["n"] == 2 and table.loc["flu"]["n"] == 2
