"""Hand-worked small cases: accuracy, consistency, Points, Elo, agreement coefficients."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ranking.stats import agreement as ag
from ranking.stats import elo
from ranking.stats.rankings import (
    correlation_table,
    match_arrays,
    points_arrays,
    points_table,
    rank_correlation,
    star_means,
)
from ranking.stats.schema import coerce_pair, coerce_star, empty_pair_df

from .helpers import pair_frame, star_frame


def _acc(star: pd.DataFrame, pair: pd.DataFrame | None = None, min_ratings: int = 1):
    j = ag.judgements(coerce_star(star), coerce_pair(pair if pair is not None else empty_pair_df()))
    flags = ag.accuracy_flags(j)
    return flags, ag.accuracy_by_rater(flags, j, min_ratings=min_ratings)


def test_accuracy_within_sigma_by_hand():
    # Item 1: scores 3, 3, 1 -> gt = 7/3 = 2.333, sigma (population) = sqrt(((2/3)^2 * 2 +
    # (4/3)^2) / 3) = sqrt(24/27) = 0.943. |3 - 2.333| = 0.667 < 0.943: accurate; |1 - 2.333| =
    # 1.333: not. Item 2: 2, 2, 2 -> sigma 0, every score equals gt: all accurate.
    star = star_frame(
        [
            ("r1", 1, "m", "acc", 3),
            ("r2", 1, "m", "acc", 3),
            ("r3", 1, "m", "acc", 1),
            ("r1", 2, "m", "acc", 2),
            ("r2", 2, "m", "acc", 2),
            ("r3", 2, "m", "acc", 2),
        ]
    )
    flags, by_rater = _acc(star)
    gt1 = flags[flags["item_id"] == 1].iloc[0]
    assert gt1["gt"] == pytest.approx(7 / 3)
    assert gt1["sigma"] == pytest.approx(math.sqrt(24 / 27))
    acc = by_rater.set_index("rater_id")["accuracy"]
    assert acc.to_dict() == {"r1": 1.0, "r2": 1.0, "r3": 0.5}


def test_accuracy_leaves_out_raters_with_fewer_than_min_ratings():
    rows = []
    for item in range(1, 6):
        rows += [("busy", item, "m", "acc", 3), ("other", item, "m", "acc", 3)]
    rows.append(("rare", 1, "m", "acc", 3))
    _, by_rater = _acc(star_frame(rows), min_ratings=5)
    assert set(by_rater["rater_id"]) == {"busy", "other"}


def test_accuracy_ignores_repeats_and_single_rated_items():
    star = star_frame(
        [
            ("r1", 1, "m", "acc", 3),
            ("r2", 1, "m", "acc", 1),
            ("r1", 1, "m", "acc", 1, True),  # a repeat: not a first rating
            ("r1", 2, "m", "acc", 2),  # only one rater: no ground truth to compare with
        ]
    )
    flags, _ = _acc(star)
    # gt = 2, sigma = 1: |3 - 2| = 1 is not < 1, so neither first rating is accurate.
    assert len(flags) == 2
    assert not flags["accurate"].any()


def test_pairwise_accuracy_scores_choices_from_a():
    # A=1, tie=0.5, both_bad=0.5 -> gt = 2/3, sigma = sqrt(((1/3)^2 + 2 (1/6)^2) / 3) = 0.2357.
    pair = pair_frame(
        [("r1", 1, "x", "y", "A"), ("r2", 1, "x", "y", "tie"), ("r3", 1, "x", "y", "both_bad")]
    )
    flags, by_rater = _acc(star_frame([]), pair)
    assert flags["gt"].iloc[0] == pytest.approx(2 / 3)
    assert flags["sigma"].iloc[0] == pytest.approx(math.sqrt((1 / 9 + 2 / 36) / 3))
    # |1 - 2/3| = 0.333 > 0.236 (not accurate); |0.5 - 2/3| = 0.167 < 0.236 (accurate).
    assert by_rater.set_index("rater_id")["accuracy"].to_dict() == {"r1": 0.0, "r2": 1.0, "r3": 1.0}


def test_consistency_seed_example_is_three_quarters():
    # The paper: annotations (1, 1, 1, 0) of one task -> 3/4.
    pair = pair_frame(
        [
            ("r1", 1, "x", "y", "A"),
            ("r1", 1, "x", "y", "A", False, True),
            ("r1", 1, "x", "y", "A", True, True),
            ("r1", 1, "x", "y", "B", False, True),
        ]
    )
    j = ag.judgements(coerce_star(star_frame([])), coerce_pair(pair))
    cons = ag.consistency_by_rater(ag.consistency_units(j), j, min_ratings=1)
    assert cons["consistency"].tolist() == [0.75]


def test_star_consistency_pools_criteria_and_items():
    # Item 1 rated twice on two criteria: acc (3, 3) agrees, flu (2, 3) does not -> 2 + 1 of 4.
    # Item 2 rated twice: acc (1, 1) -> 2 of 2. Pooled: 5 / 6. Item 3 was rated once: ignored.
    star = star_frame(
        [
            ("r", 1, "m", "acc", 3),
            ("r", 1, "m", "flu", 2),
            ("r", 1, "m", "acc", 3, True),
            ("r", 1, "m", "flu", 3, True),
            ("r", 2, "m", "acc", 1),
            ("r", 2, "m", "acc", 1, True),
            ("r", 3, "m", "acc", 2),
        ]
    )
    j = ag.judgements(coerce_star(star), coerce_pair(None))
    cons = ag.consistency_by_rater(ag.consistency_units(j), j, min_ratings=1)
    assert cons["consistency"].iloc[0] == pytest.approx(5 / 6)
    assert cons["n_items_repeated"].iloc[0] == 2


def test_points_by_hand():
    # x beats y (x 1), x-y tie (0.5 each), y-z both bad (a draw: 0.5 each).
    # x: 1.5 points / 2 games = 0.75; y: 0 + 0.5 + 0.5 = 1 / 3 games; z: 0.5 / 1.
    pair = coerce_pair(
        pair_frame(
            [("r", 1, "x", "y", "A"), ("r", 2, "x", "y", "tie"), ("r", 3, "y", "z", "both_bad")]
        )
    )
    t = points_table(pair).query("rater_kind == 'all'").set_index("model")
    assert t["score"].to_dict() == pytest.approx({"x": 0.75, "y": 1 / 3, "z": 0.5})
    assert t.loc["x", ["wins", "draws", "losses"]].tolist() == [1, 1, 0]
    assert t.loc["y", ["wins", "draws", "losses"]].tolist() == [0, 2, 1]
    assert t["rank"].to_dict() == {"x": 1, "z": 2, "y": 3}


def test_points_can_exclude_both_bad():
    pair = coerce_pair(pair_frame([("r", 1, "x", "y", "A"), ("r", 3, "y", "x", "both_bad")]))
    t = points_table(pair, both_bad="exclude").query("rater_kind == 'all'").set_index("model")
    assert t["games"].to_dict() == {"x": 1, "y": 1}


def test_elo_by_hand():
    # Match 1: x beats y from 1500 / 1500: E = 0.5, x = 1500 + 32 * 0.5 = 1516, y = 1484.
    # Match 2: y beats x: E_y = 1 / (1 + 10^((1516 - 1484) / 400)) = 1 / (1 + 10^0.08)
    # = 1 / 2.202264 = 0.454079; y = 1484 + 32 * (1 - 0.454079) = 1501.4695, x = 1498.5305.
    a = np.array([0, 1])
    b = np.array([1, 0])
    s = np.array([1.0, 1.0])
    r = elo.elo_ratings(a, b, s, 2)
    e_y = 1 / (1 + 10 ** (32 / 400))
    assert r[0] == pytest.approx(1516 - 32 * (1 - e_y))
    assert r[1] == pytest.approx(1484 + 32 * (1 - e_y))
    assert r[1] == pytest.approx(1501.4695, abs=1e-4)
    assert r[0] == pytest.approx(1498.5305, abs=1e-4)


def test_elo_history_and_numpy_fallback_agree_with_compiled():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 5, 400)
    b = (a + rng.integers(1, 5, 400)) % 5
    s = rng.choice([0.0, 0.5, 1.0], 400)
    hist = elo.elo_history(a, b, s, 5, last=10)
    assert hist.shape == (11, 5)
    np.testing.assert_allclose(hist[-1], elo.elo_ratings(a, b, s, 5))
    np.testing.assert_allclose(hist[0], elo.elo_ratings(a[:-10], b[:-10], s[:-10], 5))
    order = elo.shuffle_orders(400, 4, rng)
    fast = elo.elo_chains(a, b, s, order, 5, use_numba=True)
    slow = elo.elo_chains(a, b, s, order, 5, use_numba=False)
    np.testing.assert_allclose(fast, slow, atol=1e-9)
    # Elo is zero-sum: the mean rating stays at the start value in every chain.
    np.testing.assert_allclose(fast.mean(axis=1), 1500.0)


def test_elo_shuffles_are_reproducible_and_order_dependent():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, 2000)
    b = (a + rng.integers(1, 4, 2000)) % 4
    s = rng.choice([0.0, 1.0], 2000)
    r1 = elo.elo_shuffles(a, b, s, 4, n_shuffles=8, rng=np.random.default_rng(5))
    r2 = elo.elo_shuffles(a, b, s, 4, n_shuffles=8, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(r1, r2)
    assert r1.std(axis=0).min() > 0  # different orders, different ratings
    np.testing.assert_allclose(r1.mean(axis=1), 1500.0)


def test_analytic_variance_matches_paper():
    # Appendix: 70 % accuracy -> 7211.27 * 0.21 = 1514 ("the estimated variance ... 1514").
    assert elo.analytic_variance(0.7)["var_linear_fit"] == pytest.approx(1514.37, abs=0.01)


def test_star_means_overall_is_mean_of_criterion_means():
    star = coerce_star(
        star_frame([("r", 1, "m", "acc", 3), ("r", 2, "m", "acc", 1), ("r", 1, "m", "flu", 3)])
    )
    t = star_means(star).query("rater_kind == 'all'").set_index("criterion")["mean"]
    assert t["acc"] == 2.0
    assert t["flu"] == 3.0
    assert t["overall"] == 2.5


def test_krippendorff_alpha_matches_krippendorff_2011():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers, 12 units,
    # missing values. Published: nominal 0.743, ordinal 0.815, interval 0.849.
    nan = np.nan
    data = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
            [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
        ]
    )
    units = np.tile(np.arange(12), 4)
    assert ag.krippendorff_alpha(units, data.ravel(), "nominal") == pytest.approx(0.743, abs=5e-4)
    assert ag.krippendorff_alpha(units, data.ravel(), "ordinal") == pytest.approx(0.815, abs=5e-4)
    assert ag.krippendorff_alpha(units, data.ravel(), "interval") == pytest.approx(0.849, abs=5e-4)


def test_fleiss_kappa_matches_fleiss_1971_example():
    # The worked example on Wikipedia's "Fleiss' kappa" page: 10 subjects, 14 raters -> 0.210.
    counts = np.array(
        [
            [0, 0, 0, 0, 14],
            [0, 2, 6, 4, 2],
            [0, 0, 3, 5, 6],
            [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0],
            [3, 2, 6, 3, 0],
            [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0],
            [0, 2, 2, 3, 7],
        ]
    )
    assert ag.fleiss_kappa(counts) == pytest.approx(0.210, abs=5e-4)


def test_cohen_kappa_by_hand():
    # 50 units: both yes 20, yes/no 5, no/yes 10, both no 15. po = 0.7; pe = 0.5 * 0.6 +
    # 0.5 * 0.4 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4.
    x = np.array(["y"] * 25 + ["n"] * 25)
    y = np.array(["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15)
    assert ag.cohen_kappa(x, y) == pytest.approx(0.4)
    f = pd.DataFrame(
        {
            "item_id": np.r_[np.arange(50), np.arange(50)],
            "rater_id": ["a"] * 50 + ["b"] * 50,
            "value": np.r_[x == "y", y == "y"].astype(float),
        }
    )
    assert ag.mean_cohen_kappa(f) == (pytest.approx(0.4), 1)


def test_rank_correlation_on_intersection():
    x = pd.Series({"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0})
    y = pd.Series({"a": 30.0, "b": 10.0, "c": 20.0, "e": 5.0})
    r = rank_correlation(x, y)
    assert r["n_models"] == 3
    assert r["spearman_rho"] == pytest.approx(0.5)
    assert r["kendall_tau_b"] == pytest.approx(1 / 3)


def test_correlation_table_is_rank_correlation_of_every_pair():
    # Missing models, NaN scores, other orders, ties, a categorical index and a pair with two
    # common models: each row must be what rank_correlation gives for that pair, float for float.
    rng = np.random.default_rng(3)
    models = [f"m{i}" for i in range(12)]
    rankings = {
        "a": pd.Series(rng.normal(size=12), index=models),
        "b": pd.Series(rng.integers(0, 4, size=10).astype(float), index=models[::-1][:10]),
        "c": pd.Series(rng.normal(size=8), index=pd.CategoricalIndex(models[4:])),
        "d": pd.Series([1.0, np.nan, 2.0, 0.5, 3.0], index=models[7:]),
        "e": pd.Series([2.0, 1.0], index=["m0", "m1"]),
    }
    table = correlation_table(rankings)
    assert len(table) == 10
    for row in table.to_dict("records"):
        expected = rank_correlation(rankings[row["ranking_a"]], rankings[row["ranking_b"]])
        got = {k: row[k] for k in expected}
        assert got == pytest.approx(expected, rel=0, abs=0, nan_ok=True)


def test_match_arrays_codes_models_consistently():
    pair = coerce_pair(pair_frame([("r", 1, "y", "x", "B"), ("r", 2, "x", "z", "tie")]))
    a, b, s, models = match_arrays(pair)
    assert models == ["x", "y", "z"]
    assert a.tolist() == [1, 0]
    assert b.tolist() == [0, 2]
    pts = points_arrays(a, b, s, 3)
    assert pts["score"].tolist() == [0.75, 0.0, 0.5]


def test_elo_shuffles_numpy_fallback_keeps_ratings_zero_sum():
    rng = np.random.default_rng(9)
    a = rng.integers(0, 4, 300)
    b = (a + rng.integers(1, 4, 300)) % 4
    s = rng.choice([0.0, 0.5, 1.0], 300)
    r = elo.elo_shuffles(a, b, s, 4, n_shuffles=5, rng=rng, use_numba=False)
    assert r.shape == (5, 4)
    np.testing.assert_allclose(r.mean(axis=1), 1500.0)
    # Every chain plays the same matches: Points (order-free) would agree, Elo differs.
    assert r.std(axis=0).max() > 0


def test_ppi_mean_worked_example_of_docs_statistics():
    """docs/statistics.md, PPI++ worked example: four items rated by humans and the judge, six
    by the judge alone; lambda 0.643, estimate 3.714, interval [2.610, 4.818] against the
    humans' [2.235, 4.765], 1.25 items saved, the judge alone 4.2."""
    from ranking.stats.ppi import interval, ppi_mean, ratings_saved

    r = ppi_mean(np.array([4, 2, 3, 5.0]), np.array([4, 4, 3, 5.0]), np.array([5, 4, 3, 5, 4, 5.0]))
    assert (float(r.lam), float(r.estimate)) == (
        pytest.approx(0.643, abs=5e-4),
        pytest.approx(3.714, abs=5e-4),
    )
    lo, hi = interval(r.estimate, r.se)
    h_lo, h_hi = interval(r.human, r.human_se)
    assert (float(lo), float(hi)) == (
        pytest.approx(2.610, abs=5e-4),
        pytest.approx(4.818, abs=5e-4),
    )
    assert (float(h_lo), float(h_hi)) == (
        pytest.approx(2.235, abs=5e-4),
        pytest.approx(4.765, abs=5e-4),
    )
    assert float(ratings_saved(4, h_hi - h_lo, hi - lo)) == pytest.approx(1.25, abs=5e-3)
    assert float(r.judge) == pytest.approx(4.2)
