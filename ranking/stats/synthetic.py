"""Seeded synthetic studies with known model strengths, for tests and benchmarks.

The generator is vectorised (no loop per rating), so a 300k-rating study takes well under a
second. Design, loosely after LLMEval-1: every answer is star-rated by onsite annotators and a
judge on five 1-3 criteria; sampled pairs of answers to the same question are compared by crowd
and public annotators and by a judge. Raters differ by pool in noise, the judge prefers longer
answers and the left side a little, and ~2 % of each rater's exposures are hidden repeats
(pairwise repeats with the sides swapped).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

CRITERIA = ("accuracy", "informativeness", "fluency", "logicality", "harmlessness")
# Criterion offsets on the latent scale: harmlessness is easy for every model (the paper's finding
# 1), accuracy and informativeness separate the models most.
_CRIT_OFFSET = np.array([0.0, 0.1, 0.9, 0.5, 1.6])
_CRIT_WEIGHT = np.array([1.0, 1.0, 0.35, 0.6, 0.15])
_POOL_NOISE = {"onsite": 0.35, "crowd": 0.6, "public": 1.0, "judge": 0.3}


@dataclass
class SyntheticStudy:
    star_df: pd.DataFrame
    pair_df: pd.DataFrame
    models: list[str]
    strengths: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)


def _raters(
    prefix: str, n: int, rng: np.random.Generator, skew: float
) -> tuple[np.ndarray, np.ndarray]:
    """Rater ids and sampling weights; ``skew`` > 0 makes a few raters do most of the work."""
    ids = np.array([f"{prefix}-{i:04d}" for i in range(n)])
    w = rng.pareto(skew, n) + 1.0 if skew > 0 else np.ones(n)
    return ids, w / w.sum()


@dataclass
class _World:
    """What the star and pairwise parts share: models, questions, answers and raters."""

    rng: np.random.Generator
    models: np.ndarray
    q_ids: np.ndarray
    q_type: np.ndarray
    length: np.ndarray  # (model, question) answer length
    quality: np.ndarray  # (model, question) latent quality
    raters: dict[str, tuple[np.ndarray, np.ndarray]]
    repeat_rate: float
    hint_randomised: bool
    t0: np.datetime64 = np.datetime64("2024-01-01T00:00:00", "s")


def _world(
    rng: np.random.Generator,
    strengths: np.ndarray,
    n_questions: int,
    n_task_types: int,
    n_raters: dict[str, int],
    repeat_rate: float,
    hint_randomised: bool,
) -> _World:
    n_models = len(strengths)
    q_diff = rng.normal(0, 0.4, n_questions)
    # Answer lengths: stronger models write a little longer, with wide spread.
    length = np.rint(rng.lognormal(6.0 + 0.15 * strengths[:, None], 0.6, (n_models, n_questions)))
    quality = strengths[:, None] - q_diff[None, :] + rng.normal(0, 0.3, (n_models, n_questions))
    skews = {"onsite": 0.0, "crowd": 2.0, "public": 1.2}
    return _World(
        rng=rng,
        models=np.array([f"model-{i:02d}" for i in range(n_models)]),
        q_ids=np.array([f"q{q:04d}" for q in range(n_questions)]),
        q_type=np.array([f"type-{q % max(n_task_types, 1)}" for q in range(n_questions)]),
        length=length.astype(np.int64),
        quality=quality,
        raters={p: _raters(p, n_raters[p], rng, skews[p]) for p in ("onsite", "crowd", "public")},
        repeat_rate=repeat_rate,
        hint_randomised=hint_randomised,
    )


def _with_repeats(
    w: _World, item: np.ndarray, rater: np.ndarray, pool: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Append ~``repeat_rate`` hidden repeats: (item, rater, pool, is_repeat, repeated mask)."""
    rep = w.rng.random(len(item)) < w.repeat_rate
    is_repeat = np.concatenate([np.zeros(len(item), bool), np.ones(rep.sum(), bool)])
    item, rater, pool = (np.concatenate([x, x[rep]]) for x in (item, rater, pool))
    return item, rater, pool, is_repeat, rep


def _times(w: _World, is_repeat: np.ndarray) -> np.ndarray:
    """Submit times over 30 days; repeats come later than the first exposure."""
    t = w.rng.integers(0, 30 * 86400, len(is_repeat))
    t[is_repeat] += 30 * 86400
    return (w.t0 + t).astype("datetime64[ns]")


def _star_frame(w: _World, raters_per_item: int, judge: bool) -> pd.DataFrame:
    n_models, n_questions = w.quality.shape
    resp_m, resp_q = np.divmod(np.arange(n_models * n_questions), n_questions)
    n_resp = len(resp_m)
    item = np.repeat(np.arange(n_resp), raters_per_item)
    ids, weights = w.raters["onsite"]
    rater = w.rng.choice(ids, size=len(item), p=weights)
    pool = np.full(len(item), "onsite")
    if judge:
        item = np.concatenate([item, np.arange(n_resp)])
        rater = np.concatenate([rater, np.full(n_resp, "judge-star")])
        pool = np.concatenate([pool, np.full(n_resp, "judge")])
    item, rater, pool, is_repeat, _ = _with_repeats(w, item, rater, pool)
    n = len(item)
    hint = w.rng.random(n) < 0.5 if w.hint_randomised else np.ones(n, bool)
    submitted = _times(w, is_repeat)
    noise_sd = np.vectorize(_POOL_NOISE.get)(pool)
    lat = w.quality.ravel()[item][:, None] * _CRIT_WEIGHT[None, :] + _CRIT_OFFSET[None, :]
    # Without a hint annotators miss some errors and score higher (the paper's finding 8).
    lat = lat + np.where(hint, 0.0, 0.15)[:, None]
    lat = lat + w.rng.normal(0, 1, (n, len(CRITERIA))) * noise_sd[:, None]
    stars = np.clip(np.rint(2.0 + lat), 1, 3)
    k = len(CRITERIA)
    df = pd.DataFrame(
        {
            "rating_id": np.repeat(np.arange(1, n + 1), k),
            "rater_id": np.repeat(rater, k),
            "rater_kind": np.repeat(np.where(pool == "judge", "judge", "human"), k),
            "pool": np.repeat(pool, k),
            "item_id": np.repeat(resp_m[item] * n_questions + resp_q[item] + 1, k),
            "question_id": np.repeat(w.q_ids[resp_q[item]], k),
            "task_type": np.repeat(w.q_type[resp_q[item]], k),
            "model": np.repeat(w.models[resp_m[item]], k),
            "criterion": np.tile(np.array(CRITERIA), n),
            "score": stars.ravel().astype(float),
            "is_repeat": np.repeat(is_repeat, k),
            "submitted_at": np.repeat(submitted, k),
            "hint_shown": pd.array(np.repeat(hint, k), dtype="boolean"),
            "duration_s": np.repeat(w.rng.lognormal(3.5, 0.5, n), k),
            "length": np.repeat(w.length.ravel()[item], k),
        }
    )
    df["submitted_at"] = df["submitted_at"].dt.tz_localize("UTC")
    return df


def _pair_items(w: _World, n_pairs_per_question: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(question, model A, model B) of each pairwise item: sampled pairs per question."""
    n_models, n_questions = w.quality.shape
    n_pairs_per_question = min(n_pairs_per_question, n_models * (n_models - 1) // 2)
    iu, ju = np.triu_indices(n_models, 1)
    if not (n_pairs_per_question and len(iu)):
        return (np.zeros(0, np.int64),) * 3
    keys = w.rng.random((n_questions, len(iu)))
    pick = np.argsort(keys, axis=1)[:, :n_pairs_per_question]
    p_q = np.repeat(np.arange(n_questions), n_pairs_per_question)
    p_i, p_j = iu[pick.ravel()], ju[pick.ravel()]
    # Canonical A is a random one of the two.
    flip = w.rng.random(len(p_i)) < 0.5
    return p_q, np.where(flip, p_j, p_i), np.where(flip, p_i, p_j)


def _pair_raters(
    w: _World, n_items: int, raters_per_item: int, judge: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(item, rater, pool) of each pairwise exposure before repeats."""
    item = np.repeat(np.arange(n_items), raters_per_item)
    # Humans: a third of the work by the crowd, the rest by the public.
    is_crowd = w.rng.random(len(item)) < 0.35
    (crowd_ids, crowd_w), (public_ids, public_w) = w.raters["crowd"], w.raters["public"]
    rater = np.where(
        is_crowd,
        w.rng.choice(crowd_ids, size=len(item), p=crowd_w),
        w.rng.choice(public_ids, size=len(item), p=public_w),
    )
    pool = np.where(is_crowd, "crowd", "public")
    if judge:
        item = np.concatenate([item, np.arange(n_items)])
        rater = np.concatenate([rater, np.full(n_items, "judge-pair")])
        pool = np.concatenate([pool, np.full(n_items, "judge")])
    return item, rater, pool


def _pair_frame(
    w: _World, first_id: int, per_q: int, raters_per_item: int, judge: bool
) -> pd.DataFrame:
    p_q, p_a, p_b = _pair_items(w, per_q)
    item, rater, pool = _pair_raters(w, len(p_q), raters_per_item, judge)
    item, rater, pool, is_repeat, rep = _with_repeats(w, item, rater, pool)
    left_is_a = w.rng.random(len(item) - rep.sum()) < 0.5
    # A repeat shows the sides swapped relative to the first exposure.
    left_is_a = np.concatenate([left_is_a, ~left_is_a[rep]])
    n = len(item)
    submitted = _times(w, is_repeat)
    qa, qb = w.quality[p_a[item], p_q[item]], w.quality[p_b[item], p_q[item]]
    la, lb = w.length[p_a[item], p_q[item]], w.length[p_b[item], p_q[item]]
    is_judge = pool == "judge"
    u = qa - qb + w.rng.normal(0, 1, n) * np.vectorize(_POOL_NOISE.get)(pool)
    # The judge likes long answers and the left side a little.
    u = u + np.where(is_judge, 0.25 * np.tanh((la - lb) / 400.0), 0.0)
    u = u + np.where(is_judge, np.where(left_is_a, 0.15, -0.15), 0.0)
    both_low = (np.maximum(qa, qb) < -0.6) & (w.rng.random(n) < 0.5)
    choice = np.where(np.abs(u) < 0.25, "tie", np.where(u > 0, "A", "B"))
    choice = np.where(both_low & (choice == "tie"), "both_bad", choice)
    hint = w.rng.random(n) < 0.5 if w.hint_randomised else np.ones(n, bool)
    df = pd.DataFrame(
        {
            "rating_id": np.arange(first_id, first_id + n),
            "rater_id": rater,
            "rater_kind": np.where(is_judge, "judge", "human"),
            "pool": pool,
            "item_id": 10_000_000 + item,
            "question_id": w.q_ids[p_q[item]],
            "task_type": w.q_type[p_q[item]],
            "model_a": w.models[p_a[item]],
            "model_b": w.models[p_b[item]],
            "len_a": la,
            "len_b": lb,
            "choice": choice,
            "left_is_a": left_is_a,
            "is_repeat": is_repeat,
            "submitted_at": submitted,
            "hint_shown": pd.array(hint, dtype="boolean"),
            "duration_s": w.rng.lognormal(3.8, 0.6, n),
        }
    )
    df["submitted_at"] = df["submitted_at"].dt.tz_localize("UTC")
    return df


def generate(
    *,
    n_models: int = 20,
    n_questions: int = 500,
    n_task_types: int = 10,
    star_raters_per_item: int = 3,
    n_pairs_per_question: int = 130,
    pair_raters_per_item: int = 3,
    n_onsite: int = 30,
    n_crowd: int = 300,
    n_public: int = 3000,
    repeat_rate: float = 0.02,
    hint_randomised: bool = True,
    star_judge: bool = True,
    pair_judge: bool = True,
    seed: int = 0,
) -> SyntheticStudy:
    """Generate a study; model ``model-00`` is the strongest, strengths fall linearly."""
    rng = np.random.default_rng(seed)
    strengths = np.linspace(1.0, -1.0, n_models) if n_models > 1 else np.zeros(1)
    n_raters = {"onsite": n_onsite, "crowd": n_crowd, "public": n_public}
    w = _world(rng, strengths, n_questions, n_task_types, n_raters, repeat_rate, hint_randomised)
    star_df = _star_frame(w, star_raters_per_item, star_judge)
    n_sr = int(star_df["rating_id"].nunique())
    pair_df = _pair_frame(w, n_sr + 1, n_pairs_per_question, pair_raters_per_item, pair_judge)
    n_pr = len(pair_df)
    meta = {"n_star_ratings": n_sr, "n_pair_ratings": n_pr, "n_ratings": n_sr + n_pr}
    return SyntheticStudy(star_df, pair_df, list(w.models), strengths, meta)
