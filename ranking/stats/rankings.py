"""Leaderboards: star means, the LLMEval-2 total score, Points, and rank correlations."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from . import rank_tests
from .grouped import dense_codes, group_means, whole_numbers
from .schema import CHOICE_SCORE_A, codes_and_names, empty_frame

OVERALL = "overall"


def add_rank(df: pd.DataFrame, value: str, by: list[str] | None = None) -> pd.DataFrame:
    """Add a ``rank`` column: 1 = best (highest ``value``); ties share the lowest rank."""
    if df.empty:
        df["rank"] = pd.Series([], dtype="int64")
        return df
    if by:
        r = df.groupby(by)[value].rank(ascending=False, method="min")
    else:
        r = df[value].rank(ascending=False, method="min")
    df["rank"] = r.astype("Int64")
    return df


_STAR_COLS = {
    "rater_kind": "str",
    "model": "str",
    "criterion": "str",
    "mean": "float64",
    "n": "int64",
    "rank": "int64",
    "ci_low": "float64",
    "ci_high": "float64",
    "ci_clipped": "bool",
}


# criterion -> (lowest, highest) score the rubric allows; a side not given is not clipped.
Bounds = Mapping[str, tuple[float, float]]


def t95(n: pd.Series | np.ndarray | float) -> np.ndarray:
    """Student's t quantile of a two-sided 95% interval over ``n`` values (n - 1 degrees of
    freedom); NaN below 2 values."""
    df = np.asarray(n, dtype=float) - 1.0
    return np.asarray(stats.t.ppf(0.975, np.where(df >= 1, df, np.nan)))


def _t_interval(mean: pd.Series, sd: pd.Series, n: pd.Series) -> tuple[pd.Series, pd.Series]:
    """mean ± t(0.975, n - 1)·sd/√n (95%, Student's t); NaN where fewer than 2 values."""
    half = t95(n) * sd / np.sqrt(n.where(n >= 2))
    return mean - half, mean + half


def scale_bounds(
    criterion_min: Mapping[str, float] | None, criterion_max: Mapping[str, float] | None
) -> dict[str, tuple[float, float]]:
    """The rubric's (min, max) per criterion; -inf / +inf where the rubric gives no bound."""
    lo, hi = dict(criterion_min or {}), dict(criterion_max or {})
    return {c: (float(lo.get(c, -np.inf)), float(hi.get(c, np.inf))) for c in {*lo, *hi}}


def _criterion_bounds(m: pd.DataFrame, g: pd.DataFrame, bounds: Bounds) -> pd.DataFrame:
    """Per (model, criterion) row of ``m``: the scale its mean can take, ``lo`` and ``hi``: the
    rubric's range widened to the scores seen (out-of-range scores are used as given)."""
    seen = g.groupby("criterion", observed=True)["score"].agg(["min", "max"])
    crit = m["criterion"].astype(str)
    rubric_lo = crit.map(lambda c: bounds.get(c, (-np.inf, np.inf))[0]).astype(float)
    rubric_hi = crit.map(lambda c: bounds.get(c, (-np.inf, np.inf))[1]).astype(float)
    seen_lo = m["criterion"].map(seen["min"]).astype(float)
    seen_hi = m["criterion"].map(seen["max"]).astype(float)
    return pd.DataFrame(
        {"lo": np.fmin(rubric_lo, seen_lo), "hi": np.fmax(rubric_hi, seen_hi)}, index=m.index
    )


def _clip(t: pd.DataFrame, lo: pd.Series, hi: pd.Series) -> pd.DataFrame:
    """The interval cut to the scale [lo, hi]; ``ci_clipped`` marks the rows where it was."""
    low, high = t["ci_low"].clip(lower=lo), t["ci_high"].clip(upper=hi)
    cut_low = t["ci_low"].notna() & (low != t["ci_low"])
    t["ci_clipped"] = cut_low | (t["ci_high"].notna() & (high != t["ci_high"]))
    t["ci_low"], t["ci_high"] = low, high
    return t


def _overall(g: pd.DataFrame, m: pd.DataFrame, scale: pd.DataFrame) -> pd.DataFrame:
    """``overall`` = mean of the criterion means; its interval from the per-rating averages.

    The criteria of one rating are correlated, so treating criteria as independent would make the
    interval too narrow; the rating's own average over its criteria carries that correlation.
    """
    o = m.groupby("model", observed=True).agg(mean=("mean", "mean")).reset_index()
    # The overall mean is the mean of the criterion means, so its scale is the mean of theirs.
    edges = scale.groupby(m["model"].to_numpy()).mean()
    # The mean per (model, rating) in (model, rating id) order, as the groupby of the two
    # columns lists them (``group_means``), then their spread per model.
    model, names = codes_and_names(g["model"])
    rating, n_ratings = dense_codes(g["rating_id"].to_numpy())
    key = model * n_ratings + rating
    at, per_rating = group_means(key, g["score"].to_numpy(float), len(names) * n_ratings)
    spread = pd.Series(per_rating).groupby(at // n_ratings).agg(["std", "size"])
    spread.index = pd.Index(names[spread.index.to_numpy()])
    sd = o["model"].map(spread["std"]).astype(float)
    k = o["model"].map(spread["size"]).astype(float)
    o["ci_low"], o["ci_high"] = _t_interval(o["mean"], sd, k)
    lo, hi = (o["model"].map(edges[side]).astype(float) for side in ("lo", "hi"))
    o = _clip(o, lo, hi)
    # The ratings, each counted once (what the interval is over and what the report's "Ratings"
    # column says), not the scores of all criteria added up.
    o["n"] = k.astype("int64")
    o["criterion"] = OVERALL
    return o


def star_means(
    star_df: pd.DataFrame, *, include_repeats: bool = True, bounds: Bounds | None = None
) -> pd.DataFrame:
    """Mean stars per (rater kind, model, criterion) plus ``overall`` = mean of criterion means,
    each with a 95% Student's t interval (``ci_low``, ``ci_high``; see docs/statistics.md)
    cut to the rubric's scale (``bounds``, from ``scale_bounds``; ``ci_clipped`` marks a cut).

    Rater kind is "all", "human" and "judge". ``overall`` averages the per-criterion means with
    equal weight (the paper's Table 6: GPT-4's overall 2.917 is the mean of its five criteria).
    Repeats are counted by default: each is a genuine rating, and the published LLMEval-1 GPT-4
    table is reproduced only when every row of the released file is counted.
    """
    keep = star_df["score"].notna() if include_repeats else ~star_df["is_repeat"]
    keep &= star_df["score"].notna()
    # Only the columns read: every rater kind's split copies them.
    df = star_df.loc[keep, ["rater_kind", "model", "criterion", "rating_id", "score"]]
    if df.empty:
        return empty_frame(_STAR_COLS)
    parts = []
    for kind, g in [("all", df), *df.groupby("rater_kind", sort=True)]:
        m = g.groupby(["model", "criterion"])["score"].agg(mean="mean", n="size", sd="std")
        m = m.reset_index()
        m["ci_low"], m["ci_high"] = _t_interval(m["mean"], m["sd"], m["n"])
        scale = _criterion_bounds(m, g, bounds or {})
        m = _clip(m, scale["lo"], scale["hi"])
        m = pd.concat([m.drop(columns="sd"), _overall(g, m, scale)], ignore_index=True)
        m.insert(0, "rater_kind", kind)
        parts.append(m)
    out = pd.concat(parts, ignore_index=True)
    return add_rank(out, "mean", ["rater_kind", "criterion"])[list(_STAR_COLS)]


def infer_criterion_max(star_df: pd.DataFrame) -> dict[str, float]:
    """Highest score seen per criterion (used when the rubric's star range is not given)."""
    if star_df.empty:
        return {}
    highest: dict[str, float] = star_df.groupby("criterion")["score"].max().astype(float).to_dict()
    return highest


_TOTAL_COLS = {
    "rater_kind": "str",
    "model": "str",
    "total": "float64",
    "n_subjects": "int64",
    "rank": "int64",
}


def total_score(
    star_df: pd.DataFrame,
    criterion_max: Mapping[str, float],
    *,
    include_repeats: bool = True,
) -> pd.DataFrame:
    """LLMEval-2 total score: per subject (task type) score_i = actual / full * 100, then the mean
    over the subjects the model was rated in.

    actual = the sum of the model's stars in the subject, full = the sum of the maximum stars of the
    same (rating, criterion) rows, so with several raters per answer this is the mean over raters.
    """
    keep = star_df["score"].notna() & star_df["criterion"].isin(list(criterion_max))
    if not include_repeats:
        keep &= ~star_df["is_repeat"]
    df = star_df.loc[keep, ["rater_kind", "model", "task_type", "criterion", "score"]]
    if df.empty:
        return empty_frame(_TOTAL_COLS)
    df = df.assign(full=df["criterion"].map(criterion_max).astype(float))
    whole = whole_numbers(df["score"].to_numpy(float)) and whole_numbers(df["full"].to_numpy())
    parts = []
    for kind, g in [("all", df), *df.groupby("rater_kind", sort=True)]:
        s = _subject_sums(g, whole)
        s["pct"] = s["score"] / s["full"] * 100.0
        t = s.groupby("model")["pct"].agg(total="mean", n_subjects="size").reset_index()
        t.insert(0, "rater_kind", kind)
        parts.append(t)
    out = pd.concat(parts, ignore_index=True)
    return add_rank(out, "total", ["rater_kind"])[list(_TOTAL_COLS)]


def _subject_sums(g: pd.DataFrame, whole: bool) -> pd.DataFrame:
    """``g.groupby(["model", "task_type"])[["score", "full"]].sum()``; for whole numbers
    (exact sums in any order) and categorical labels, summed per code by bincount first and
    the groupby run on one row per (model, task type): the same table."""
    labels_ = [g["model"], g["task_type"]]
    coded = all(isinstance(c.dtype, pd.CategoricalDtype) for c in labels_)
    if whole and coded and len(g) and all((c.cat.codes >= 0).all() for c in labels_):
        model, task = (c.cat.codes.to_numpy().astype(np.int64) for c in labels_)
        n_t = len(labels_[1].cat.categories)
        n = len(labels_[0].cat.categories) * n_t
        key = model * n_t + task
        at = np.flatnonzero(np.bincount(key, minlength=n))
        g = pd.DataFrame(
            {
                "model": pd.Categorical.from_codes(at // n_t, dtype=labels_[0].dtype),
                "task_type": pd.Categorical.from_codes(at % n_t, dtype=labels_[1].dtype),
                "score": np.bincount(key, g["score"].to_numpy(float), n)[at],
                "full": np.bincount(key, g["full"].to_numpy(float), n)[at],
            }
        )
    return g.groupby(["model", "task_type"])[["score", "full"]].sum()


# --------------------------------------------------------------------------- points


def match_arrays(
    pair_df: pd.DataFrame, *, both_bad: str = "draw", models: list[str] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Matches as integer model codes and A's score, in the frame's row order.

    ``both_bad`` is "draw" (default: 0.5 each, as in the paper's win/draw/loss tables) or
    "exclude" (the match is dropped).
    """
    df = pair_df
    if both_bad == "exclude":
        df = df[df["choice"] != "both_bad"]
    elif both_bad != "draw":
        raise ValueError("both_bad must be 'draw' or 'exclude'")
    if models is None:
        models = sorted(set(labels(df["model_a"])).union(labels(df["model_b"])))
    models = [str(m) for m in models]
    a = _codes(df["model_a"], models)
    b = _codes(df["model_b"], models)
    s = choice_score(df["choice"])
    ok = (a >= 0) & (b >= 0) & (a != b)
    return a[ok], b[ok], s[ok], list(models)


def match_codes(
    pair_df: pd.DataFrame, models: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every row's model codes in ``models`` (-1 when absent) and A's score, nothing dropped."""
    a = _codes(pair_df["model_a"], models)
    return a, _codes(pair_df["model_b"], models), choice_score(pair_df["choice"])


def labels(values: pd.Series) -> list[str]:
    """Distinct labels present in ``values`` (fast path for categoricals)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        # Categories present, in code order (a count per code: no sort of the whole column).
        codes = values.cat.codes.to_numpy()
        cats = values.cat.categories
        present = np.bincount(codes[codes >= 0], minlength=len(cats)) > 0
        return [str(c) for c in cats[present]]
    return [str(v) for v in pd.unique(values.to_numpy())]


def _codes(values: pd.Series, categories: list[str]) -> np.ndarray:
    """Integer codes of ``values`` in ``categories`` (-1 when absent); cheap for categoricals."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes: npt.NDArray[np.int64] = values.cat.set_categories(categories).cat.codes.to_numpy(
            dtype=np.int64
        )
        return codes
    dtype = pd.CategoricalDtype(categories)
    coded: npt.NDArray[np.int64] = values.astype(dtype).cat.codes.to_numpy(dtype=np.int64)
    return coded


def choice_score(choice: pd.Series) -> np.ndarray:
    if isinstance(choice.dtype, pd.CategoricalDtype):
        lut = np.array([CHOICE_SCORE_A.get(str(c), np.nan) for c in choice.cat.categories])
        codes = choice.cat.codes.to_numpy()
        return np.where(codes >= 0, lut[codes], np.nan)
    scores: npt.NDArray[np.float64] = choice.map(CHOICE_SCORE_A).to_numpy(dtype=float)
    return scores


def points_arrays(
    a: np.ndarray, b: np.ndarray, s: np.ndarray, n_models: int
) -> dict[str, np.ndarray]:
    """Points system (win 1, draw 0.5, loss 0) with bincount; order of matches is irrelevant."""
    games = np.bincount(a, minlength=n_models) + np.bincount(b, minlength=n_models)
    points = np.bincount(a, weights=s, minlength=n_models) + np.bincount(
        b, weights=1.0 - s, minlength=n_models
    )
    wins = np.bincount(a, weights=s == 1.0, minlength=n_models) + np.bincount(
        b, weights=s == 0.0, minlength=n_models
    )
    draws = np.bincount(a, weights=s == 0.5, minlength=n_models) + np.bincount(
        b, weights=s == 0.5, minlength=n_models
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        score = points / games
    return {
        "games": games.astype(np.int64),
        "wins": wins.astype(np.int64),
        "draws": draws.astype(np.int64),
        "losses": (games - wins - draws).astype(np.int64),
        "points": points,
        "score": score,
    }


_POINTS_COLS = {
    "rater_kind": "str",
    "model": "str",
    "games": "int64",
    "wins": "int64",
    "draws": "int64",
    "losses": "int64",
    "points": "float64",
    "score": "float64",
    "rank": "int64",
}


def points_table(
    pair_df: pd.DataFrame, *, both_bad: str = "draw", include_repeats: bool = True
) -> pd.DataFrame:
    """Points leaderboard per rater kind ("all", "human", "judge"): score = points / games."""
    df = pair_df if include_repeats else pair_df[~pair_df["is_repeat"]]
    if df.empty:
        return empty_frame(_POINTS_COLS)
    if both_bad not in ("draw", "exclude"):
        raise ValueError("both_bad must be 'draw' or 'exclude'")
    # Model codes and scores once for all kinds (each kind's table: its rows' matches; a
    # choice scores 0, 0.5 or 1, so the sums are the same in any order and any subset).
    used = (df["choice"] != "both_bad").to_numpy(bool) if both_bad == "exclude" else None
    named = df if used is None else df[used]
    models = sorted(set(labels(named["model_a"])).union(labels(named["model_b"])))
    a, b, s = match_codes(df, models)
    rows = np.ones(len(df), dtype=bool) if used is None else used
    kind, kinds = codes_and_names(df["rater_kind"])
    match = (a >= 0) & (b >= 0) & (a != b)
    parts = []
    for k in [-1, *np.flatnonzero(np.bincount(kind, minlength=len(kinds)))]:
        sel = rows if k < 0 else rows & (kind == k)
        if not sel.any():  # no rating of the kind is left: no table
            continue
        sel = sel & match
        t = pd.DataFrame(points_arrays(a[sel], b[sel], s[sel], len(models)))
        t.insert(0, "model", models)
        t.insert(0, "rater_kind", "all" if k < 0 else str(kinds[k]))
        parts.append(t[t["games"] > 0])
    if not parts:
        return empty_frame(_POINTS_COLS)
    out = pd.concat(parts, ignore_index=True)
    return add_rank(out, "score", ["rater_kind"])[list(_POINTS_COLS)]


# --------------------------------------------------------------------------- correlations


def rank_correlation(x: pd.Series, y: pd.Series) -> dict[str, float]:
    """Spearman rho and Kendall tau-b (with permutation p-values: ``rank_tests``) of two
    model -> score series.

    Computed on the models both rankings contain. Scores are used directly: both coefficients
    depend on the order only, and tied scores become tied ranks (tau-b corrects for them).
    """
    common = x.dropna().index.intersection(y.dropna().index)
    xv = x.loc[common].to_numpy(dtype=float)
    yv = y.loc[common].to_numpy(dtype=float)
    return _correlations(xv, yv)


def _correlations(xv: npt.NDArray[np.float64], yv: npt.NDArray[np.float64]) -> dict[str, float]:
    """``rank_correlation`` of two aligned arrays of scores (no NaN)."""
    n = len(xv)
    if n < 3 or np.ptp(xv) == 0 or np.ptp(yv) == 0:  # too few models, or a constant ranking
        nan = float("nan")
        return {
            "n_models": n,
            "spearman_rho": nan,
            "spearman_p": nan,
            "kendall_tau_b": nan,
            "kendall_p": nan,
        }
    return {"n_models": n, **rank_tests.correlations(xv, yv)}


def _scored(ranking: pd.Series) -> tuple[dict[object, int], npt.NDArray[np.float64]]:
    """The models a ranking scores (model -> position) and their scores, NaN left out."""
    scored = ranking.dropna()
    return {m: i for i, m in enumerate(scored.index)}, scored.to_numpy(dtype=float)


_CORR_COLS = {
    "ranking_a": "str",
    "ranking_b": "str",
    "n_models": "int64",
    "spearman_rho": "float64",
    "spearman_p": "float64",
    "kendall_tau_b": "float64",
    "kendall_p": "float64",
}


def correlation_table(rankings: Mapping[str, pd.Series]) -> pd.DataFrame:
    """Spearman / Kendall for every pair of named rankings (model -> score, higher is better).

    Each ranking's scored models are looked up once; a pair's common models keep the first
    ranking's order, as ``rank_correlation``'s index intersection does.
    """
    names = list(rankings)
    scored = {name: _scored(rankings[name]) for name in names}
    rows = []
    for i, a in enumerate(names):
        a_pos, a_values = scored[a]
        for b in names[i + 1 :]:
            b_pos, b_values = scored[b]
            common = [(p, b_pos[m]) for m, p in a_pos.items() if m in b_pos]
            xv = a_values[[p for p, _ in common]]
            yv = b_values[[q for _, q in common]]
            rows.append({"ranking_a": a, "ranking_b": b, **_correlations(xv, yv)})
    if not rows:
        return empty_frame(_CORR_COLS)
    return pd.DataFrame(rows)[list(_CORR_COLS)]
