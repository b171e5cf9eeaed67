"""Tiny builders for hand-worked star and pairwise frames."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

T0 = pd.Timestamp("2024-01-01", tz="UTC")


def star_frame(rows: Sequence[tuple]) -> pd.DataFrame:
    """rows: (rater_id, item_id, model, criterion, score[, is_repeat[, pool[, kind]]])."""
    out = []
    for i, r in enumerate(rows):
        rater, item, model, crit, score = r[:5]
        is_repeat = r[5] if len(r) > 5 else False
        pool = r[6] if len(r) > 6 else "onsite"
        kind = r[7] if len(r) > 7 else ("judge" if pool == "judge" else "human")
        out.append(
            {
                "rating_id": i + 1,
                "rater_id": rater,
                "rater_kind": kind,
                "pool": pool,
                "item_id": item,
                "question_id": f"q{item}",
                "task_type": "t",
                "model": model,
                "criterion": crit,
                "score": float(score),
                "is_repeat": is_repeat,
                "submitted_at": T0 + pd.Timedelta(seconds=i),
                "hint_shown": pd.NA,
                "duration_s": np.nan,
                "length": 100,
            }
        )
    return pd.DataFrame(out)


def pair_frame(rows: Sequence[tuple]) -> pd.DataFrame:
    """rows: (rater_id, item_id, model_a, model_b, choice[, left_is_a[, is_repeat[, pool]]])."""
    out = []
    for i, r in enumerate(rows):
        rater, item, a, b, choice = r[:5]
        left_is_a = r[5] if len(r) > 5 else True
        is_repeat = r[6] if len(r) > 6 else False
        pool = r[7] if len(r) > 7 else "crowd"
        out.append(
            {
                "rating_id": 1000 + i,
                "rater_id": rater,
                "rater_kind": "judge" if pool == "judge" else "human",
                "pool": pool,
                "item_id": item,
                "question_id": f"q{item}",
                "task_type": "t",
                "model_a": a,
                "model_b": b,
                "len_a": 100,
                "len_b": 100,
                "choice": choice,
                "left_is_a": left_is_a,
                "is_repeat": is_repeat,
                "submitted_at": T0 + pd.Timedelta(seconds=i),
                "hint_shown": pd.NA,
                "duration_s": 10.0,
            }
        )
    return pd.DataFrame(out)
