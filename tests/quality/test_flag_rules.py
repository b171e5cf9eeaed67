"""The flag rules on hand-made star frames (no database): a straight-liner, a speeder, a noisy
rater, and what passes a check."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ranking.stats.annotator_flags import CHECK_COLUMNS, annotator_flags, check_passed


def _star(rater: str, scores: list[int], seconds: float, length: int = 500) -> list[dict]:
    return [
        {"rating_id": hash((rater, i)) % 10**9, "rater_id": rater, "rater_kind": "human",
         "pool": "onsite", "item_id": i, "score": float(s), "is_repeat": False,
         "duration_s": seconds, "length": length, "criterion": "overall"}
        for i, s in enumerate(scores)
    ]  # fmt: skip


def test_star_flags_for_a_straight_liner_a_speeder_and_a_random_clicker():
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 6, 30)
    rows = []
    for name in ("careful1", "careful2", "careful3"):
        rows += _star(name, list(np.clip(truth + rng.choice([-1, 0, 0, 0, 1], 30), 1, 5)), 40.0)
    rows += _star("fours", [4] * 30, 40.0)
    rows += _star("speeder", list(truth), 3.0)  # 500 characters need 12 s
    rows += _star("random", list(rng.integers(1, 6, 30)), 40.0)
    checks = pd.DataFrame(columns=list(CHECK_COLUMNS))
    table = annotator_flags(pd.DataFrame(rows), pd.DataFrame(), checks).set_index("rater_id")
    # Always 4 is straight-lining, and it also disagrees with the others on the items.
    assert table.loc["fours", "flags"].split()[0] == "straight_lining"
    assert table.loc["speeder", "flags"] == "too_fast"
    assert "disagrees" in table.loc["random", "flags"]
    assert (table.loc[["careful1", "careful2", "careful3"], "flags"] == "").all()


def test_judges_and_repeats_do_not_count():
    rows = _star("judge", [4] * 30, 40.0)
    for r in rows:
        r["rater_kind"] = "judge"
    checks = pd.DataFrame(columns=list(CHECK_COLUMNS))
    assert annotator_flags(pd.DataFrame(rows), pd.DataFrame(), checks).empty


def test_check_passed_rules():
    assert check_passed({"choices": ["A", "tie"]}, choice="tie")
    assert not check_passed({"choices": ["A"]}, choice="B")
    ranges = {"scores": {"accuracy": [4, 5], "fluency": [3, 3]}}
    assert check_passed(ranges, scores={"accuracy": 4, "fluency": 3, "other": 1})
    assert not check_passed(ranges, scores={"accuracy": 4})  # a criterion left unscored fails
    assert not check_passed(ranges, scores={"accuracy": 3, "fluency": 3})


def test_a_short_quota_clicked_through_is_too_fast_and_two_hurried_answers_are_not():
    # A crowd worker with a quota of 5 who clicks through every item in a second was never
    # flagged: too_fast waited for 10 timed ratings.
    rows = _star("clicker", [3, 4, 2, 5, 3], 1.0)
    rows += _star("hurried", [3, 4, 2, 5, 3], 40.0)
    for r in rows[-5:-3]:  # two of five answers quick: not a pattern
        r["duration_s"] = 1.0
    rows += _star("careful", [3, 4, 2, 5, 3], 40.0)
    rows += _star("two", [3, 4], 1.0)  # both fast, but only two ratings
    checks = pd.DataFrame(columns=list(CHECK_COLUMNS))
    table = annotator_flags(pd.DataFrame(rows), pd.DataFrame(), checks).set_index("rater_id")
    assert table.loc["clicker", "flags"] == "too_fast"
    assert table.loc["hurried", "flags"] == table.loc["careful", "flags"] == ""
    assert table.loc["two", "flags"] == ""
