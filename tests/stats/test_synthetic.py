"""Synthetic studies with known truth: recovery of strengths, the report's shape, and independent
naive computations of every deterministic statistic agreeing to 1e-6."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ranking.stats import bradley_terry as bt
from ranking.stats import build_report, empty_pair_df, empty_star_df, report_to_jsonable, synthetic
from ranking.stats.rankings import match_arrays
from ranking.stats.report import REPORT_KEYS
from ranking.stats.schema import coerce_pair


@pytest.fixture(scope="module")
def small():
    return synthetic.generate(
        n_models=6,
        n_questions=40,
        n_task_types=3,
        n_pairs_per_question=6,
        n_onsite=5,
        n_crowd=8,
        n_public=20,
        repeat_rate=0.15,
        seed=11,
    )


@pytest.fixture(scope="module")
def report(small):
    return build_report(small.star_df, small.pair_df, n_shuffles=20, n_bootstrap=20, seed=1)


def test_report_has_every_table(report):
    assert list(report) == list(REPORT_KEYS)
    for key in REPORT_KEYS:
        if key not in ("meta", "elo_variance"):
            assert isinstance(report[key], pd.DataFrame), key
            assert len(report[key]) > 0, key


def test_empty_frames_give_empty_tables():
    for star, pair in ((empty_star_df(), empty_pair_df()), (None, None)):
        r = build_report(star, pair)
        assert list(r) == list(REPORT_KEYS)
        for key in REPORT_KEYS:
            if isinstance(r[key], pd.DataFrame):
                assert r[key].empty, key
        json.dumps(report_to_jsonable(r))


def test_only_star_or_only_pairwise(small):
    r1 = build_report(small.star_df, None, n_shuffles=2, n_bootstrap=2)
    assert r1["leaderboard_points"].empty and not r1["leaderboard_star"].empty
    r2 = build_report(None, small.pair_df, n_shuffles=2, n_bootstrap=2)
    assert r2["leaderboard_star"].empty and not r2["leaderboard_bt"].empty


def test_jsonable_is_plain_json(report):
    js = report_to_jsonable(report)
    text = json.dumps(js, allow_nan=False)
    assert "NaN" not in text
    assert js["leaderboard_points"][0].keys() >= {"model", "score", "rank"}


def test_rankings_recover_known_strengths():
    study = synthetic.generate(n_models=8, n_questions=200, n_pairs_per_question=20, seed=4)
    r = build_report(study.star_df, study.pair_df, n_shuffles=10, n_bootstrap=20)
    truth = pd.Series(study.strengths, index=study.models)
    for key, col in (("leaderboard_points", "score"), ("leaderboard_bt", "rating")):
        t = r[key].query("rater_kind == 'human'").set_index("model")[col]
        assert stats.spearmanr(t, truth.loc[t.index]).statistic > 0.95, key
    star = (
        r["leaderboard_star"]
        .query("rater_kind == 'human' and criterion == 'overall'")
        .set_index("model")["mean"]
    )
    assert stats.spearmanr(star, truth.loc[star.index]).statistic > 0.95
    # The judge's length and position bias shows; humans have none.
    lb = r["length_bias"].query("group_by == 'rater_kind' and min_delta == 300").set_index("group")
    assert lb.loc["judge", "win_share"] > lb.loc["human", "win_share"]
    pb = r["position_bias"].query("group_by == 'rater_kind'").set_index("group")
    assert pb.loc["judge", "left_of_decisive"] > 0.52
    # Onsite annotators are more accurate than the public (the paper's finding 3).
    acc = r["accuracy_by_pool"].set_index(["mode", "pool"])["pooled"]
    assert acc[("star", "onsite")] > acc[("pairwise", "public")]
    # Without hints annotators score higher (finding 8 as generated).
    he = r["hint_effect"].query("metric == 'score' and criterion == 'overall'")
    assert he["diff"].iloc[0] > 0 and he["welch_p"].iloc[0] < 0.05


def test_bt_bootstrap_intervals_cover_estimate():
    study = synthetic.generate(
        n_models=5, n_questions=100, n_pairs_per_question=10, star_judge=False, seed=2
    )
    a, b, s, models = match_arrays(coerce_pair(study.pair_df))
    t = bt.table(a, b, s, models, n_rounds=50, rng=np.random.default_rng(0))
    assert (t["ci_low"] <= t["rating"]).all() and (t["rating"] <= t["ci_high"]).all()
    assert t["rating"].is_monotonic_decreasing


# --------------------------------------------------------------------------- naive cross-checks


def _first_ratings(rows, key):
    """First (earliest, non-repeat) rating per key, with a plain dict."""
    first = {}
    for r in sorted(rows, key=lambda r: (r["submitted_at"], r["rating_id"])):
        if r["is_repeat"]:
            continue
        first.setdefault(key(r), r)
    return list(first.values())


def test_naive_accuracy_consistency_and_leaderboards_agree(small, report):
    star = small.star_df.to_dict("records")
    pair = small.pair_df.to_dict("records")
    score_a = {"A": 1.0, "B": 0.0, "tie": 0.5, "both_bad": 0.5}
    # Judgements: (mode, rater, item, criterion, score, value, rating)
    judg = [dict(r, mode="star", crit=r["criterion"], sc=r["score"], val=r["score"]) for r in star]
    judg += [
        dict(r, mode="pairwise", crit="pairwise", sc=score_a[r["choice"]], val=r["choice"])
        for r in pair
    ]
    first = _first_ratings(judg, lambda r: (r["mode"], r["rater_id"], r["item_id"], r["crit"]))
    by_unit = defaultdict(list)
    for r in first:
        by_unit[(r["mode"], r["item_id"], r["crit"])].append(r["sc"])
    acc_n, acc_k = Counter(), Counter()
    n_ratings = defaultdict(set)
    for r in first:
        n_ratings[(r["rater_id"], r["mode"])].add(r["rating_id"])
        vals = by_unit[(r["mode"], r["item_id"], r["crit"])]
        if len(vals) < 2:
            continue
        gt = sum(vals) / len(vals)
        sigma = math.sqrt(sum((v - gt) ** 2 for v in vals) / len(vals))
        ok = abs(r["sc"] - gt) <= 1e-9 if sigma <= 1e-12 else abs(r["sc"] - gt) < sigma
        acc_n[(r["rater_id"], r["mode"])] += 1
        acc_k[(r["rater_id"], r["mode"])] += ok
    expected = {k: acc_k[k] / acc_n[k] for k in acc_n if len(n_ratings[k]) >= 5}
    got = report["accuracy_by_rater"].set_index(["rater_id", "mode"])["accuracy"].to_dict()
    assert set(got) == set(expected)
    for k, v in expected.items():
        assert got[k] == pytest.approx(v, abs=1e-6)

    # Consistency: per (rater, mode, item, criterion) with >= 2 ratings, mode count / n, pooled.
    groups = defaultdict(list)
    for r in judg:
        groups[(r["rater_id"], r["mode"], r["item_id"], r["crit"])].append(r["val"])
    num, den = Counter(), Counter()
    for (rater, mode, _, _), vals in groups.items():
        if len(vals) >= 2:
            num[(rater, mode)] += Counter(vals).most_common(1)[0][1]
            den[(rater, mode)] += len(vals)
    expected = {k: num[k] / den[k] for k in den if len(n_ratings[k]) >= 5}
    got = report["consistency_by_rater"].set_index(["rater_id", "mode"])["consistency"].to_dict()
    assert set(got) == set(expected)
    for k, v in expected.items():
        assert got[k] == pytest.approx(v, abs=1e-6)

    # Star means per model and criterion (all ratings, repeats included).
    sums, cnt = Counter(), Counter()
    for r in star:
        sums[(r["model"], r["criterion"])] += r["score"]
        cnt[(r["model"], r["criterion"])] += 1
    lead = (
        report["leaderboard_star"]
        .query("rater_kind == 'all'")
        .set_index(["model", "criterion"])["mean"]
    )
    for k in cnt:
        assert lead[k] == pytest.approx(sums[k] / cnt[k], abs=1e-6)

    # Points and Elo in time order, per match, with plain floats.
    pts, games = Counter(), Counter()
    ratings = defaultdict(lambda: 1500.0)
    for r in sorted(pair, key=lambda r: (r["submitted_at"], r["rating_id"])):
        sa, a, b = score_a[r["choice"]], r["model_a"], r["model_b"]
        pts[a] += sa
        pts[b] += 1 - sa
        games[a] += 1
        games[b] += 1
        e = 1 / (1 + 10 ** ((ratings[b] - ratings[a]) / 400))
        ratings[a] += 32 * (sa - e)
        ratings[b] -= 32 * (sa - e)
    p = report["leaderboard_points"].query("rater_kind == 'all'").set_index("model")["score"]
    e = report["leaderboard_elo"].query("rater_kind == 'all'").set_index("model")["elo"]
    for m in games:
        assert p[m] == pytest.approx(pts[m] / games[m], abs=1e-6)
        assert e[m] == pytest.approx(ratings[m], abs=1e-6)

    # Length bias: share of ratings where the longer answer won, per rater kind, delta >= 100.
    for kind in ("human", "judge"):
        rows = [r for r in pair if r["rater_kind"] == kind and abs(r["len_a"] - r["len_b"]) >= 100]
        won = sum(score_a[r["choice"]] == (1.0 if r["len_a"] > r["len_b"] else 0.0) for r in rows)
        lb = (
            report["length_bias"]
            .query("group_by == 'rater_kind' and min_delta == 100")
            .set_index("group")
        )
        assert lb.loc[kind, "n"] == len(rows)
        assert lb.loc[kind, "win_share"] == pytest.approx(won / len(rows), abs=1e-6)

    # Human vs judge gaps: per item the mean human and the judge's first scores.
    hum, jud = defaultdict(list), {}
    for r in star:
        if r["is_repeat"]:
            continue
        if r["rater_kind"] == "human":
            hum[(r["item_id"], r["criterion"])].append(r["score"])
        else:
            jud[(r["item_id"], r["criterion"])] = r["score"]
    keys = [k for k in jud if k in hum and k[1] == "accuracy"]
    share = sum(abs(np.mean(hum[k]) - jud[k]) >= 1 - 1e-9 for k in keys) / len(keys)
    g = report["gaps"].query("criterion == 'accuracy' and k == 1")
    assert g["share"].iloc[0] == pytest.approx(share, abs=1e-6)
