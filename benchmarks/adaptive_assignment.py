"""How many human ratings adaptive assignment saves (issue 15 item 2), by simulation.

    .venv/bin/python benchmarks/adaptive_assignment.py [--seeds 100] [--models 8] [--questions 20]

A pairwise study: every pair of `--models` models on `--questions` questions, N = 3 ratings per
item. The true log-strengths are evenly spaced from +0.9 to -0.9 (neighbours 0.26 apart: the
better of two neighbours wins 56% of the games that are not ties); a rating is a tie with
probability 0.1, else A wins with the Bradley-Terry probability 1 / (1 + exp(theta_B - theta_A)).
Ratings arrive one at a time and each goes where the engine would send it:

- uniform: the lowest load level first, a random item within it (annotation/engine_pick.py);
- adaptive: the highest priority first, then the lowest load, then shuffle order, with the
  priorities recomputed every REFRESH_EVERY ratings by the engine's own functions
  (annotation/engine_priority.py: bootstrapped Bradley-Terry order uncertainty of each pair).

Rank confidence: after every CHECK_EVERY ratings, the Bradley-Terry point estimate's top 3 is
compared with the true top 3. Over the seeds (independent studies) this gives the probability of
correct selection at each number of ratings; a mode "reaches 95% confidence" at the first count
from which that probability stays at or above 0.95. The benchmark prints both counts and the
saving, with the probability curve at a few points. Pure numpy: about a minute of CPU.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from annotation import engine_priority  # noqa: E402
from ranking.stats import bradley_terry  # noqa: E402

N_PER_ITEM = 3
TOP = 3
CHECK_EVERY = 25
CONFIDENCE = 0.95
TIE = 0.1


@dataclass
class Study:
    item_a: np.ndarray
    item_b: np.ndarray
    shuffle: np.ndarray
    load: np.ndarray
    priority: np.ndarray


def make_study(n_models: int, n_questions: int, rng: np.random.Generator) -> Study:
    pairs = list(combinations(range(n_models), 2)) * n_questions
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    n = len(pairs)
    return Study(a, b, rng.permutation(n), np.zeros(n, dtype=np.int64), np.zeros(n))


def pick_uniform(study: Study, rng: np.random.Generator) -> int | None:
    for level in range(N_PER_ITEM):
        at_level = np.flatnonzero(study.load == level)
        if len(at_level):
            return int(rng.choice(at_level))
    return None


def pick_adaptive(study: Study) -> int | None:
    open_ = np.flatnonzero(study.load < N_PER_ITEM)
    if not len(open_):
        return None
    order = np.lexsort((study.shuffle[open_], study.load[open_], -study.priority[open_]))
    return int(open_[order[0]])


def top_set(a: list[int], b: list[int], s: list[float], n_models: int) -> frozenset[int]:
    w, n = bradley_terry.aggregate(np.array(a), np.array(b), np.array(s), n_models)
    point = np.nan_to_num(bradley_terry.fit(w, n), nan=-np.inf)
    return frozenset(np.argsort(-point)[:TOP].tolist())


def run(mode: str, theta: np.ndarray, n_questions: int, seed: int) -> list[bool]:
    """Whether the estimated top 3 is the true one, after every CHECK_EVERY ratings."""
    rng = np.random.default_rng(seed)
    n_models = len(theta)
    study = make_study(n_models, n_questions, rng)
    truth = frozenset(np.argsort(-theta)[:TOP].tolist())
    a: list[int] = []
    b: list[int] = []
    s: list[float] = []
    correct: list[bool] = []
    while True:
        if mode == "adaptive" and len(a) % engine_priority.REFRESH_EVERY == 0:
            u = engine_priority.pair_uncertainty(
                np.array(a, dtype=np.int64), np.array(b, dtype=np.int64), np.array(s),
                n_models, rng=rng,
            )  # fmt: skip
            study.priority = engine_priority.pairwise_item_priorities(study.item_a, study.item_b, u)
        item = pick_adaptive(study) if mode == "adaptive" else pick_uniform(study, rng)
        if item is None:
            return correct
        study.load[item] += 1
        ia, ib = int(study.item_a[item]), int(study.item_b[item])
        p_a = 1.0 / (1.0 + np.exp(theta[ib] - theta[ia]))
        s.append(0.5 if rng.random() < TIE else float(rng.random() < p_a))
        a.append(ia)
        b.append(ib)
        if len(a) % CHECK_EVERY == 0:
            correct.append(top_set(a, b, s, n_models) == truth)


def needed(curve: np.ndarray) -> int | None:
    """Ratings from which the probability of correct selection stays >= CONFIDENCE."""
    below = np.flatnonzero(curve < CONFIDENCE)
    first = 0 if not len(below) else below[-1] + 1
    return None if first >= len(curve) else int((first + 1) * CHECK_EVERY)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--questions", type=int, default=20)
    args = parser.parse_args()
    theta = np.linspace(0.9, -0.9, args.models)
    budget = args.models * (args.models - 1) // 2 * args.questions * N_PER_ITEM
    print(f"{args.models} models, {args.questions} questions, N={N_PER_ITEM}: budget {budget}")
    curves = {}
    for mode in ("uniform", "adaptive"):
        runs = [run(mode, theta, args.questions, seed) for seed in range(args.seeds)]
        curves[mode] = np.mean(np.array(runs, dtype=float), axis=0)
    print("ratings  P(correct top 3): uniform  adaptive")
    for k in range(3, len(curves["uniform"]), max(1, len(curves["uniform"]) // 12)):
        print(
            f"{(k + 1) * CHECK_EVERY:>7}  {curves['uniform'][k]:>24.2f}  {curves['adaptive'][k]:>8.2f}"
        )
    uni, ada = needed(curves["uniform"]), needed(curves["adaptive"])
    print(
        f"ratings to a top {TOP} right in >= {CONFIDENCE:.0%} of {args.seeds} studies: "
        f"uniform {uni or 'not within the budget'}, adaptive {ada or 'not within the budget'}"
    )
    if uni and ada:
        print(f"adaptive needs {100 * (1 - ada / uni):.0f}% fewer human ratings")


if __name__ == "__main__":
    main()
