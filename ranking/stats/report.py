"""The full statistics report of a study, as tables.

``build_report(star_df, pair_df, **options)`` returns a dict; every value is a pandas DataFrame
(possibly empty, with its columns) except ``meta`` and ``elo_variance`` which are plain dicts.
Keys and one row of each table:

==========================  =====================================================================
key                         one row is ...
==========================  =====================================================================
meta                        dict: options used, counts, excluded raters, numba in use, notes
leaderboard_star            (rater_kind, model, criterion incl. "overall"): mean, n, rank
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
==========================  =====================================================================

``report_to_jsonable`` turns the dict into JSON-ready dicts and lists (tables become lists of
records; NaN, NA and infinities become None; timestamps ISO 8601 strings).
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from . import bradley_terry as bt
from . import elo as elo_mod
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
    discrimination,
    gaps,
    hint_effect,
    length_bias,
    position_bias,
)
from .filters import filter_frame, raters_below
from .rankings import (
    OVERALL,
    add_rank,
    correlation_table,
    infer_criterion_max,
    labels,
    match_arrays,
    points_arrays,
    points_table,
    star_means,
    total_score,
)
from .schema import coerce_pair, coerce_star, empty_frame

REPORT_KEYS: tuple[str, ...] = (
    "meta",
    "leaderboard_star",
    "leaderboard_total",
    "leaderboard_points",
    "leaderboard_elo",
    "leaderboard_bt",
    "correlations",
    "accuracy_by_rater",
    "accuracy_by_pool",
    "accuracy_by_criterion",
    "consistency_by_rater",
    "consistency_by_pool",
    "consistency_by_criterion",
    "length_bias",
    "gaps",
    "discrimination",
    "hint_effect",
    "elo_stability",
    "elo_variance",
    "elo_trajectory",
    "elo_shuffles",
    "krippendorff",
    "kappa",
    "position_bias",
    "annotator_diagnostics",
)

_ELO_COLS = {
    "rater_kind": "str",
    "model": "str",
    "games": "int64",
    "elo": "float64",
    "rank": "int64",
}
_BT_COLS = {
    "rater_kind": "str",
    "model": "str",
    "games": "int64",
    "strength": "float64",
    "rating": "float64",
    "ci_low": "float64",
    "ci_high": "float64",
    "rank_ci_low": "float64",
    "rank_ci_high": "float64",
    "rank": "int64",
}
_STAB_COLS = {
    "rater_kind": "str",
    "model": "str",
    "elo": "float64",
    "elo_rank": "int64",
    "shuffle_mean": "float64",
    "shuffle_sd": "float64",
    "shuffle_min": "float64",
    "shuffle_max": "float64",
    "rank_mean": "float64",
    "rank_sd": "float64",
    "rank_min": "int64",
    "rank_max": "int64",
    "points_score": "float64",
    "points_rank": "int64",
}
_TRAJ_COLS = {
    "rater_kind": "str",
    "round": "int64",
    "model": "str",
    "rating": "float64",
    "rank": "int64",
}
_SHUF_COLS = {
    "rater_kind": "str",
    "shuffle": "int64",
    "model": "str",
    "rating": "float64",
    "rank": "int64",
}


def _kind_groups(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    if df.empty:
        return []
    return [("all", df), *((str(k), g) for k, g in df.groupby("rater_kind", sort=True))]


def _time_ordered(pair_df: pd.DataFrame) -> pd.DataFrame:
    return pair_df.sort_values(["submitted_at", "rating_id"], kind="stable")


def _elo_tables(
    pair_df: pd.DataFrame,
    flags: pd.DataFrame,
    *,
    both_bad: str,
    n_shuffles: int,
    trajectory_rounds: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    lead, stab, traj, shuf, var = [], [], [], [], {}
    for kind, g in _kind_groups(pair_df):
        a, b, s, models = match_arrays(_time_ordered(g), both_bad=both_bad)
        m = len(models)
        if m == 0 or len(a) == 0:
            continue
        final = elo_mod.elo_ratings(a, b, s, m)
        pts = points_arrays(a, b, s, m)
        played = pts["games"] > 0
        rank = elo_mod.ranks_desc(np.where(played, final, -np.inf))
        lead.append(
            pd.DataFrame(
                {
                    "rater_kind": kind,
                    "model": models,
                    "games": pts["games"],
                    "elo": final,
                    "rank": rank,
                }
            )[played]
        )
        # Shuffles: the same matches in S random orders.
        sh = (
            elo_mod.elo_shuffles(a, b, s, m, n_shuffles=n_shuffles, rng=rng)
            if n_shuffles
            else np.empty((0, m))
        )
        sh_rank = (
            elo_mod.ranks_desc(np.where(played, sh, -np.inf))
            if n_shuffles
            else np.empty((0, m), int)
        )
        p_rank = pd.Series(pts["score"]).where(played).rank(ascending=False, method="min")
        with np.errstate(all="ignore"):
            stab.append(
                pd.DataFrame(
                    {
                        "rater_kind": kind,
                        "model": models,
                        "elo": final,
                        "elo_rank": rank,
                        "shuffle_mean": sh.mean(axis=0) if n_shuffles else np.nan,
                        "shuffle_sd": sh.std(axis=0, ddof=1) if n_shuffles > 1 else np.nan,
                        "shuffle_min": sh.min(axis=0) if n_shuffles else np.nan,
                        "shuffle_max": sh.max(axis=0) if n_shuffles else np.nan,
                        "rank_mean": sh_rank.mean(axis=0) if n_shuffles else np.nan,
                        "rank_sd": sh_rank.std(axis=0, ddof=1) if n_shuffles > 1 else np.nan,
                        "rank_min": sh_rank.min(axis=0) if n_shuffles else 0,
                        "rank_max": sh_rank.max(axis=0) if n_shuffles else 0,
                        "points_score": pts["score"],
                        "points_rank": p_rank.to_numpy(),
                    }
                )[played]
            )
        if n_shuffles:
            si, mi = np.divmod(np.arange(sh.size), m)
            shuf.append(
                pd.DataFrame(
                    {
                        "rater_kind": kind,
                        "shuffle": si,
                        "model": np.array(models)[mi],
                        "rating": sh.ravel(),
                        "rank": sh_rank.ravel(),
                    }
                )[np.tile(played, n_shuffles)]
            )
        hist = elo_mod.elo_history(a, b, s, m, last=trajectory_rounds)
        h_rank = elo_mod.ranks_desc(np.where(played, hist, -np.inf))
        first_round = len(a) - (hist.shape[0] - 1)
        ri, mi = np.divmod(np.arange(hist.size), m)
        traj.append(
            pd.DataFrame(
                {
                    "rater_kind": kind,
                    "round": first_round + ri,
                    "model": np.array(models)[mi],
                    "rating": hist.ravel(),
                    "rank": h_rank.ravel(),
                }
            )[np.tile(played, hist.shape[0])]
        )
        # The paper's analytic variance needs the raters' accuracy p: pooled pairwise accuracy of
        # the raters whose matches these are.
        fk = flags[(flags["mode"] == "pairwise")] if len(flags) else flags
        if kind != "all" and len(fk):
            fk = fk[fk["rater_kind"] == kind]
        p = float(fk["accurate"].mean()) if len(fk) else float("nan")
        obs = (
            sh[:, played].var(axis=0, ddof=1)
            if n_shuffles > 1
            else np.full(int(played.sum()), np.nan)
        )
        var[kind] = {
            "n_matches": int(len(a)),
            "n_shuffles": int(n_shuffles),
            **elo_mod.analytic_variance(p),
            "observed_var_mean": float(np.mean(obs)) if len(obs) else float("nan"),
            "observed_var_max": float(np.max(obs)) if len(obs) else float("nan"),
            "observed_sd_mean": float(np.mean(np.sqrt(obs))) if len(obs) else float("nan"),
        }
    return {
        "leaderboard_elo": pd.concat(lead, ignore_index=True) if lead else empty_frame(_ELO_COLS),
        "elo_stability": pd.concat(stab, ignore_index=True) if stab else empty_frame(_STAB_COLS),
        "elo_trajectory": pd.concat(traj, ignore_index=True) if traj else empty_frame(_TRAJ_COLS),
        "elo_shuffles": pd.concat(shuf, ignore_index=True) if shuf else empty_frame(_SHUF_COLS),
        "elo_variance": var,
    }


def _bt_table(
    pair_df: pd.DataFrame, *, both_bad: str, n_bootstrap: int, rng: np.random.Generator
) -> pd.DataFrame:
    parts = []
    for kind, g in _kind_groups(pair_df):
        a, b, s, models = match_arrays(g, both_bad=both_bad)
        if not models or len(a) == 0:
            continue
        t = bt.table(a, b, s, models, n_rounds=n_bootstrap, rng=rng)
        t = t[t["games"] > 0].copy()
        t.insert(0, "rater_kind", kind)
        parts.append(t)
    if not parts:
        return empty_frame(_BT_COLS)
    out = pd.concat(parts, ignore_index=True)
    return add_rank(out, "rating", ["rater_kind"])[list(_BT_COLS)]


def _rankings(report: Mapping[str, Any]) -> dict[str, pd.Series]:
    """Named model -> score series for the correlation table (higher is better)."""
    out: dict[str, pd.Series] = {}
    star = report["leaderboard_star"]
    for kind, g in star[star["criterion"] == OVERALL].groupby("rater_kind", sort=True):
        out[f"star/{kind}"] = g.set_index("model")["mean"]
    for name, key, col in (
        ("total", "leaderboard_total", "total"),
        ("points", "leaderboard_points", "score"),
        ("elo", "leaderboard_elo", "elo"),
        ("bt", "leaderboard_bt", "rating"),
    ):
        for kind, g in report[key].groupby("rater_kind", sort=True):
            out[f"{name}/{kind}"] = g.set_index("model")[col]
    return out


def build_report(
    star_df: pd.DataFrame | None = None,
    pair_df: pd.DataFrame | None = None,
    *,
    min_ratings: int = 5,
    pools: Iterable[str] | None = None,
    rater_kinds: Iterable[str] | None = None,
    criteria: Iterable[str] | None = None,
    task_types: Iterable[str] | None = None,
    start: object = None,
    end: object = None,
    min_accuracy: float | None = None,
    min_consistency: float | None = None,
    criterion_max: Mapping[str, float] | None = None,
    both_bad: str = "draw",
    include_repeats: bool = True,
    ddof: int = 0,
    gap_ks: Sequence[float] | None = None,
    length_thresholds: Sequence[int] = (100, 300),
    n_shuffles: int = 100,
    n_bootstrap: int = 100,
    trajectory_rounds: int = 100,
    seed: int = 0,
) -> dict[str, Any]:
    """Every table of the report for one study (see the module docstring for the layout).

    Filters (``pools``, ``rater_kinds``, ``criteria``, ``task_types``, ``start``/``end``) apply
    first. Accuracy and consistency are then measured; raters below ``min_accuracy`` or
    ``min_consistency`` are flagged ``excluded`` in those tables and left out of everything else
    (ground truth included: the remaining tables are recomputed without them).
    """
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    star = coerce_star(star_df)
    pair = coerce_pair(pair_df)
    filt = {
        "pools": pools,
        "rater_kinds": rater_kinds,
        "task_types": task_types,
        "start": start,
        "end": end,
    }
    star = filter_frame(star, criteria=criteria, **filt)
    pair = filter_frame(pair, **filt)

    j = judgements(star, pair)
    flags = accuracy_flags(j, ddof=ddof)
    acc = accuracy_by_rater(flags, j, min_ratings=min_ratings)
    units = consistency_units(j)
    cons = consistency_by_rater(units, j, min_ratings=min_ratings)
    excluded = raters_below(acc, cons, min_accuracy=min_accuracy, min_consistency=min_consistency)
    acc["excluded"] = acc["rater_id"].isin(excluded)
    cons["excluded"] = cons["rater_id"].isin(excluded)

    report: dict[str, Any] = {
        "accuracy_by_rater": acc,
        "accuracy_by_pool": summarise_by_pool(acc, "accuracy", "n_accurate", "n_judgements"),
        "accuracy_by_criterion": accuracy_by_criterion(flags, acc),
        "consistency_by_rater": cons,
        "consistency_by_pool": summarise_by_pool(cons, "consistency", "n_consistent", "n_repeated"),
        "consistency_by_criterion": consistency_by_criterion(units, cons, j),
    }
    if excluded:
        star = filter_frame(star, exclude_raters=excluded)
        pair = filter_frame(pair, exclude_raters=excluded)
        j = judgements(star, pair)
        flags = accuracy_flags(j, ddof=ddof)

    if criterion_max is None:
        criterion_max = infer_criterion_max(star)
        max_source = "observed maximum per criterion"
    else:
        max_source = "given"
    report["leaderboard_star"] = star_means(star, include_repeats=include_repeats)
    report["leaderboard_total"] = total_score(star, criterion_max, include_repeats=include_repeats)
    report["leaderboard_points"] = points_table(
        pair, both_bad=both_bad, include_repeats=include_repeats
    )
    pair_r = pair if include_repeats else pair[~pair["is_repeat"]]
    report.update(
        _elo_tables(
            pair_r,
            flags,
            both_bad=both_bad,
            n_shuffles=n_shuffles,
            trajectory_rounds=trajectory_rounds,
            rng=rng,
        )
    )
    report["leaderboard_bt"] = _bt_table(
        pair_r, both_bad=both_bad, n_bootstrap=n_bootstrap, rng=rng
    )
    report["correlations"] = correlation_table(_rankings(report))
    report["length_bias"] = length_bias(pair_r, length_thresholds)
    report["gaps"] = gaps(star, gap_ks)
    report["discrimination"] = discrimination(star, pair_r)
    report["hint_effect"] = hint_effect(star, flags)
    report["krippendorff"], report["kappa"] = agreement_tables(j, min_common=min_ratings)
    report["position_bias"] = position_bias(pair)
    diag = annotator_diagnostics(star, pair)
    for name, table, col in (("accuracy", acc, "accuracy"), ("consistency", cons, "consistency")):
        if len(table):
            wide = table.pivot_table(index="rater_id", columns="mode", values=col)
            wide.columns = [f"{name}_{m}" for m in wide.columns]
            diag = diag.merge(wide.reset_index(), on="rater_id", how="left")
    report["annotator_diagnostics"] = diag
    report["meta"] = {
        "n_star_rows": int(len(star)),
        "n_star_ratings": int(star["rating_id"].nunique()),
        "n_pair_ratings": int(len(pair)),
        "n_raters": int(len(set(labels(star["rater_id"])).union(labels(pair["rater_id"])))),
        "models": sorted(
            set(labels(star["model"])).union(labels(pair["model_a"]), labels(pair["model_b"]))
        ),
        "excluded_raters": sorted(excluded),
        "options": {
            "min_ratings": min_ratings,
            "pools": list(pools) if pools is not None else None,
            "rater_kinds": list(rater_kinds) if rater_kinds is not None else None,
            "criteria": list(criteria) if criteria is not None else None,
            "task_types": list(task_types) if task_types is not None else None,
            "start": None if start is None else str(start),
            "end": None if end is None else str(end),
            "min_accuracy": min_accuracy,
            "min_consistency": min_consistency,
            "both_bad": both_bad,
            "include_repeats": include_repeats,
            "ddof": ddof,
            "length_thresholds": list(length_thresholds),
            "n_shuffles": n_shuffles,
            "n_bootstrap": n_bootstrap,
            "trajectory_rounds": trajectory_rounds,
            "seed": seed,
        },
        "criterion_max": {k: float(v) for k, v in criterion_max.items()},
        "criterion_max_source": max_source,
        "numba": elo_mod.HAVE_NUMBA,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return {k: report[k] for k in REPORT_KEYS}


def _scalar(v: Any) -> Any:
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, (pd.Timestamp, dt.datetime, dt.date)):
        return v.isoformat()
    if isinstance(v, np.datetime64):
        return None if np.isnat(v) else pd.Timestamp(v).isoformat()
    if isinstance(v, str):
        return v
    return str(v)


def jsonable(obj: Any) -> Any:
    """Plain JSON-ready version of a table, dict, list or scalar."""
    if isinstance(obj, pd.DataFrame):
        cols = [str(c) for c in obj.columns]
        return [
            dict(zip(cols, (_scalar(v) for v in row), strict=True))
            for row in obj.itertuples(index=False)
        ]
    if isinstance(obj, pd.Series):
        return {str(k): _scalar(v) for k, v in obj.items()}
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    return _scalar(obj)


def report_to_jsonable(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report with every table as a list of records and every missing value as None."""
    return {str(k): jsonable(v) for k, v in report.items()}
