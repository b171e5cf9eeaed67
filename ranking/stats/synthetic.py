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
    meta: dict = field(default_factory=dict)


def _raters(
    prefix: str, n: int, rng: np.random.Generator, skew: float
) -> tuple[np.ndarray, np.ndarray]:
    """Rater ids and sampling weights; ``skew`` > 0 makes a few raters do most of the work."""
    ids = np.array([f"{prefix}-{i:04d}" for i in range(n)])
    w = rng.pareto(skew, n) + 1.0 if skew > 0 else np.ones(n)
    return ids, w / w.sum()


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
    models = [f"model-{i:02d}" for i in range(n_models)]
    strengths = np.linspace(1.0, -1.0, n_models) if n_models > 1 else np.zeros(1)
    q_ids = np.array([f"q{q:04d}" for q in range(n_questions)])
    q_type = np.array([f"type-{q % max(n_task_types, 1)}" for q in range(n_questions)])
    q_diff = rng.normal(0, 0.4, n_questions)
    # Answer lengths: stronger models write a little longer, with wide spread.
    length = np.rint(rng.lognormal(6.0 + 0.15 * strengths[:, None], 0.6, (n_models, n_questions)))
    length = length.astype(np.int64)
    quality = strengths[:, None] - q_diff[None, :] + rng.normal(0, 0.3, (n_models, n_questions))
    t0 = np.datetime64("2024-01-01T00:00:00", "s")

    onsite_ids, onsite_w = _raters("onsite", n_onsite, rng, 0.0)
    crowd_ids, crowd_w = _raters("crowd", n_crowd, rng, 2.0)
    public_ids, public_w = _raters("public", n_public, rng, 1.2)

    # ---------------------------------------------------------------- star
    resp_m, resp_q = np.divmod(np.arange(n_models * n_questions), n_questions)
    item_star = resp_m * n_questions + resp_q + 1
    n_resp = len(item_star)
    h_item = np.repeat(np.arange(n_resp), star_raters_per_item)
    h_rater = rng.choice(onsite_ids, size=len(h_item), p=onsite_w)
    h_pool = np.full(len(h_item), "onsite")
    if star_judge:
        j_item = np.arange(n_resp)
        s_item = np.concatenate([h_item, j_item])
        s_rater = np.concatenate([h_rater, np.full(n_resp, "judge-star")])
        s_pool = np.concatenate([h_pool, np.full(n_resp, "judge")])
    else:
        s_item, s_rater, s_pool = h_item, h_rater, h_pool
    s_repeat = np.zeros(len(s_item), bool)
    rep = rng.random(len(s_item)) < repeat_rate
    s_item = np.concatenate([s_item, s_item[rep]])
    s_rater = np.concatenate([s_rater, s_rater[rep]])
    s_pool = np.concatenate([s_pool, s_pool[rep]])
    s_repeat = np.concatenate([s_repeat, np.ones(rep.sum(), bool)])
    n_sr = len(s_item)
    s_hint = rng.random(n_sr) < 0.5 if hint_randomised else np.ones(n_sr, bool)
    s_time = rng.integers(0, 30 * 86400, n_sr)
    # Repeats come later than the first exposure.
    s_time[s_repeat] += 30 * 86400
    noise_sd = np.vectorize(_POOL_NOISE.get)(s_pool)
    lat = quality.ravel()[s_item][:, None] * _CRIT_WEIGHT[None, :] + _CRIT_OFFSET[None, :]
    # Without a hint annotators miss some errors and score higher (the paper's finding 8).
    lat = lat + np.where(s_hint, 0.0, 0.15)[:, None]
    lat = lat + rng.normal(0, 1, (n_sr, len(CRITERIA))) * noise_sd[:, None]
    stars = np.clip(np.rint(2.0 + lat), 1, 3)
    n_crit = len(CRITERIA)
    star_df = pd.DataFrame(
        {
            "rating_id": np.repeat(np.arange(1, n_sr + 1), n_crit),
            "rater_id": np.repeat(s_rater, n_crit),
            "rater_kind": np.repeat(np.where(s_pool == "judge", "judge", "human"), n_crit),
            "pool": np.repeat(s_pool, n_crit),
            "item_id": np.repeat(item_star[s_item], n_crit),
            "question_id": np.repeat(q_ids[resp_q[s_item]], n_crit),
            "task_type": np.repeat(q_type[resp_q[s_item]], n_crit),
            "model": np.repeat(np.array(models)[resp_m[s_item]], n_crit),
            "criterion": np.tile(np.array(CRITERIA), n_sr),
            "score": stars.ravel().astype(float),
            "is_repeat": np.repeat(s_repeat, n_crit),
            "submitted_at": np.repeat((t0 + s_time).astype("datetime64[ns]"), n_crit),
            "hint_shown": pd.array(np.repeat(s_hint, n_crit), dtype="boolean"),
            "duration_s": np.repeat(rng.lognormal(3.5, 0.5, n_sr), n_crit),
            "length": np.repeat(length.ravel()[s_item], n_crit),
        }
    )
    star_df["submitted_at"] = star_df["submitted_at"].dt.tz_localize("UTC")

    # ---------------------------------------------------------------- pairwise
    n_pairs_per_question = min(n_pairs_per_question, n_models * (n_models - 1) // 2)
    iu, ju = np.triu_indices(n_models, 1)
    if n_pairs_per_question and len(iu):
        keys = rng.random((n_questions, len(iu)))
        pick = np.argsort(keys, axis=1)[:, :n_pairs_per_question]
        p_q = np.repeat(np.arange(n_questions), n_pairs_per_question)
        p_i = iu[pick.ravel()]
        p_j = ju[pick.ravel()]
        # Canonical A is a random one of the two.
        flip = rng.random(len(p_i)) < 0.5
        p_a = np.where(flip, p_j, p_i)
        p_b = np.where(flip, p_i, p_j)
    else:
        p_q = p_a = p_b = np.zeros(0, np.int64)
    n_pitems = len(p_q)
    item_pair = 10_000_000 + np.arange(n_pitems)
    r_item = np.repeat(np.arange(n_pitems), pair_raters_per_item)
    # Humans: a third of the work by the crowd, the rest by the public.
    is_crowd = rng.random(len(r_item)) < 0.35
    r_rater = np.where(
        is_crowd,
        rng.choice(crowd_ids, size=len(r_item), p=crowd_w),
        rng.choice(public_ids, size=len(r_item), p=public_w),
    )
    r_pool = np.where(is_crowd, "crowd", "public")
    if pair_judge:
        r_item = np.concatenate([r_item, np.arange(n_pitems)])
        r_rater = np.concatenate([r_rater, np.full(n_pitems, "judge-pair")])
        r_pool = np.concatenate([r_pool, np.full(n_pitems, "judge")])
    r_repeat = np.zeros(len(r_item), bool)
    rep = rng.random(len(r_item)) < repeat_rate
    r_item = np.concatenate([r_item, r_item[rep]])
    r_rater = np.concatenate([r_rater, r_rater[rep]])
    r_pool = np.concatenate([r_pool, r_pool[rep]])
    left_is_a = rng.random(len(r_item) - rep.sum()) < 0.5
    # A repeat shows the sides swapped relative to the first exposure.
    left_is_a = np.concatenate([left_is_a, ~left_is_a[rep]])
    r_repeat = np.concatenate([r_repeat, np.ones(rep.sum(), bool)])
    n_pr = len(r_item)
    r_time = rng.integers(0, 30 * 86400, n_pr)
    r_time[r_repeat] += 30 * 86400
    qa = quality[p_a[r_item], p_q[r_item]]
    qb = quality[p_b[r_item], p_q[r_item]]
    la = length[p_a[r_item], p_q[r_item]]
    lb = length[p_b[r_item], p_q[r_item]]
    is_judge = r_pool == "judge"
    u = qa - qb + rng.normal(0, 1, n_pr) * np.vectorize(_POOL_NOISE.get)(r_pool)
    # The judge likes long answers and the left side a little.
    u = u + np.where(is_judge, 0.25 * np.tanh((la - lb) / 400.0), 0.0)
    u = u + np.where(is_judge, np.where(left_is_a, 0.15, -0.15), 0.0)
    both_low = (np.maximum(qa, qb) < -0.6) & (rng.random(n_pr) < 0.5)
    choice = np.where(np.abs(u) < 0.25, "tie", np.where(u > 0, "A", "B"))
    choice = np.where(both_low & (choice == "tie"), "both_bad", choice)
    r_hint = rng.random(n_pr) < 0.5 if hint_randomised else np.ones(n_pr, bool)
    pair_df = pd.DataFrame(
        {
            "rating_id": np.arange(n_sr + 1, n_sr + n_pr + 1),
            "rater_id": r_rater,
            "rater_kind": np.where(is_judge, "judge", "human"),
            "pool": r_pool,
            "item_id": item_pair[r_item],
            "question_id": q_ids[p_q[r_item]],
            "task_type": q_type[p_q[r_item]],
            "model_a": np.array(models)[p_a[r_item]],
            "model_b": np.array(models)[p_b[r_item]],
            "len_a": la,
            "len_b": lb,
            "choice": choice,
            "left_is_a": left_is_a,
            "is_repeat": r_repeat,
            "submitted_at": (t0 + r_time).astype("datetime64[ns]"),
            "hint_shown": pd.array(r_hint, dtype="boolean"),
            "duration_s": rng.lognormal(3.8, 0.6, n_pr),
        }
    )
    pair_df["submitted_at"] = pair_df["submitted_at"].dt.tz_localize("UTC")
    meta = {"n_star_ratings": int(n_sr), "n_pair_ratings": int(n_pr), "n_ratings": int(n_sr + n_pr)}
    return SyntheticStudy(star_df, pair_df, models, strengths, meta)
