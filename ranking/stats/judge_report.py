"""The judge-vs-human section of the report: the tables judge papers publish, in one place.

``judge_section`` returns these tables (docs/statistics.md "Judge vs human agreement"):

==========================  =====================================================================
key                         one row is ...
==========================  =====================================================================
judge_agreement             (mode, criterion, group_by, group): accuracy, macro P/R/F1 and
                            MT-Bench agreement with / without ties against the other humans'
                            majority (``majority``)
judge_confusion             (mode, criterion, group_by, group, truth, predicted): count
kappa_pairs                 (mode, criterion, rater_a, rater_b): Cohen's kappa with a bootstrap
                            95 % interval (``kappa_pairs``)
chance_agreement            (mode, raters, criterion, statistic): Fleiss' kappa, Krippendorff's
                            alpha (nominal / ordinal / interval) with bootstrap intervals
accuracy_variants           (variant, mode, group_by, group): accuracy within sigma, three
                            labelled variants (``judge_accuracy``)
star_vs_human               (criterion, group_by, group): MAE, Pearson, Spearman against the
                            human mean
ranking_agreement           (mode, ranking, judge): Spearman / Kendall between the human and the
                            judge ranking with question-bootstrap intervals
length_controlled           (group, model): raw and length-controlled win rate, length coef
judge_bias                  (group_by, group): P(longer wins), length coefficient, position
                            consistency, share parsed, price and seconds per 1,000 items
==========================  =====================================================================

Every interval uses its own generator seeded from the report's seed and the table's name, so
adding a table never moves another table's intervals.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from . import parallel
from .arrays import first_ratings
from .judge_accuracy import accuracy_variants, star_vs_human_mean
from .kappa_pairs import chance_agreement, cohen_pairs
from .length_control import length_controlled, length_preference
from .majority import majority_agreement
from .ranking_agreement import ranking_agreement
from .schema import empty_frame

if TYPE_CHECKING:  # report imports this module
    from .report import Laps, ReportOptions

JUDGE_KEYS: tuple[str, ...] = (
    "judge_agreement",
    "judge_confusion",
    "kappa_pairs",
    "chance_agreement",
    "accuracy_variants",
    "star_vs_human",
    "ranking_agreement",
    "length_controlled",
    "judge_bias",
)
# Every judgement column the section's tables read: the first ratings are selected once with
# these (``first_ratings``) and passed to every table, which then reads them as they are.
FIRST_COLUMNS = [
    "mode",
    "criterion",
    "rater_id",
    "rater_kind",
    "pool",
    "item_id",
    "score",
    "value",
    "is_first",
]
JUDGE_RUN_COLUMNS = ("rater_id", "n_calls", "n_parsed", "n_parse_failed", "cost", "seconds")
COST_COLS = {
    "group_by": "str",
    "group": "str",
    "n_calls": "int64",
    "share_parsed": "float64",
    "cost_per_1k": "float64",
    "seconds_per_1k": "float64",
}
BIAS_COLS = {
    "group_by": "str",
    "group": "str",
    "n_decisive": "int64",
    "p_longer": "float64",
    "length_coef": "float64",
    "n_both_orders": "int64",
    "position_consistency": "float64",
    **{k: v for k, v in COST_COLS.items() if k not in ("group_by", "group")},
}


def table_rng(seed: int, name: str) -> np.random.Generator:
    """A generator for one table, from the report's seed and the table's name."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def judge_costs(runs: pd.DataFrame | None) -> pd.DataFrame:
    """Share parsed, price and seconds per 1,000 calls per judge, from its runs' counters.

    ``runs``: one row per judge run with ``JUDGE_RUN_COLUMNS`` (the selector reads them from the
    evaluation models; the statistics stay free of Django).
    """
    if runs is None or len(runs) == 0:
        return empty_frame(COST_COLS)
    missing = [c for c in JUDGE_RUN_COLUMNS if c not in runs.columns]
    if missing:
        raise ValueError(f"judge_runs is missing columns: {', '.join(missing)}")
    runs = runs.astype({"cost": float, "seconds": float})
    # Seconds per call only over runs with a known start and finish.
    runs = runs.assign(timed_calls=runs["n_calls"].where(runs["seconds"].notna(), 0))
    g = runs.groupby("rater_id", sort=True)
    t = g[["n_calls", "n_parsed", "n_parse_failed", "timed_calls"]].sum()
    # Imported judge outputs have no price or time (NaN): their sum stays NaN, not 0.
    t[["cost", "seconds"]] = g[["cost", "seconds"]].sum(min_count=1)
    with np.errstate(all="ignore"):
        out = pd.DataFrame(
            {
                "group_by": "judge",
                "group": t.index.astype(str),
                "n_calls": t["n_calls"].astype(np.int64).to_numpy(),
                "share_parsed": (t["n_parsed"] / (t["n_parsed"] + t["n_parse_failed"])).to_numpy(),
                "cost_per_1k": (1000.0 * t["cost"] / t["n_calls"]).to_numpy(),
                "seconds_per_1k": (1000.0 * t["seconds"] / t["timed_calls"]).to_numpy(),
            }
        )
    return out.replace([np.inf, -np.inf], np.nan)


def judge_bias(
    pair_df: pd.DataFrame, lc: pd.DataFrame, position: pd.DataFrame, costs: pd.DataFrame
) -> pd.DataFrame:
    """One row per judge and per human group: the bias and cost figures side by side."""
    pref = length_preference(pair_df)
    if pref.empty and costs.empty:
        return empty_frame(BIAS_COLS)
    coef = lc.drop_duplicates("group").set_index("group")["length_coef"] if len(lc) else None
    out = pref.drop(columns=["n_longer_won"]).copy()
    key = out["group"].where(out["group_by"] == "judge", "humans")
    out["length_coef"] = key.map(coef).astype(float) if coef is not None else np.nan
    out.loc[out["group_by"] == "pool", "length_coef"] = np.nan
    pos = position.copy()
    if len(pos):
        # position_bias names its rows (rater_kind, human), (pool, ...), (rater_id, judge);
        # this table's are (humans, all), (pool, ...), (judge, ...).
        humans = (pos["group_by"] == "rater_kind") & (pos["group"] == "human")
        pos.loc[humans, ["group_by", "group"]] = ["humans", "all"]
        pos["group_by"] = pos["group_by"].replace({"rater_id": "judge"})
        pos = pos[pos["group_by"].isin(["judge", "pool", "humans"])][
            ["group_by", "group", "n_both_orders", "position_consistency"]
        ]
        out = out.merge(pos, on=["group_by", "group"], how="left")
    out = out.merge(costs, on=["group_by", "group"], how="outer")
    for col, dtype in BIAS_COLS.items():
        if col not in out.columns:
            out[col] = np.nan
        if dtype == "int64":
            out[col] = out[col].fillna(0).astype(np.int64)
    return out[list(BIAS_COLS)]


@dataclass
class JudgeJobs:
    """The section's tables started on worker threads (``start_judge_jobs``)."""

    kappa_pairs: Future[pd.DataFrame]
    tables: Future[tuple[dict[str, pd.DataFrame], tuple[float, float]]]
    first: pd.DataFrame  # the first-rating judgements the jobs read (``first_ratings``)


def _kappa_pairs(j: pd.DataFrame, o: ReportOptions) -> pd.DataFrame:
    rng = table_rng(o.seed, "kappa_pairs")
    return cohen_pairs(j, min_common=o.min_ratings, n_boot=o.n_bootstrap, rng=rng)


def judge_tables(
    star: pd.DataFrame,
    pair: pd.DataFrame,
    j: pd.DataFrame,
    o: ReportOptions,
    lap: Callable[[str], None] | None = None,
) -> dict[str, pd.DataFrame]:
    """The section's tables that read only the frames (chance agreement, accuracy variants, star
    vs human, ranking agreement, length-controlled win rates); ``lap(name)`` after each step."""
    lap = lap or (lambda name: None)
    seed, n_bootstrap = o.seed, o.n_bootstrap
    out: dict[str, pd.DataFrame] = {}
    out["chance_agreement"] = chance_agreement(
        j, n_boot=n_bootstrap, rng=table_rng(seed, "chance_agreement")
    )
    lap("chance_agreement")
    out["accuracy_variants"] = accuracy_variants(j, ddof=o.ddof, min_ratings=o.min_ratings)
    out["star_vs_human"] = star_vs_human_mean(j)
    lap("accuracy_variants")
    out["ranking_agreement"] = ranking_agreement(
        star, pair, n_boot=n_bootstrap, rng=table_rng(seed, "ranking_agreement")
    )
    lap("ranking_agreement")
    out["length_controlled"] = length_controlled(pair)
    lap("length_controlled")
    return out


def start_judge_jobs(
    star: pd.DataFrame, pair: pd.DataFrame, j: pd.DataFrame, o: ReportOptions, pool: Executor
) -> JudgeJobs:
    """Start the per-pair kappa bootstrap (a compiled kernel that releases the GIL) and
    ``judge_tables`` on the pool; ``judge_section(..., jobs=...)`` collects them. Each table draws
    from its own seeded stream, so the figures do not depend on when they run."""
    first = first_ratings(j, FIRST_COLUMNS)
    return JudgeJobs(
        kappa_pairs=pool.submit(_kappa_pairs, first, o),
        tables=pool.submit(parallel.timed, judge_tables, star, pair, first, o),
        first=first,
    )


def judge_section(
    star: pd.DataFrame,
    pair: pd.DataFrame,
    j: pd.DataFrame,
    o: ReportOptions,
    *,
    position: pd.DataFrame,
    laps: Laps | None = None,
    jobs: JudgeJobs | None = None,
) -> dict[str, pd.DataFrame]:
    """Every table of the judge-vs-human section (see the module docstring), under the report's
    options ``o`` (judge runs, ``min_ratings`` as the pairs' minimum of common items, ``ddof``,
    ``n_bootstrap``, ``seed``). ``laps`` (a ``report.Laps``) records the seconds per table. With
    ``jobs`` (``start_judge_jobs``) the kappa bootstrap and ``judge_tables`` come from worker
    threads; without, everything runs here, in the same order."""
    lap = laps.lap if laps is not None else (lambda name: None)
    out: dict[str, pd.DataFrame] = {}
    # The first ratings, selected once for every table (each reads only them).
    j = jobs.first if jobs is not None else first_ratings(j, FIRST_COLUMNS)
    out["judge_agreement"], out["judge_confusion"] = majority_agreement(j)
    lap("judge_agreement")
    if jobs is None:
        out["kappa_pairs"] = _kappa_pairs(j, o)
        lap("kappa_pairs")
        out.update(judge_tables(star, pair, j, o, lap))
    else:
        tables, seconds = jobs.tables.result()
        out.update(tables)
        lap("judge_tables_wait")
        if laps is not None:
            laps.add("judge_tables (worker thread)", seconds)
    costs = judge_costs(o.judge_runs)
    out["judge_bias"] = judge_bias(pair, out["length_controlled"], position, costs)
    lap("judge_bias")
    if jobs is not None:
        out["kappa_pairs"] = jobs.kappa_pairs.result()
        lap("kappa_pairs_wait")
    return out
