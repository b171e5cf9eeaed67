"""Speed of the statistics (DESIGN.md "Targets"); prints each figure next to its target.

    .venv/bin/python benchmarks/stats_speed.py [--skip-numpy]

1. Full report for a synthetic LLMEval-sized study: 300k ratings, 20 models, 500 questions,
   onsite / crowd / public / judge raters, star and pairwise. Target < 5 s.
2. Elo over 100 shuffles of 100k matches. Target < 2 s.
3. Bradley-Terry with 100 bootstrap rounds on 1M matches. Target < 1 s.

Each figure is the best of a few runs after one warm-up run (the warm-up loads or compiles the
numba kernels; its time is printed too).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from ranking.stats import bradley_terry as bt  # noqa: E402
from ranking.stats import build_report, elo, synthetic  # noqa: E402


def _timed(fn, repeats: int = 3) -> tuple[float, float]:
    """(first run, best of the following runs) in seconds."""
    t = time.perf_counter()
    fn()
    first = time.perf_counter() - t
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return first, best


def _line(name: str, seconds: float, target: float, first: float | None = None) -> None:
    ok = "OK  " if seconds < target else "SLOW"
    extra = f"  (first run {first:.2f} s)" if first is not None else ""
    print(f"[{ok}] {name:<58} {seconds:6.2f} s   target < {target:g} s{extra}")


def _matches(
    n: int, n_models: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bradley-Terry matches between random pairs, with 15 % draws."""
    strength = np.linspace(1.5, -1.5, n_models)
    a = rng.integers(0, n_models, n)
    b = (a + rng.integers(1, n_models, n)) % n_models
    p = 1.0 / (1.0 + np.exp(strength[b] - strength[a]))
    u = rng.random(n)
    s = np.where(u < 0.15, 0.5, (rng.random(n) < p).astype(float))
    return a, b, s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--skip-numpy", action="store_true", help="skip the numpy Elo fallback figure"
    )
    args = parser.parse_args()
    print(f"numba available: {elo.HAVE_NUMBA}")

    t = time.perf_counter()
    study = synthetic.generate(n_models=20, n_questions=500, seed=0)
    gen = time.perf_counter() - t
    m = study.meta
    print(
        f"synthetic study: {m['n_ratings']:,} ratings ({m['n_star_ratings']:,} star x 5 criteria, "
        f"{m['n_pair_ratings']:,} pairwise), generated in {gen:.2f} s"
    )
    first, best = _timed(
        lambda: build_report(study.star_df, study.pair_df, n_shuffles=100, n_bootstrap=100), 2
    )
    _line("full report, 300k ratings (100 Elo shuffles, 100 BT rounds)", best, 5.0, first)

    rng = np.random.default_rng(0)
    a, b, s = _matches(100_000, 20, rng)
    first, best = _timed(
        lambda: elo.elo_shuffles(a, b, s, 20, n_shuffles=100, rng=np.random.default_rng(1))
    )
    _line("Elo, 100 shuffles x 100k matches", best, 2.0, first)
    if not args.skip_numpy:
        t = time.perf_counter()
        elo.elo_shuffles(a, b, s, 20, n_shuffles=100, rng=np.random.default_rng(1), use_numba=False)
        print(f"       (numpy fallback without numba, same work: {time.perf_counter() - t:.2f} s)")

    a, b, s = _matches(1_000_000, 20, rng)
    models = [f"m{i}" for i in range(20)]
    first, best = _timed(
        lambda: bt.table(a, b, s, models, n_rounds=100, rng=np.random.default_rng(2))
    )
    _line("Bradley-Terry, 100 bootstrap rounds on 1M matches", best, 1.0, first)


if __name__ == "__main__":
    main()
