"""Per-annotator quality figures and flags of a study (docs/quality.md has the thresholds).

Inputs are the statistics frames of the study's *regular* items (``ranking.stats.schema``; first
ratings are used, repeats are left out) and a frame of check ratings (``CHECK_COLUMNS``: one row
per rating of a gold item or an attention check, with ``passed``). Humans only: judges are
measured in the judge section of the report.

Flags (a flag is a reason to look, not a verdict):

* ``gold``: gold-item accuracy below ``GOLD_MIN`` (at least one gold rating);
* ``attention``: at least one failed attention check;
* ``straight_lining``: over at least ``MIN_RATINGS`` ratings, one star value (star) or one side
  of the screen, tie or both-bad as shown (pairwise) makes up ``STRAIGHT_SHARE`` or more of the answers;
* ``too_fast``: at least ``FAST_SHARE`` of the ratings took less than
  ``FAST_BASE_S + characters shown / FAST_CHARS_PER_S`` seconds, and at least ``FAST_MIN`` of
  them did. Unlike the other flags it needs no ``MIN_RATINGS``: a rating faster than anyone
  reads is evidence on its own, and a crowd worker who clicks through a short quota (5 items
  in 5 seconds) must not pass because the quota was short; ``FAST_MIN`` keeps one or two
  hurried answers from flagging anyone;
* ``disagrees``: pairwise, a Dawid-Skene reliability below ``DS_MIN``; star, a noise sigma above
  ``SIGMA_RATIO`` times the study's median (over ``MIN_RATINGS`` or more ratings);
* ``repeat_skipped``: at least one hidden repeat skipped (``repeat_skips``). A repeat shows an
  item the annotator has already rated, so an honest annotator has no reason to skip it, and a
  worker who recognises repeats could otherwise skip them all and never be measured for
  self-consistency.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .reliability import pair_reliability, star_reliability

CHECK_COLUMNS = ("rater_id", "pool", "check_kind", "passed")
GOLD_MIN = 0.7
MIN_RATINGS = 10
STRAIGHT_SHARE = 0.9
FAST_BASE_S = 2.0
FAST_CHARS_PER_S = 50.0
FAST_SHARE = 0.5
FAST_MIN = 3
DS_MIN = 0.5
SIGMA_RATIO = 2.0
FLAG_CODES = ("gold", "attention", "straight_lining", "too_fast", "disagrees", "repeat_skipped")
COLUMNS = (
    "rater_id",
    "pool",
    "n_ratings",
    "n_gold",
    "gold_accuracy",
    "n_attention",
    "attention_failed",
    "straight_share",
    "fast_share",
    "median_s",
    "ds_reliability",
    "agrees_with_ds",
    "star_bias",
    "star_sigma",
    "flags",
)


def _humans(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty:
        return df
    return df[(df["rater_kind"] == "human") & ~df["is_repeat"].astype(bool)]


def _ratings(star: pd.DataFrame, pair: pd.DataFrame) -> pd.DataFrame:
    """One row per rating: rater, pool, seconds, characters shown."""
    cols = ["rating_id", "rater_id", "pool", "duration_s", "chars"]
    parts = []
    if len(star):
        s = star.drop_duplicates("rating_id")
        parts.append(s.assign(chars=s["length"].astype(float))[cols])
    if len(pair):
        parts.append(pair.assign(chars=(pair["len_a"] + pair["len_b"]).astype(float))[cols])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)


def _straight_share(star: pd.DataFrame, pair: pd.DataFrame) -> pd.Series:
    """Per rater, the share of the most frequent answer (star value, or side shown)."""
    shares = []
    if len(star):
        shares.append(star.groupby("rater_id")["score"].agg(_modal_share))
    if len(pair):
        side = np.where(
            pair["choice"].isin(["A", "B"]),
            np.where((pair["choice"] == "A") == pair["left_is_a"].astype(bool), "left", "right"),
            pair["choice"],
        )
        # The side as shown (left, right, tie, both bad), not the canonical choice: A is the
        # lower response id, so a careful annotator may well say "A" on most items.
        shares.append(pair.assign(side=side).groupby("rater_id")["side"].agg(_modal_share))
    if not shares:
        return pd.Series(dtype=float)
    return pd.concat(shares).groupby(level=0).max()


def _modal_share(values: pd.Series) -> float:
    counts = values.value_counts()
    return float(counts.iloc[0] / counts.sum()) if len(counts) else float("nan")


def _speed(ratings: pd.DataFrame) -> pd.DataFrame:
    timed = ratings[ratings["duration_s"].notna()]
    limit = FAST_BASE_S + timed["chars"] / FAST_CHARS_PER_S
    timed = timed.assign(fast=(timed["duration_s"] < limit).astype(float))
    g = timed.groupby("rater_id")
    return pd.DataFrame(
        {"n_timed": g.size(), "fast_share": g["fast"].mean(), "median_s": g["duration_s"].median()}
    )


def _checks(checks: pd.DataFrame) -> pd.DataFrame:
    out = pd.DataFrame(columns=["n_gold", "gold_accuracy", "n_attention", "attention_failed"])
    if checks.empty:
        return out
    c = checks.assign(passed=checks["passed"].astype(float))
    gold = c[c["check_kind"] == "gold"].groupby("rater_id")["passed"]
    att = c[c["check_kind"] == "attention"].groupby("rater_id")["passed"]
    out = pd.DataFrame(
        {
            "n_gold": gold.size(),
            "gold_accuracy": gold.mean(),
            "n_attention": att.size(),
            "attention_failed": att.size() - att.sum(),
        }
    )
    return out


def _flags(row: pd.Series, median_sigma: float) -> str:
    enough = row["n_ratings"] >= MIN_RATINGS
    flags = {
        "gold": row["n_gold"] > 0 and row["gold_accuracy"] < GOLD_MIN,
        "attention": row["attention_failed"] > 0,
        "straight_lining": enough and row["straight_share"] >= STRAIGHT_SHARE,
        "too_fast": row["fast_share"] >= FAST_SHARE
        and round(row["fast_share"] * row["n_timed"]) >= FAST_MIN,
        "disagrees": enough
        and (row["ds_reliability"] < DS_MIN or row["star_sigma"] > SIGMA_RATIO * median_sigma),
        "repeat_skipped": row["repeats_skipped"] > 0,
    }
    return " ".join(code for code in FLAG_CODES if bool(flags[code]))


def annotator_flags(
    star_df: pd.DataFrame,
    pair_df: pd.DataFrame,
    checks: pd.DataFrame,
    repeat_skips: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per human annotator (``COLUMNS``); ``flags`` is a space-separated list of codes.
    ``repeat_skips``: one row per hidden repeat a human skipped (``rater_id``, ``pool``)."""
    star, pair = _humans(star_df), _humans(pair_df)
    ratings = _ratings(star, pair)
    skips = repeat_skips if repeat_skips is not None else pd.DataFrame(columns=["rater_id", "pool"])
    pools = pd.concat(
        [f for f in (ratings[["rater_id", "pool"]], checks[["rater_id", "pool"]], skips) if len(f)]
        or [ratings[["rater_id", "pool"]]]
    )
    if pools.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    base = pools.drop_duplicates("rater_id").set_index("rater_id")
    base["n_ratings"] = ratings.groupby("rater_id").size()
    base["straight_share"] = _straight_share(star, pair)
    base = base.join(_speed(ratings)).join(_checks(checks))
    for table in (pair_reliability(pair), star_reliability(star)):
        base = base.join(table.set_index("rater_id").drop(columns="n_ratings"))
    base["repeats_skipped"] = skips.groupby("rater_id").size() if len(skips) else 0
    base = base.reindex(columns=[*COLUMNS[1:-1], "n_timed", "repeats_skipped"])
    for col in (
        "n_ratings",
        "n_gold",
        "n_attention",
        "attention_failed",
        "n_timed",
        "repeats_skipped",
    ):
        base[col] = base[col].fillna(0).astype(np.int64)
    median_sigma = (
        float(base["star_sigma"].median()) if base["star_sigma"].notna().any() else np.inf
    )
    base["flags"] = base.apply(_flags, axis=1, median_sigma=median_sigma)
    out = (
        base.drop(columns=["n_timed", "repeats_skipped"])
        .reset_index()
        .rename(columns={"index": "rater_id"})
    )
    return out.sort_values("rater_id", kind="stable").reset_index(drop=True)[list(COLUMNS)]


def check_passed(
    answer: dict[str, Any], *, choice: str = "", scores: dict[str, int] | None = None
) -> bool:
    """Does a rating meet a check's accepted answer? Pairwise: the choice is one of the accepted
    choices. Star: every criterion with an accepted range got a score inside it (a criterion
    left unscored fails)."""
    if "choices" in answer:
        return choice in answer["choices"]
    ranges = answer.get("scores") or {}
    scores = scores or {}
    return all(key in scores and lo <= scores[key] <= hi for key, (lo, hi) in ranges.items())
