"""Leaderboard sections of the report that need loops over rater kinds: Elo (time order,
shuffles, trajectory, analytic variance) and Bradley-Terry with bootstrap intervals."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from . import bradley_terry as bt
from . import elo as elo_mod
from .rankings import OVERALL, add_rank, match_arrays, points_arrays
from .schema import empty_frame, time_ordered

BT_TIES = ("half", "exclude")

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


_Matches = tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]


def _kind_groups(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    if df.empty:
        return []
    return [("all", df), *((str(k), g) for k, g in df.groupby("rater_kind", sort=True))]


def kind_matches(pair_df: pd.DataFrame, *, both_bad: str) -> list[tuple[str, _Matches]]:
    """The matches of "all" and of each rater kind (``match_arrays``) in time order: what Elo
    and Bradley-Terry read (Bradley-Terry's figures do not depend on the order). Only the
    columns they need are sorted and split."""
    cols = ["model_a", "model_b", "choice", "rater_kind", "submitted_at", "rating_id"]
    return [
        (kind, match_arrays(g, both_bad=both_bad))
        for kind, g in _kind_groups(time_ordered(pair_df[cols]))
    ]


def _stability(
    kind: str,
    models: list[str],
    final: np.ndarray,
    rank: np.ndarray,
    pts: dict[str, np.ndarray],
    played: np.ndarray,
    sh: np.ndarray,
    sh_rank: np.ndarray,
    n_shuffles: int,
) -> pd.DataFrame:
    # Ranked among the models that played (the others are dropped below): whole numbers, as
    # every other rank of the report.
    p_rank = pd.Series(pts["score"]).where(played).rank(ascending=False, method="min")
    p_rank = p_rank.fillna(0).astype("int64")
    with np.errstate(all="ignore"):
        return pd.DataFrame(
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


def _long(
    kind: str,
    step: str,
    first: int,
    models: list[str],
    values: np.ndarray,
    ranks: np.ndarray,
    played: np.ndarray,
) -> pd.DataFrame:
    """A (rounds or shuffles) x models matrix as one row per (step, model) that played."""
    m = len(models)
    si, mi = np.divmod(np.arange(values.size), m)
    return pd.DataFrame(
        {
            "rater_kind": kind,
            step: first + si,
            "model": np.array(models)[mi],
            "rating": values.ravel(),
            "rank": ranks.ravel(),
        }
    )[np.tile(played, values.shape[0])]


def _variance(
    kind: str,
    flags: pd.DataFrame,
    n_matches: int,
    n_shuffles: int,
    sh: np.ndarray,
    played: np.ndarray,
) -> dict[str, Any]:
    # The paper's analytic variance needs the raters' accuracy p: pooled pairwise accuracy of
    # the raters whose matches these are.
    # Only the flag column is selected (the frame has a row per first judgement).
    fk = np.zeros(0, bool)
    if len(flags):
        sel = (flags["mode"] == "pairwise").to_numpy(bool)
        if kind != "all":
            sel = sel & (flags["rater_kind"] == kind).to_numpy(bool)
        fk = flags["accurate"].to_numpy(bool)[sel]
    p = float(fk.mean()) if len(fk) else float("nan")
    obs = (
        sh[:, played].var(axis=0, ddof=1) if n_shuffles > 1 else np.full(int(played.sum()), np.nan)
    )
    return {
        "n_matches": int(n_matches),
        "n_shuffles": int(n_shuffles),
        **elo_mod.analytic_variance(p),
        "observed_var_mean": float(np.mean(obs)) if len(obs) else float("nan"),
        "observed_var_max": float(np.max(obs)) if len(obs) else float("nan"),
        "observed_sd_mean": float(np.mean(np.sqrt(obs))) if len(obs) else float("nan"),
    }


def _elo_kind(
    kind: str,
    matches: _Matches,
    sh: np.ndarray | None,
    flags: pd.DataFrame,
    *,
    n_shuffles: int,
    trajectory_rounds: int,
    rng: np.random.Generator,
) -> dict[str, Any] | None:
    """Every Elo table's rows for one rater kind (None when it has no matches). ``sh``: the
    shuffles' ratings if already computed (``_shared_shuffles``), else they are drawn here."""
    a, b, s, models = matches  # in time order
    m = len(models)
    if m == 0 or len(a) == 0:
        return None
    final = elo_mod.elo_ratings(a, b, s, m)
    pts = points_arrays(a, b, s, m)
    played = pts["games"] > 0
    rank = elo_mod.ranks_desc(np.where(played, final, -np.inf))
    lead = pd.DataFrame(
        {"rater_kind": kind, "model": models, "games": pts["games"], "elo": final, "rank": rank}
    )[played]
    # Shuffles: the same matches in S random orders.
    if n_shuffles:
        if sh is None:
            sh = elo_mod.elo_shuffles(a, b, s, m, n_shuffles=n_shuffles, rng=rng)
        sh_rank = elo_mod.ranks_desc(np.where(played, sh, -np.inf))
    else:
        sh, sh_rank = np.empty((0, m)), np.empty((0, m), int)
    hist = elo_mod.elo_history(a, b, s, m, last=trajectory_rounds)
    h_rank = elo_mod.ranks_desc(np.where(played, hist, -np.inf))
    first_round = len(a) - (hist.shape[0] - 1)
    return {
        "lead": lead,
        "stab": _stability(kind, models, final, rank, pts, played, sh, sh_rank, n_shuffles),
        "shuf": _long(kind, "shuffle", 0, models, sh, sh_rank, played) if n_shuffles else None,
        "traj": _long(kind, "round", first_round, models, hist, h_rank, played),
        "var": _variance(kind, flags, len(a), n_shuffles, sh, played),
    }


def _shared_shuffles(
    kinds: list[tuple[str, _Matches]], n_shuffles: int, rng: np.random.Generator
) -> list[np.ndarray | None]:
    """The shuffles of "all" and of every rater kind in one pass (``elo_shuffles_grouped``):
    "all" is the union of the kinds' matches, so one shuffle of it orders each kind's matches
    too. [None, ...] (each kind shuffles alone) when that does not hold or without numba."""
    none: list[np.ndarray | None] = [None] * len(kinds)
    if not n_shuffles or len(kinds) < 2 or kinds[0][0] != "all":
        return none
    all_models = kinds[0][1][3]
    parts = kinds[1:]
    if sum(len(m[0]) for _, m in parts) != len(kinds[0][1][0]):
        return none  # rows without a rater kind: "all" is not the union
    shared = []
    for _, (a, b, s, models) in parts:
        codes = np.searchsorted(all_models, models)  # both sorted; each kind's models in all's
        shared.append((codes[a], codes[b], s))
    out = elo_mod.elo_shuffles_grouped(shared, len(all_models), n_shuffles=n_shuffles, rng=rng)
    if out is None:
        return none
    union, per_kind = out
    cols = [np.searchsorted(all_models, m[3]) for _, m in parts]
    return [union, *(sh[:, c] for sh, c in zip(per_kind, cols, strict=True))]


def elo_tables(
    pair_df: pd.DataFrame,
    flags: pd.DataFrame,
    *,
    both_bad: str,
    n_shuffles: int,
    trajectory_rounds: int,
    rng: np.random.Generator,
    kinds: list[tuple[str, _Matches]] | None = None,
) -> dict[str, Any]:
    """Elo leaderboard, stability over shuffles, trajectory, shuffles and variance per kind
    (``kinds``: ``kind_matches(pair_df)`` if already computed)."""
    parts: dict[str, list[pd.DataFrame]] = {"lead": [], "stab": [], "shuf": [], "traj": []}
    var: dict[str, Any] = {}
    if kinds is None:
        kinds = kind_matches(pair_df, both_bad=both_bad)
    shuffles = _shared_shuffles(kinds, n_shuffles, rng)
    for (kind, matches), sh in zip(kinds, shuffles, strict=True):
        out = _elo_kind(
            kind,
            matches,
            sh,
            flags,
            n_shuffles=n_shuffles,
            trajectory_rounds=trajectory_rounds,
            rng=rng,
        )
        if out is None:
            continue
        for key in parts:
            if out[key] is not None:
                parts[key].append(out[key])
        var[kind] = out["var"]

    def cat(key: str, cols: dict[str, str]) -> pd.DataFrame:
        return pd.concat(parts[key], ignore_index=True) if parts[key] else empty_frame(cols)

    return {
        "leaderboard_elo": cat("lead", _ELO_COLS),
        "elo_stability": cat("stab", _STAB_COLS),
        "elo_trajectory": cat("traj", _TRAJ_COLS),
        "elo_shuffles": cat("shuf", _SHUF_COLS),
        "elo_variance": var,
    }


def bt_table(
    pair_df: pd.DataFrame,
    *,
    both_bad: str,
    n_bootstrap: int,
    rng: np.random.Generator,
    ties: str = "half",
    kinds: list[tuple[str, _Matches]] | None = None,
) -> pd.DataFrame:
    """Bradley-Terry per rater kind. ``ties``: "half" counts a tie (and a both-bad counted as a
    draw) as half a win for each side; "exclude" leaves those matches out of the fit.
    ``kinds``: ``kind_matches(pair_df)`` if already computed."""
    if ties not in BT_TIES:
        raise ValueError(f"ties must be one of {BT_TIES}")
    parts = []
    if kinds is None:
        kinds = kind_matches(pair_df, both_bad=both_bad)
    for kind, (a, b, s, models) in kinds:
        if ties == "exclude":
            decisive = s != 0.5
            a, b, s = a[decisive], b[decisive], s[decisive]
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


def rankings_for_correlation(report: Mapping[str, Any]) -> dict[str, pd.Series]:
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
