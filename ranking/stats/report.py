"""The full statistics report of a study, as tables.

``build_report(star_df, pair_df, **options)`` returns a dict; every value is a pandas DataFrame
(possibly empty, with its columns) except ``meta`` and ``elo_variance`` which are plain dicts.
Keys and one row of each table:

==========================  =====================================================================
key                         one row is ...
==========================  =====================================================================
meta                        dict: options used, counts, excluded raters, numba in use, notes
leaderboard_star            (rater_kind, model, criterion incl. "overall"): mean, n, rank, ci_low/high (cut to the rubric's scale)
leaderboard_total           (rater_kind, model): LLMEval-2 total score (0-100), n_subjects, rank
leaderboard_points          (rater_kind, model): games, wins, draws, losses, points, score, rank
leaderboard_elo             (rater_kind, model): games, elo (time order), rank
leaderboard_bt              (rater_kind, model): games, strength, rating, ci_low/high, rank CI, rank
correlations                (ranking_a, ranking_b): n_models, spearman_rho/p, kendall_tau_b/p
accuracy_by_rater           (rater_id, mode): kind, pool, n_ratings, n_judgements, n_accurate,
                            accuracy, excluded (below the report's thresholds)
accuracy_by_pool            (mode, pool): n_raters, mean/median/min/q1/q3/max of rater accuracy,
                            pooled accuracy, n_judgements
accuracy_by_criterion       (mode, pool, criterion): n_judgements, accuracy
consistency_by_rater        (rater_id, mode): kind, pool, n_ratings, n_items_repeated, n_repeated,
                            n_consistent, consistency, excluded
consistency_by_pool         (mode, pool): as accuracy_by_pool, over consistency
consistency_by_criterion    (mode, pool, criterion): n_repeated, consistency
length_bias                 (group_by in {rater_kind, pool}, group, min_delta): n, win/draw/loss
                            counts and shares of the longer answer
gaps                        (criterion, k): n_items, n_at_least_k, share of |human - judge| >= k
discrimination              (mode, rater_kind, dimension in {criterion, task_type}, value): best and
                            worst model and score, spread
hint_effect                 (mode, metric in {score, accuracy}, criterion): n, means with and
                            without hint, diff, rel_diff, Welch t / p, Mann-Whitney p
elo_stability               (rater_kind, model): elo in time order and its rank; over shuffles
                            mean/sd/min/max rating and mean/sd/min/max rank; Points score and rank
elo_variance                dict per rater kind: n_matches, n_shuffles, p, analytic variance
                            (linear fit and Taylor), observed variance over shuffles
elo_trajectory              (rater_kind, round, model): rating and rank over the last rounds
elo_shuffles                (rater_kind, shuffle, model): final rating and rank of each shuffle
krippendorff                (mode, pool incl. "all", criterion): level, alpha, n_units, n_values
kappa                       (mode, pool incl. "all", criterion): fleiss_kappa, n_units,
                            mean_cohen_kappa, n_rater_pairs
position_bias               (group_by in {rater_kind, pool, rater_id}, group): left/right/tie/
                            both-bad shares, left share of decisive, binomial p, position
                            consistency on items judged in both orders
annotator_diagnostics       (rater_id): counts, left bias, tie / both-bad overuse, median seconds,
                            mean stars, accuracy and consistency per mode
judge_* and the rest        the judge-vs-human section: see ``ranking.stats.judge_report``
ppi, ppi_curve              judge-assisted (PPI++) estimates: see ``ranking.stats.ppi_section``
==========================  =====================================================================

``report_to_jsonable`` turns the dict into JSON-ready dicts and lists (tables become lists of
records; NaN, NA and infinities become None; timestamps ISO 8601 strings).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import elo as elo_mod
from . import memory, parallel, rank_tests
from .agreement import (
    accuracy_by_criterion,
    accuracy_by_rater,
    accuracy_flags,
    agreement_tables,
    consistency_by_criterion,
    consistency_by_rater,
    consistency_units,
    judgements,
    summarise_by_pool,
)
from .bias import (
    annotator_diagnostics,
    gaps,
    hint_effect,
    length_bias,
    position_bias,
)
from .discrimination import discrimination
from .filters import filter_frame, raters_below
from .jsonable import jsonable, report_to_jsonable
from .judge_report import JUDGE_KEYS, judge_section, start_judge_jobs
from .leaderboards import BT_TIES, bt_table, elo_tables, kind_matches, rankings_for_correlation
from .ppi_section import PPI_KEYS, ppi_section
from .rankings import (
    correlation_table,
    infer_criterion_max,
    labels,
    points_table,
    scale_bounds,
    star_means,
    total_score,
)
from .rater_facts import RaterFacts
from .schema import coerce_pair, coerce_star

__all__ = ["REPORT_KEYS", "ReportOptions", "build_report", "jsonable", "report_to_jsonable"]

# Groups of tables that the report's pages and exports (``ranking.services.TABLE_ORDER``) show
# in the same order as the report lists them.
LEADERBOARD_KEYS: tuple[str, ...] = (
    "leaderboard_star",
    "leaderboard_total",
    "leaderboard_points",
    "leaderboard_elo",
    "leaderboard_bt",
    "correlations",
)
BIAS_KEYS: tuple[str, ...] = ("length_bias", "gaps", "discrimination", "hint_effect")
AGREEMENT_KEYS: tuple[str, ...] = (
    "krippendorff",
    "kappa",
    "position_bias",
    "annotator_diagnostics",
)

REPORT_KEYS: tuple[str, ...] = (
    "meta",
    *LEADERBOARD_KEYS,
    "accuracy_by_rater",
    "accuracy_by_pool",
    "accuracy_by_criterion",
    "consistency_by_rater",
    "consistency_by_pool",
    "consistency_by_criterion",
    *BIAS_KEYS,
    "elo_stability",
    "elo_variance",
    "elo_trajectory",
    "elo_shuffles",
    *AGREEMENT_KEYS,
    *JUDGE_KEYS,
    *PPI_KEYS,
)


@dataclass(frozen=True)
class ReportOptions:
    """Every option of ``build_report`` (see its docstring); unknown names are a TypeError."""

    min_ratings: int = 5
    pools: Iterable[str] | None = None
    rater_kinds: Iterable[str] | None = None
    criteria: Iterable[str] | None = None
    task_types: Iterable[str] | None = None
    start: object = None
    end: object = None
    min_accuracy: float | None = None
    min_consistency: float | None = None
    criterion_max: Mapping[str, float] | None = None
    criterion_min: Mapping[str, float] | None = None
    both_bad: str = "draw"
    bt_ties: str = "half"
    include_repeats: bool = True
    ddof: int = 0
    gap_ks: Sequence[float] | None = None
    length_thresholds: Sequence[int] = (100, 300)
    n_shuffles: int = 100
    n_bootstrap: int = 1000
    trajectory_rounds: int = 100
    seed: int = 0
    judge_runs: pd.DataFrame | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.bt_ties not in BT_TIES:
            raise ValueError(f"bt_ties must be one of {BT_TIES}")

    def meta(self) -> dict[str, Any]:
        d = {
            k: v
            for k, v in asdict(self).items()
            if k not in ("criterion_max", "criterion_min", "judge_runs")
        }
        for key in ("pools", "rater_kinds", "criteria", "task_types", "length_thresholds"):
            d[key] = list(d[key]) if d[key] is not None else None
        d["start"] = None if self.start is None else str(self.start)
        d["end"] = None if self.end is None else str(self.end)
        d.pop("gap_ks")
        return d


# Worker threads of one report for the leaderboards, the PPI++ section, the per-pair kappa
# bootstrap and the judge section's tables that need no other table (queued in that order; the
# compiled kernels run on ``parallel``'s own threads). 0 runs everything in the calling thread,
# in the same order; the figures are the same either way, as each table draws from its own seeded
# stream. Two, not four: on two cores the first 1M-rating report took 4.66 / 4.71 s at 8.5 CPU s
# with two workers and 4.67 / 4.80 s at 8.9-9.2 CPU s with four (docs/decisions/report-speed.md).
REPORT_THREADS = 2


class _Inline(Executor):
    """An executor that runs each job at once in the calling thread (REPORT_THREADS = 0)."""

    def submit[**P, T](self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the caller by result(), as a thread would
            future.set_exception(exc)
        return future


def _pool() -> Executor:
    if REPORT_THREADS <= 0:
        return _Inline()
    return ThreadPoolExecutor(max_workers=REPORT_THREADS, thread_name_prefix="report")


class Laps:
    """Seconds spent per section, for ``meta["timings"]`` (wall) and ``meta["cpu_timings"]``
    (CPU seconds of the thread that ran it: unlike the wall time, not inflated by a busy
    machine), shown by the speed benchmark."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._last = time.perf_counter()
        self._last_cpu = time.thread_time()

    def lap(self, name: str) -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        self.seconds[name] = round(now - self._last, 3)
        self.cpu[name] = round(cpu - self._last_cpu, 3)
        self._last, self._last_cpu = now, cpu

    def add(self, name: str, seconds: tuple[float, float]) -> None:
        """A section run on a worker thread: (wall, CPU) seconds from ``parallel.timed``."""
        self.seconds[name], self.cpu[name] = seconds


def _filtered(
    star_df: pd.DataFrame, pair_df: pd.DataFrame, o: ReportOptions
) -> tuple[pd.DataFrame, pd.DataFrame]:
    filt: dict[str, Any] = {
        "pools": o.pools,
        "rater_kinds": o.rater_kinds,
        "task_types": o.task_types,
        "start": o.start,
        "end": o.end,
    }
    star = filter_frame(coerce_star(star_df), criteria=o.criteria, **filt)
    return star, filter_frame(coerce_pair(pair_df), **filt)


def _quality_section(
    j: pd.DataFrame, flags: pd.DataFrame, o: ReportOptions
) -> tuple[dict[str, Any], set[str]]:
    """Accuracy and consistency, measured before the thresholds leave raters out."""
    facts = RaterFacts.of(j)  # read by both per-rater tables
    acc = accuracy_by_rater(flags, j, min_ratings=o.min_ratings, facts=facts)
    units = consistency_units(j)
    cons = consistency_by_rater(units, j, min_ratings=o.min_ratings, facts=facts)
    excluded = raters_below(
        acc, cons, min_accuracy=o.min_accuracy, min_consistency=o.min_consistency
    )
    acc["excluded"] = acc["rater_id"].isin(excluded)
    cons["excluded"] = cons["rater_id"].isin(excluded)
    tables = {
        "accuracy_by_rater": acc,
        "accuracy_by_pool": summarise_by_pool(acc, "accuracy", "n_accurate", "n_judgements"),
        "accuracy_by_criterion": accuracy_by_criterion(flags, acc),
        "consistency_by_rater": cons,
        "consistency_by_pool": summarise_by_pool(cons, "consistency", "n_consistent", "n_repeated"),
        "consistency_by_criterion": consistency_by_criterion(units, cons, j),
    }
    return tables, excluded


def _leaderboard_section(
    star: pd.DataFrame,
    pair: pd.DataFrame,
    flags: pd.DataFrame,
    o: ReportOptions,
    crit_max: Mapping[str, float],
    rng: np.random.Generator,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "leaderboard_star": star_means(
            star,
            include_repeats=o.include_repeats,
            bounds=scale_bounds(o.criterion_min, o.criterion_max),
        ),
        "leaderboard_total": total_score(star, crit_max, include_repeats=o.include_repeats),
        "leaderboard_points": points_table(
            pair, both_bad=o.both_bad, include_repeats=o.include_repeats
        ),
    }
    pair_r = pair if o.include_repeats else pair[~pair["is_repeat"]]
    kinds = kind_matches(pair_r, both_bad=o.both_bad)  # read once by Elo and Bradley-Terry
    out.update(
        elo_tables(
            pair_r,
            flags,
            both_bad=o.both_bad,
            n_shuffles=o.n_shuffles,
            trajectory_rounds=o.trajectory_rounds,
            rng=rng,
            kinds=kinds,
        )
    )
    out["leaderboard_bt"] = bt_table(
        pair_r,
        both_bad=o.both_bad,
        n_bootstrap=o.n_bootstrap,
        rng=rng,
        ties=o.bt_ties,
        kinds=kinds,
    )
    out["correlations"] = correlation_table(rankings_for_correlation(out))
    return out


def _ranges(o: ReportOptions) -> dict[str, float]:
    """The rubric's range (max - min) of each criterion with both bounds."""
    lo, hi = o.criterion_min or {}, o.criterion_max or {}
    return {c: float(hi[c]) - float(lo[c]) for c in hi if c in lo}


def _bias_section(
    star: pd.DataFrame, pair: pd.DataFrame, j: pd.DataFrame, flags: pd.DataFrame, o: ReportOptions
) -> dict[str, Any]:
    pair_r = pair if o.include_repeats else pair[~pair["is_repeat"]]
    out: dict[str, Any] = {
        "length_bias": length_bias(pair_r, o.length_thresholds),
        "gaps": gaps(star, o.gap_ks, _ranges(o)),
        "discrimination": discrimination(star, pair_r),
        "hint_effect": hint_effect(star, flags),
        "position_bias": position_bias(pair),
    }
    out["krippendorff"], out["kappa"] = agreement_tables(j, min_common=o.min_ratings)
    return out


def _diagnostics(
    star: pd.DataFrame, pair: pd.DataFrame, quality: Mapping[str, Any]
) -> pd.DataFrame:
    diag = annotator_diagnostics(star, pair)
    for name in ("accuracy", "consistency"):
        table = quality[f"{name}_by_rater"]
        if len(table):
            wide = table.pivot_table(index="rater_id", columns="mode", values=name)
            wide.columns = [f"{name}_{m}" for m in wide.columns]
            diag = diag.merge(wide.reset_index(), on="rater_id", how="left")
    return diag


def _collect(report: dict[str, Any], laps: Laps, name: str, job: Future[Any]) -> None:
    """The tables of a section run on a worker thread, with its wall and CPU seconds."""
    tables, seconds = job.result()
    report.update(tables)
    laps.lap(f"{name}_wait")
    laps.add(f"{name} (worker thread)", seconds)


def _meta(
    star: pd.DataFrame,
    pair: pd.DataFrame,
    o: ReportOptions,
    excluded: set[str],
    crit_max: Mapping[str, float],
    t0: float,
) -> dict[str, Any]:
    max_source = "given" if o.criterion_max is not None else "observed maximum per criterion"
    return {
        "n_star_rows": int(len(star)),
        "n_star_ratings": int(star["rating_id"].nunique()),
        "n_pair_ratings": int(len(pair)),
        "n_raters": int(len(set(labels(star["rater_id"])).union(labels(pair["rater_id"])))),
        "models": sorted(
            set(labels(star["model"])).union(labels(pair["model_a"]), labels(pair["model_b"]))
        ),
        "excluded_raters": sorted(excluded),
        "options": o.meta(),
        "criterion_max": {k: float(v) for k, v in crit_max.items()},
        "criterion_max_source": max_source,
        # The rubric's lowest scores (given only: a star-mean interval is cut to the scale).
        "criterion_min": {k: float(v) for k, v in (o.criterion_min or {}).items()},
        "numba": elo_mod.HAVE_NUMBA,
        # Correlation p-values beyond p_value_exact_up_to models are drawn: (1 + hits) /
        # (1 + p_value_draws), never below p_value_floor (= 1/100,001 exactly; a p equal to it
        # means no drawn pairing was as extreme).
        **p_value_meta(),
        "seconds": round(time.perf_counter() - t0, 3),
    }


def p_value_meta() -> dict[str, Any]:
    return {
        "p_value_exact_up_to": rank_tests.EXACT_MAX,
        "p_value_draws": rank_tests.N_RANDOM,
        "p_value_floor": rank_tests.P_FLOOR,
    }


def _judged(
    star: pd.DataFrame, pair: pd.DataFrame, o: ReportOptions
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, float]]:
    """The judgements, their accuracy flags and the full marks per criterion of the frames."""
    j = judgements(star, pair)
    crit_max = o.criterion_max if o.criterion_max is not None else infer_criterion_max(star)
    return j, accuracy_flags(j, ddof=o.ddof), dict(crit_max)


def _without(
    frames: tuple[pd.DataFrame, pd.DataFrame], excluded: set[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The frames without the raters below the thresholds."""
    star, pair = frames
    return filter_frame(star, exclude_raters=excluded), filter_frame(pair, exclude_raters=excluded)


def build_report(
    star_df: pd.DataFrame | None = None, pair_df: pd.DataFrame | None = None, **options: Any
) -> dict[str, Any]:
    """Every table of the report for one study (see the module docstring for the layout).

    Options are the fields of ``ReportOptions``. Filters (``pools``, ``rater_kinds``,
    ``criteria``, ``task_types``, ``start``/``end``) apply first. Accuracy and consistency are
    then measured; raters below ``min_accuracy`` or ``min_consistency`` are flagged ``excluded``
    in those tables and left out of everything else (ground truth included: the remaining tables
    are recomputed without them). ``bt_ties`` is "half" (a tie is half a win) or "exclude".
    ``n_bootstrap`` resamples (default 1,000) feed every interval; ``seed`` makes them repeat.
    """
    memory.keep_freed_memory()  # once per process: reuse freed arrays (ranking/stats/memory.py)
    with parallel.sequential(REPORT_THREADS <= 0):
        return _build(star_df, pair_df, options)


def _build(
    star_df: pd.DataFrame | None, pair_df: pd.DataFrame | None, options: dict[str, Any]
) -> dict[str, Any]:
    t0 = time.perf_counter()
    laps = Laps()
    o = ReportOptions(**options)
    rng = np.random.default_rng(o.seed)
    star, pair = _filtered(star_df, pair_df, o)
    # The leaderboards (Elo shuffles, Bradley-Terry bootstrap), the judge-assisted estimates
    # (PPI++) and the per-pair kappa bootstrap are mostly compiled or numpy loops that release
    # the GIL: they run on worker threads while this thread does the pandas tables. Each uses its
    # own random stream, so the figures do not depend on when they run. Without accuracy or
    # consistency thresholds nobody is left out, so they start before the quality tables.
    early = o.min_accuracy is None and o.min_consistency is None
    bounds = scale_bounds(o.criterion_min, o.criterion_max)
    with _pool() as pool:

        def boards_job() -> Future[Any]:  # on the frames and flags as they are when called
            return pool.submit(
                parallel.timed, _leaderboard_section, star, pair, flags, o, crit_max, rng
            )

        ppi = (
            pool.submit(parallel.timed, ppi_section, star, pair, seed=o.seed, bounds=bounds)
            if early
            else None
        )
        j, flags, crit_max = _judged(star, pair, o)
        boards = boards_job() if early else None
        quality, excluded = _quality_section(j, flags, o)
        if excluded:
            star, pair = _without((star, pair), excluded)
            j, flags, crit_max = _judged(star, pair, o)
        report: dict[str, Any] = dict(quality)
        laps.lap("quality")
        boards = boards or boards_job()
        ppi = ppi or pool.submit(
            parallel.timed, ppi_section, star, pair, seed=o.seed, bounds=bounds
        )
        pair_r = pair if o.include_repeats else pair[~pair["is_repeat"]]
        # The judge section's tables that need no other table run meanwhile on a worker thread.
        jobs = start_judge_jobs(star, pair_r, j, o, pool) if REPORT_THREADS > 0 else None
        report.update(_bias_section(star, pair, j, flags, o))
        report["annotator_diagnostics"] = _diagnostics(star, pair, quality)
        laps.lap("bias_and_agreement")
        position = report["position_bias"]
        report.update(judge_section(star, pair_r, j, o, position=position, laps=laps, jobs=jobs))
        _collect(report, laps, "leaderboards", boards)
        _collect(report, laps, "ppi", ppi)
    report["meta"] = _meta(star, pair, o, excluded, crit_max, t0)
    # The count of star intervals cut to the scale; the table keeps its published columns.
    star_table = report["leaderboard_star"]
    report["meta"]["star_ci_clipped"] = int(star_table["ci_clipped"].sum())
    report["leaderboard_star"] = star_table.drop(columns="ci_clipped")
    report["meta"]["timings"] = laps.seconds
    report["meta"]["cpu_timings"] = laps.cpu
    return {k: report[k] for k in REPORT_KEYS}
