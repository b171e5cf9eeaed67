"""The report's judge-assisted section: item pairing, the three figures side by side, and a clear
"not enough data" row (never an exception or a NaN in JSON) on thin studies."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ranking.stats import ppi
from ranking.stats.ppi_section import (
    MIN_ITEMS,
    NOTE_BT,
    NOTE_FEW,
    NOTE_FLAT,
    NOTE_NO_HUMAN,
    NOTE_NO_JUDGE,
    _mean_rows,
    mean_row,
    ppi_section,
)
from ranking.stats.report import build_report, report_to_jsonable
from ranking.stats.schema import coerce_pair, coerce_star
from ranking.stats.synthetic import generate
from tests.stats.helpers import pair_frame, star_frame

OPTIONS = {"n_shuffles": 0, "n_bootstrap": 0}


@pytest.fixture(scope="module")
def synthetic():
    s = generate(
        n_models=5, n_questions=80, n_pairs_per_question=8, n_onsite=8, n_crowd=20, n_public=20
    )
    return coerce_star(s.star_df), coerce_pair(s.pair_df)


def _human_subset(star: pd.DataFrame, share: float, seed: int) -> pd.DataFrame:
    """Keep the human ratings of a random ``share`` of the items (the judge keeps all)."""
    items = np.unique(star["item_id"])
    keep = np.random.default_rng(seed).choice(items, round(share * len(items)), replace=False)
    human = star["rater_kind"].astype(str) == "human"
    return star[~human | star["item_id"].isin(keep)]


def test_every_item_rated_by_humans_gives_the_human_estimate(synthetic):
    star, pair = synthetic
    t = ppi_section(star, pair)["ppi"]
    assert set(t["statistic"]) == {"star_mean", "win_rate", "bt_rating"}
    assert set(t["judge"]) == {"judge-star", "judge-pair"}
    overall = t[(t["statistic"] == "star_mean") & (t["criterion"] == "overall")]
    assert len(overall) == 5 and (overall["n_judge_only_items"] == 0).all()
    # No item for the judge alone: nothing to borrow, lambda is 0 and nothing is saved.
    assert (t.loc[t["note"] == "", "lam"] == 0).all()
    np.testing.assert_allclose(overall["ppi"], overall["human"])
    np.testing.assert_allclose(overall["saved_items"], 0.0, atol=1e-9)


def test_the_section_pairs_each_item_and_calls_the_estimator_on_item_means(synthetic):
    star, pair = synthetic
    star = _human_subset(star, 0.3, seed=1)
    t = ppi_section(star, pair)["ppi"]
    row = t[(t["criterion"] == "accuracy") & (t["model"] == "model-02")].iloc[0]
    s = star[(star["criterion"] == "accuracy") & (star["model"] == "model-02")]
    s = s[~s["is_repeat"]]
    kind = s["rater_kind"].astype(str)
    y = s[kind == "human"].groupby("item_id")["score"].mean()
    f = s[kind == "judge"].groupby("item_id")["score"].mean()
    lab = f.index.isin(y.index)
    r = ppi.ppi_mean(y.reindex(f.index[lab]).to_numpy(), f[lab].to_numpy(), f[~lab].to_numpy())
    assert row["n_human_items"] == lab.sum() and row["n_judge_only_items"] == (~lab).sum()
    assert row["ppi"] == pytest.approx(float(r.estimate))
    assert row["ppi_high"] - row["ppi_low"] == pytest.approx(2 * ppi.Z95 * float(r.se))
    assert row["judge_only"] == pytest.approx(f.mean())
    assert row["n_human_ratings"] == s[kind == "human"]["rating_id"].nunique() > lab.sum()


def test_with_humans_on_half_the_items_the_combined_intervals_are_narrower(synthetic):
    star, pair = synthetic
    full = ppi_section(star, pair)["ppi"]
    t = ppi_section(_human_subset(star, 0.5, seed=2), pair)["ppi"]
    t = t[(t["statistic"] == "star_mean") & (t["note"] == "")]
    ratio = (t["ppi_high"] - t["ppi_low"]) / (t["human_high"] - t["human_low"])
    # Never (materially) wider; clearly narrower where the judge tracks people (overall stars).
    assert (ratio <= 1.01).all()
    overall = t["criterion"] == "overall"
    assert (t.loc[overall, "lam"] > 0).all() and ratio[overall].median() < 0.9
    assert (t.loc[overall, "saved_ratings"] > 0).all()
    # The combined interval covers the full-human figure for most (model, criterion).
    merged = t.merge(full, on=["statistic", "criterion", "model"], suffixes=("", "_full"))
    covered = (merged["ppi_low"] <= merged["human_full"]) & (
        merged["human_full"] <= merged["ppi_high"]
    )
    assert covered.mean() >= 0.85


def test_the_width_curve_shrinks_with_the_budget_and_the_judge_helps(synthetic):
    star, pair = synthetic
    curve = ppi_section(_human_subset(star, 0.5, seed=3), pair)["ppi_curve"]
    c = curve[curve["statistic"] == "star_mean"].sort_values("share")
    assert c["n_human_items"].is_monotonic_increasing
    assert c["width_human"].is_monotonic_decreasing
    assert (c["width_ppi"] <= c["width_human"] + 1e-12).all()
    assert c["n_human_ratings"].iloc[-1] > c["n_human_items"].iloc[-1]  # several humans per item


def test_the_curve_subset_sums_equal_a_mask_per_share():
    """``_share_sums`` (one bincount per repeat and column, then cumulative sums over the nested
    shares) gives each (share, group, repeat) the sums over the group's rows whose item is ranked
    below the share's k; a None column counts the rows."""
    from ranking.stats.ppi_curve import _share_sums

    rng = np.random.default_rng(4)
    rank = np.stack([rng.permutation(50) for _ in range(7)])
    where = rng.integers(0, 50, size=80)  # the rows' items (an item may have several rows)
    group = rng.integers(0, 3, size=80)
    cols = [None, *rng.normal(size=(2, 80))]
    ks = [5, 10, 25, 50]
    first = np.searchsorted(np.asarray(ks), rank, side="right")
    sums = _share_sums(first, where, group, cols, 3, len(ks))
    assert sums.shape == (len(ks), 3, 7, 3)
    for i, k in enumerate(ks):
        for g in range(3):
            mask = (rank[:, where] < k) & (group == g)  # (repeats, rows)
            np.testing.assert_array_equal(sums[i, g, :, 0], mask.sum(axis=1))
            np.testing.assert_allclose(sums[i, g, :, 1:], mask @ np.stack(cols[1:]).T, atol=1e-12)
    whole = _share_sums(first, None, np.zeros(50, np.int64), [np.arange(50.0)], 1, len(ks))
    for i, k in enumerate(ks):
        np.testing.assert_array_equal(whole[i, 0, :, 0], (rank < k) @ np.arange(50.0))


@pytest.mark.parametrize("n", [10, 11, 1000, 70_001])
def test_the_curve_orders_are_the_permuted_stream(n):
    """``random_orders`` shuffles row by row what ``Generator.permuted`` shuffles along axis 1:
    the same orders from the same seed, and the generator left in the same state."""
    from ranking.stats.ppi_curve import random_orders

    a, b = np.random.default_rng([n, 1]), np.random.default_rng([n, 1])
    expected = a.permuted(np.broadcast_to(np.arange(n), (20, n)), axis=1)
    np.testing.assert_array_equal(random_orders(b, n, 20), expected)
    assert a.integers(1 << 62) == b.integers(1 << 62)


def test_the_default_judge_is_the_one_with_the_most_ratings(synthetic):
    star, pair = synthetic
    t = ppi_section(star, pair)["ppi"]
    n_star = star.loc[star["rater_id"] == "judge-star", "rating_id"].nunique()
    n_pair = (pair["rater_id"] == "judge-pair").sum()
    most = "judge-star" if n_star >= n_pair else "judge-pair"
    assert set(t.loc[t["default_judge"], "judge"]) == {most}


def _json_rows(star=None, pair=None) -> list[dict]:
    report = build_report(star, pair, **OPTIONS)
    body = report_to_jsonable(report)
    json.dumps(body, allow_nan=False)  # no NaN or infinity anywhere in the export
    return body["ppi"]


def test_an_empty_study_gives_empty_tables():
    assert _json_rows() == []
    assert build_report(None, None, **OPTIONS)["ppi_curve"].empty


def test_humans_without_a_judge_and_a_judge_without_humans_say_why():
    humans = star_frame([("h1", i, "m", "accuracy", 1 + i % 3) for i in range(20)])
    judge = star_frame([("gpt", i, "m", "accuracy", 2, False, "judge") for i in range(20)])
    assert [r["note"] for r in _json_rows(humans)] == [NOTE_NO_JUDGE]
    assert [r["note"] for r in _json_rows(judge)] == [NOTE_NO_HUMAN]


def test_few_items_or_flat_human_ratings_give_no_interval():
    few = star_frame(
        [("h1", i, "m", "accuracy", 1 + i % 3) for i in range(MIN_ITEMS - 1)]
        + [("gpt", i, "m", "accuracy", 2, False, "judge") for i in range(30)]
    )
    flat = star_frame(
        [("h1", i, "m", "accuracy", 3) for i in range(15)]
        + [("gpt", i, "m", "accuracy", 1 + i % 2, False, "judge") for i in range(30)]
    )
    for frame, note in ((few, NOTE_FEW.format(n=MIN_ITEMS)), (flat, NOTE_FLAT)):
        rows = [r for r in _json_rows(frame) if r["criterion"] == "accuracy"]
        assert len(rows) == 1 and rows[0]["note"] == note
        assert rows[0]["ppi_low"] is None and rows[0]["saved_items"] is None
        assert rows[0]["judge_only"] == pytest.approx(1.5 if note == NOTE_FLAT else 2.0)


def test_bradley_terry_with_too_few_comparisons_says_so():
    rows = [("h1", i, "m1", "m2", "A" if i % 2 else "B") for i in range(4)]
    rows += [("gpt", i, "m1", "m2", "A", True, False, "judge") for i in range(4)]
    out = _json_rows(pair=pair_frame(rows))
    bt = [r for r in out if r["statistic"] == "bt_rating"]
    assert [r["note"] for r in bt] == [NOTE_BT]
    win = [r for r in out if r["statistic"] == "win_rate"]
    assert {r["model"] for r in win} == {"m1", "m2"}
    assert all(r["note"] == NOTE_FEW.format(n=MIN_ITEMS) for r in win)


def test_mean_rows_are_the_mean_row_of_each_group_in_key_order():
    # Interleaved groups, a categorical key, a missing key (no group), unlabelled items and a
    # group with only judge outcomes: each row is mean_row over that group's rows in their order.
    rng = np.random.default_rng(5)
    n = 300
    y = rng.integers(1, 6, size=n).astype(float)
    y[rng.random(n) < 0.3] = np.nan
    model = pd.Categorical(rng.choice(["m2", "m0", "m1"], size=n), categories=["m0", "m1", "m2"])
    items = pd.DataFrame(
        {
            "criterion": rng.choice(["b", "a", None], size=n, p=[0.45, 0.45, 0.1]),
            "model": model,
            "y": y,
            "f": rng.integers(1, 6, size=n).astype(float),
            "n_ratings": rng.integers(0, 4, size=n),
        }
    )
    items.loc[(items["criterion"] == "a") & (items["model"] == "m0"), "y"] = np.nan
    rows = _mean_rows(items, "gpt", "star_mean", ["criterion", "model"])
    groups = list(items.groupby(["criterion", "model"], sort=True))
    assert len(rows) == len(groups) == 6
    for row, ((criterion, model_name), g) in zip(rows, groups, strict=True):
        expected = mean_row(
            g["y"].to_numpy(),
            g["f"].to_numpy(),
            g["n_ratings"].to_numpy(),
            judge="gpt",
            statistic="star_mean",
            criterion=criterion,
            model=model_name,
        )
        assert row.keys() == expected.keys()
        for key, value in expected.items():
            assert row[key] == value or (np.isnan(row[key]) and np.isnan(value)), key


def test_intervals_stay_on_the_scale():
    """Means near the top of the scale: the normal intervals (est +- 1.96 se) would end past it.
    Star means are cut to the criterion's range (widened to the values seen), win rates to
    [0, 1]; without a rubric range a star mean is not cut."""
    n = 40
    y = np.full(n, 5.0)  # human per-item means: the top star but for one item
    y[20] = 4.0
    f = y.copy()
    f[[5, 25]] = 4.0
    y[:10] = np.nan  # items the judge rated alone
    ones = np.ones(n, np.int64)
    raw = mean_row(y, f, ones, judge="j", statistic="star_mean", criterion="c", model="m")
    assert raw["human_high"] > 5.0 or raw["ppi_high"] > 5.0  # the uncut interval passes 5
    cut = mean_row(y, f, ones, (1.0, 5.0), judge="j", statistic="star_mean")
    for key in ("human_low", "human_high", "ppi_low", "ppi_high"):
        assert 1.0 <= cut[key] <= 5.0
    assert cut["human_high"] == 5.0
    assert cut["ppi"] == raw["ppi"] and cut["saved_items"] == raw["saved_items"]
    items = pd.DataFrame({"criterion": "c", "model": "m", "y": y, "f": f, "n_ratings": ones})
    (row,) = _mean_rows(items, "j", "star_mean", ["criterion", "model"], {"c": (1.0, 5.0)})
    assert row["human_high"] == 5.0 and row["ppi_high"] <= 5.0
    (row,) = _mean_rows(items, "j", "star_mean", ["criterion", "model"], {"c": (1.0, 3.0)})
    assert row["human_high"] == 5.0  # scores above the rubric's top widen the scale to them
    wins = items.assign(y=(y == 5.0).astype(float), f=(f == 5.0).astype(float))
    wins.loc[:9, "y"] = np.nan
    (row,) = _mean_rows(wins.drop(columns="criterion"), "j", "win_rate", ["model"])
    assert 0.0 <= row["human_low"] <= row["human_high"] <= 1.0
    assert 0.0 <= row["ppi_low"] <= row["ppi_high"] <= 1.0
