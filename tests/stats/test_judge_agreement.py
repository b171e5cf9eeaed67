"""Judge-vs-human agreement: hand-worked examples (the same numbers as docs/statistics.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ranking.stats import build_report
from ranking.stats.agreement import judgements, krippendorff_alpha
from ranking.stats.intervals import alpha_batch, fleiss_batch, patterns, resample_weights
from ranking.stats.judge_accuracy import accuracy_variants, star_vs_human_mean
from ranking.stats.judge_report import judge_costs
from ranking.stats.kappa_pairs import chance_agreement, cohen_pairs
from ranking.stats.length_control import fit_length_glm, length_preference
from ranking.stats.majority import macro_prf, majority_agreement
from ranking.stats.ranking_agreement import rank_corr_rows
from ranking.stats.schema import coerce_pair, coerce_star, empty_star_df

from .helpers import pair_frame, star_frame


def _pair_j(rows):
    return judgements(coerce_star(empty_star_df()), coerce_pair(pair_frame(rows)))


# Item 1: humans h1 A, h2 A, h3 B, judge A.  Item 2: h1 B, h2 B, h3 B, judge A.
# Item 3: h1 tie, h2 A, h3 B (no majority for anyone), judge B.
PAIR_ROWS = [
    ("h1", 1, "m1", "m2", "A"),
    ("h2", 1, "m1", "m2", "A"),
    ("h3", 1, "m1", "m2", "B"),
    ("gpt", 1, "m1", "m2", "A", True, False, "judge"),
    ("h1", 2, "m1", "m2", "B"),
    ("h2", 2, "m1", "m2", "B"),
    ("h3", 2, "m1", "m2", "B"),
    ("gpt", 2, "m1", "m2", "A", True, False, "judge"),
    ("h1", 3, "m1", "m2", "tie"),
    ("h2", 3, "m1", "m2", "A"),
    ("h3", 3, "m1", "m2", "B"),
    ("gpt", 3, "m1", "m2", "B", True, False, "judge"),
]


def test_judge_against_the_human_majority_hand_worked():
    table, conf = majority_agreement(_pair_j(PAIR_ROWS))
    gpt = table[table["group"] == "gpt"].iloc[0]
    # Majorities for the judge: item 1 A (2-1), item 2 B (3-0), item 3 none (1-1-1).
    assert gpt["n_judgements"] == 2 and gpt["n_no_majority"] == 1
    assert gpt["accuracy"] == pytest.approx(1 / 2)
    # Pairs with each human: item 1 agrees with h1, h2 (2 of 3); item 2 with none (0 of 3);
    # item 3 with h3 (1 of 3): 3 / 9.
    assert gpt["agreement"] == pytest.approx(3 / 9)
    # Without ties: item 3's pair with h1 (tie) drops out: 3 / 8.
    assert gpt["agreement_no_ties"] == pytest.approx(3 / 8)
    c = conf[conf["group"] == "gpt"].set_index(["truth", "predicted"])["n"].to_dict()
    assert c == {("A", "A"): 1, ("B", "A"): 1}
    # Macro over labels A and B: precision A 1/2, B 0 -> 1/4; recall A 1, B 0 -> 1/2.
    assert (gpt["macro_precision"], gpt["macro_recall"]) == pytest.approx((0.25, 0.5))
    assert gpt["macro_f1"] == pytest.approx((2 * 0.5 * 1 / 1.5 + 0) / 2)


def test_each_human_is_measured_against_the_other_humans_only():
    table, _ = majority_agreement(_pair_j(PAIR_ROWS))
    humans = table[table["group_by"] == "humans"].iloc[0]
    # h1: item 1 others A,B no majority; item 2 others B,B -> B hit; item 3 A,B none.
    # h2: item 1 A,B none; item 2 B hit; item 3 tie,B none.  h3: item 1 A,A -> A miss (B);
    # item 2 B hit; item 3 tie,A none.  -> 4 judgements with a majority, 3 hits.
    assert humans["n_judgements"] == 4
    assert humans["accuracy"] == pytest.approx(3 / 4)
    assert humans["n_raters"] == 3


def test_a_judge_verdict_never_counts_in_the_truth():
    rows = [r for r in PAIR_ROWS if r[0] != "h3"]
    flipped = [(*r[:4], "B", *r[5:]) if r[0] == "gpt" else r for r in rows]
    a, _ = majority_agreement(_pair_j(rows))
    b, _ = majority_agreement(_pair_j(flipped))
    ha = a[a["group_by"] == "humans"].iloc[0]
    hb = b[b["group_by"] == "humans"].iloc[0]
    assert ha["accuracy"] == hb["accuracy"]


def test_macro_prf_counts_unpredicted_labels_as_zero():
    conf = np.array([[2, 0], [1, 0]])
    p, r, f = macro_prf(conf)
    assert p == pytest.approx((2 / 3 + 0) / 2)
    assert r == pytest.approx((1 + 0) / 2)
    assert f == pytest.approx((0.8 + 0) / 2)


STAR_ROWS = [
    ("h1", 1, "m1", "c", 3),
    ("h2", 1, "m1", "c", 3),
    ("h3", 1, "m1", "c", 1),
    ("gpt", 1, "m1", "c", 3, False, "judge"),
    ("h1", 2, "m2", "c", 2),
    ("h2", 2, "m2", "c", 2),
    ("h3", 2, "m2", "c", 2),
    ("gpt", 2, "m2", "c", 1, False, "judge"),
]


def _star_j(rows):
    return judgements(coerce_star(star_frame(rows)), coerce_pair(None))


def test_accuracy_variants_hand_worked():
    t = accuracy_variants(_star_j(STAR_ROWS)).set_index(["variant", "group_by", "group"])
    # Paper: item 1 scores 3,3,1,3: gt 2.5, sigma 0.866 -> gpt |0.5| accurate; item 2 2,2,2,1:
    # gt 1.75, sigma 0.433 -> gpt |0.75| not accurate. 1/2.
    assert t.loc[("paper", "judge", "gpt"), "accuracy"] == pytest.approx(0.5)
    # Humans only for the judge: item 1 humans 3,3,1: gt 2.333, sigma 0.943 -> 3 accurate;
    # item 2 humans 2,2,2: sigma 0 and 1 != 2 -> not. 1/2.
    assert t.loc[("humans_only", "judge", "gpt"), "accuracy"] == pytest.approx(0.5)
    # Leave one out for h3 on item 2: others 2,2,1: gt 1.667, sigma 0.471; |2 - 1.667| = 0.333
    # accurate; on item 1: others 3,3,3: sigma 0, 1 != 3 -> not.
    # Humans-only for h3: item 1 others 3,3 (sigma 0, miss), item 2 others 2,2 (hit).
    assert t.loc[("humans_only", "pool", "onsite"), "n_judgements"] == 6
    # h1 and h2 on item 1 (others 3,1 / 3,1: gt 2, sigma 1: |3-2| = 1 not < 1) miss; on item 2
    # (others 2,2) hit. h3: one hit. 3 / 6.
    assert t.loc[("humans_only", "pool", "onsite"), "accuracy"] == pytest.approx(3 / 6)


def test_star_against_the_human_mean_hand_worked():
    t = star_vs_human_mean(_star_j(STAR_ROWS)).set_index(["group_by", "group"])
    # gpt: item 1 3 vs 7/3, item 2 1 vs 2 -> MAE (2/3 + 1) / 2.
    assert t.loc[("judge", "gpt"), "mae"] == pytest.approx((2 / 3 + 1) / 2)
    assert t.loc[("judge", "gpt"), "n_judgements"] == 2


def test_pair_kappa_of_two_raters_hand_worked():
    rows = []
    labels_a = ["A", "A", "B", "B", "A", "B"]
    labels_b = ["A", "B", "B", "B", "A", "A"]
    for i, (x, y) in enumerate(zip(labels_a, labels_b, strict=True)):
        rows += [("r1", i, "m1", "m2", x), ("r2", i, "m1", "m2", y)]
    j = _pair_j(rows)
    t = cohen_pairs(j, min_common=5, interval_min_items=5, n_boot=200, rng=np.random.default_rng(0))
    # po = 4/6; both raters 1/2 A, 1/2 B -> pe = 1/2; kappa = (2/3 - 1/2) / (1/2) = 1/3.
    assert t["kappa"].iloc[0] == pytest.approx(1 / 3)
    assert t["ci_low"].iloc[0] <= 1 / 3 <= t["ci_high"].iloc[0]
    assert cohen_pairs(j, min_common=7).empty
    # Below the interval threshold (30 common items by default) the pair keeps its kappa only.
    t = cohen_pairs(j, min_common=5)
    assert t["kappa"].iloc[0] == pytest.approx(1 / 3) and np.isnan(t["ci_low"].iloc[0])


def test_fleiss_and_alpha_with_intervals_repeat_with_the_seed():
    j = _pair_j(PAIR_ROWS * 3)
    a = chance_agreement(j, n_boot=300, rng=np.random.default_rng(5))
    b = chance_agreement(j, n_boot=300, rng=np.random.default_rng(5))
    pd.testing.assert_frame_equal(a, b)
    row = a[(a["raters"] == "all") & (a["statistic"] == "fleiss_kappa")].iloc[0]
    assert row["ci_low"] <= row["estimate"] <= row["ci_high"]


def test_pattern_resampling_reproduces_the_estimate_in_row_zero():
    counts = np.array([[2, 1], [3, 0], [2, 1], [0, 3]])
    uniq, freq = patterns(counts)
    assert freq.sum() == 4 and len(uniq) == 3
    w = resample_weights(freq, 50, np.random.default_rng(0))
    assert (w.sum(axis=1) == 4).all()
    # Fleiss by hand: P_i = (4+1-3)/6, 1, 1/3, 1 -> mean 2/3; p = (7/12, 5/12); pe = 74/144.
    pe = (7 / 12) ** 2 + (5 / 12) ** 2
    assert fleiss_batch(uniq, w)[0] == pytest.approx((2 / 3 - pe) / (1 - pe))
    units = np.repeat(np.arange(4), 3)
    values = np.array([0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1], dtype=float)
    expected = krippendorff_alpha(units, values, "nominal")
    assert alpha_batch(uniq, np.array([0.0, 1.0]), w, "nominal")[0] == pytest.approx(expected)


def test_rank_correlations_per_row():
    x = np.array([[1.0, 2, 3, 4], [1, 2, 3, 4]])
    y = np.array([[1.0, 2, 3, 4], [4, 3, 2, 1]])
    rho, tau = rank_corr_rows(x, y)
    assert rho == pytest.approx([1, -1]) and tau == pytest.approx([1, -1])


def test_length_preference_and_glm_recover_a_length_effect():
    rng = np.random.default_rng(0)
    n = 4000
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(1, 3, n)) % 3
    z = rng.uniform(-1, 1, n)
    theta = np.array([0.5, 0.0, -0.5])
    y = (rng.random(n) < 1 / (1 + np.exp(-(theta[a] - theta[b] + 1.5 * z)))).astype(float)
    th, gamma = fit_length_glm(a, b, y, z, 3)
    assert gamma == pytest.approx(1.5, abs=0.25)
    assert th == pytest.approx(theta, abs=0.15)
    rows = [("h1", 1, "m1", "m2", "A"), ("h1", 2, "m1", "m2", "B"), ("h1", 3, "m1", "m2", "tie")]
    df = pair_frame(rows)
    df["len_a"], df["len_b"] = [300, 300, 300], [100, 100, 100]
    pref = length_preference(coerce_pair(df)).set_index("group_by")
    assert pref.loc["humans", "n_decisive"] == 2 and pref.loc["humans", "p_longer"] == 0.5


def test_judge_costs_per_thousand_calls_and_bad_input():
    runs = pd.DataFrame(
        {
            "rater_id": ["gpt", "gpt"],
            "n_calls": [400, 600],
            "n_parsed": [390, 590],
            "n_parse_failed": [10, 10],
            "cost": [2.0, 3.0],
            "seconds": [100.0, 150.0],
        }
    )
    t = judge_costs(runs).iloc[0]
    assert t["cost_per_1k"] == pytest.approx(5.0) and t["seconds_per_1k"] == pytest.approx(250)
    assert t["share_parsed"] == pytest.approx(980 / 1000)
    with pytest.raises(ValueError, match="missing columns"):
        judge_costs(runs.drop(columns=["cost"]))


def test_build_report_has_the_judge_tables_and_the_bt_tie_option():
    rows = PAIR_ROWS * 4
    df = pair_frame(rows)
    r = build_report(pair_df=df, n_bootstrap=50, n_shuffles=2)
    assert len(r["judge_agreement"]) and len(r["chance_agreement"])
    half = build_report(pair_df=df, n_bootstrap=20, n_shuffles=0, bt_ties="half")
    drop = build_report(pair_df=df, n_bootstrap=20, n_shuffles=0, bt_ties="exclude")
    g = lambda r: r["leaderboard_bt"].set_index(["rater_kind", "model"])["games"]  # noqa: E731
    assert (g(drop) < g(half)).any()
    with pytest.raises(ValueError, match="bt_ties"):
        build_report(pair_df=df, bt_ties="coinflip")


def test_the_new_accuracy_variants_tell_a_good_judge_from_a_random_one():
    from ranking.stats import synthetic

    s = synthetic.generate(n_models=6, n_questions=60, n_pairs_per_question=2, seed=3)
    star = s.star_df
    rng = np.random.default_rng(0)
    bad = star[star["rater_kind"] == "judge"].copy()
    bad["rater_id"] = "random-judge"
    bad["rating_id"] += 10_000_000
    bad["score"] = rng.integers(1, 4, len(bad)).astype(float)
    both = pd.concat([star, bad], ignore_index=True)
    t = accuracy_variants(judgements(coerce_star(both), coerce_pair(None)))
    t = t[t["group_by"] == "judge"].set_index(["variant", "group"])["accuracy"]
    good = t.xs("judge-star", level="group")
    rand = t.xs("random-judge", level="group")
    for variant in ("leave_one_out", "humans_only"):
        assert good[variant] - rand[variant] > 0.15, variant
