"""Speed of the statistics (DESIGN.md "Targets"); prints each figure next to its target.

    .venv/bin/python benchmarks/stats_speed.py [--sizes 300k,1m] [--skip-numpy] [--skip-parts]

1. The full report, every interval included (1,000 bootstrap resamples, 100 Elo shuffles), for
   synthetic LLMEval-like studies of 300k and 1M ratings (20 models; onsite / crowd / public /
   judge raters; star and pairwise; label columns as categoricals, as ``selectors.study_frames``
   reads them from the database), through ``ranking.services.snapshot``, the function the
   report page, the API and the exports go through: the first request (nothing cached: the
   statistics run and the snapshot is stored) and a warm one (the snapshot is read back from the
   configured cache). Target: first request for 1M ratings < 5 s. The first request runs with the
   report's worker threads (``ranking.stats.report.REPORT_THREADS``); ``--sequential`` also times
   it with everything in one thread (same figures). The seconds per report section are printed
   too (``meta["timings"]``, wall, and ``meta["cpu_timings"]``, CPU seconds of the thread that
   ran the section; the compiled kernels that ``ranking.stats.parallel`` spreads over its own
   threads, the Elo shuffles and the per-pair kappa bootstrap, count only in the process's
   total), and the process's CPU seconds next to the wall time, with the
   machine's load and CPU steal over the run (on a busy shared machine the wall time includes
   waiting for a core). A large study's page after new ratings is served the last snapshot while
   a background job refreshes it (docs/decisions/report-speed.md): that request costs what the
   warm one does. Reading the ratings from the database is timed with ``--study ID`` (an existing
   study of the configured database: ``selectors.study_frames``, then the report through
   ``report_build`` without the cache, the path the background refresh takes).
2. Elo over 100 shuffles of 100k matches. Target < 2 s.
3. Bradley-Terry with 100 bootstrap rounds on 1M matches. Target < 1 s.

Figures 2-3 are the best of a few runs after one warm-up run (the warm-up loads or compiles the
numba kernels; its time is printed too). Before figure 1 a small report runs once so that the
numba kernels are loaded, as they are in a server that has served one report.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import os  # noqa: E402

import numpy as np  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django  # noqa: E402

django.setup()

from ranking.services import snapshot  # noqa: E402
from ranking.stats import bradley_terry as bt  # noqa: E402
from ranking.stats import build_report, elo, synthetic  # noqa: E402
from ranking.stats import report as report_mod  # noqa: E402

# Questions of the synthetic generator for each size (about 612 ratings per question).
SIZES = {"30k": 50, "300k": 500, "1m": 1650}
THREADS = report_mod.REPORT_THREADS


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


def _as_read(df):
    """The frame as ``selectors.study_frames`` hands it to the report: its label columns (rater,
    kind, pool, question, task type, model, criterion, choice) are categoricals read from the
    database, not a Python string per row (the generator's plain text columns)."""
    df = df.copy()
    for col in df.columns:
        if df[col].dtype == object or str(df[col].dtype) in ("str", "string"):
            df[col] = df[col].astype("category")
    return df


def _full_report(label: str, n_questions: int, sequential: bool = False) -> None:
    t = time.perf_counter()
    study = synthetic.generate(n_models=20, n_questions=n_questions, seed=0)
    m = study.meta
    print(
        f"\n{label}: {m['n_ratings']:,} ratings ({m['n_star_ratings']:,} star x 5 criteria, "
        f"{m['n_pair_ratings']:,} pairwise), generated in {time.perf_counter() - t:.2f} s"
    )
    star, pair = _as_read(study.star_df), _as_read(study.pair_df)
    key = f"benchmark:stats_speed:{label}:{time.time_ns()}"
    compute = lambda: build_report(star, pair)  # noqa: E731
    if sequential:
        report_mod.REPORT_THREADS = 0
        _first_request(f"full report, {label}, first request, one thread", compute)
        report_mod.REPORT_THREADS = THREADS
    tables = _first_request(f"full report, {label}, first request (computed, stored)", compute, key)
    timings, cpu = tables["meta"]["timings"], tables["meta"].get("cpu_timings", {})
    print("       sections, wall s: " + ", ".join(f"{k} {v:.2f}" for k, v in timings.items()))
    print("       sections, CPU s:  " + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items()))
    t = time.perf_counter()
    tables, cached = snapshot(key, compute)
    warm = time.perf_counter() - t
    assert cached
    _line(f"full report, {label}, warm request (snapshot)", warm, 5.0)
    _line(f"full report, {label}, page after new ratings (last snapshot)", warm, 5.0)


def _cpu_counters() -> tuple[float, float]:
    """(all CPU jiffies, steal jiffies) of the machine, from /proc/stat (zeros elsewhere)."""
    try:
        fields = [float(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except OSError:
        return 0.0, 0.0
    return sum(fields), fields[7] if len(fields) > 7 else 0.0


def _first_request(name: str, compute, key: str | None = None) -> dict:
    """Time one uncached report; print wall and CPU seconds, the load and the CPU steal."""
    load, (total0, steal0) = os.getloadavg()[0], _cpu_counters()
    t, cpu = time.perf_counter(), time.process_time()
    tables, cached = snapshot(key, compute)
    first, cpu = time.perf_counter() - t, time.process_time() - cpu
    assert not cached
    total1, steal1 = _cpu_counters()
    steal = 100.0 * (steal1 - steal0) / (total1 - total0) if total1 > total0 else 0.0
    _line(name, first, 5.0)
    # CPU seconds of this process: on a shared machine, wall time also counts the waits for a
    # core that other processes hold.
    print(
        f"       CPU time {cpu:.2f} s; load {load:.1f} -> {os.getloadavg()[0]:.1f}; "
        f"CPU steal {steal:.1f} %"
    )
    return tables


def _database_study(study_id: int) -> None:
    """The ratings of a stored study read from the database, then its report uncached."""
    from annotation.models import Study
    from ranking import selectors
    from ranking.services import report_build

    study = Study.objects.get(pk=study_id)
    t, cpu = time.perf_counter(), time.process_time()
    frames = selectors.study_frames(study)
    n = frames.star_df["rating_id"].nunique() + len(frames.pair_df)
    read = time.perf_counter() - t
    print(
        f"\nstudy {study_id}: {n:,} ratings read by study_frames in {read:.2f} s "
        f"(CPU {time.process_time() - cpu:.2f} s)"
    )
    t = time.perf_counter()
    report_build(study=study, use_cache=False)
    _line(
        f"study {study_id}: read + full report (background refresh path)",
        time.perf_counter() - t,
        5.0,
    )


# The on/off options of the command line.
SWITCHES = (
    ("--skip-numpy", "skip the numpy Elo fallback figure"),
    ("--skip-parts", "only the full reports (skip Elo and BT alone)"),
    (
        "--sequential",
        "also time the first request with the report in one thread (REPORT_THREADS = 0)",
    ),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default="300k,1m",
        help="full-report sizes to run: 30k (a smoke run), 300k, 1m (comma-separated)",
    )
    parser.add_argument(
        "--study", type=int, help="also read this stored study from the database and report it"
    )
    for flag, text in SWITCHES:
        parser.add_argument(flag, action="store_true", help=text)
    args = parser.parse_args()
    print(f"numba available: {elo.HAVE_NUMBA}; cores: {os.cpu_count()}; load: {os.getloadavg()}")

    small = synthetic.generate(n_models=6, n_questions=20, seed=1)
    build_report(small.star_df, small.pair_df, n_bootstrap=20, n_shuffles=2)
    for label in [s.strip().lower() for s in args.sizes.split(",") if s.strip()]:
        if label not in SIZES:
            parser.error(f"unknown size {label!r}: use {', '.join(SIZES)}")
        _full_report(label, SIZES[label], sequential=args.sequential)
    if args.study:
        _database_study(args.study)
    if args.skip_parts:
        return

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
