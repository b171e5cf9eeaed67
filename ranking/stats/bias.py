"""Length bias, human-vs-judge gaps, hint effect, position bias, diagnostics (discrimination:
``discrimination.py``)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from . import mwu
from .grouped import dense_codes, group_means
from .position import SIDES, side_codes, side_flags
from .position import position_bias as position_bias  # the report reads it here
from .rankings import choice_score
from .schema import (
    codes_and_names,
    concat_aligned,
    empty_frame,
    rows_frame,
)

# --------------------------------------------------------------------------- length bias

_LEN_COLS = {
    "group_by": "str",
    "group": "str",
    "min_delta": "int64",
    "n": "int64",
    "win": "int64",
    "draw": "int64",
    "loss": "int64",
    "win_share": "float64",
    "draw_share": "float64",
    "loss_share": "float64",
}


def length_bias(pair_df: pd.DataFrame, thresholds: Sequence[int] = (100, 300)) -> pd.DataFrame:
    """Among pairwise ratings with |len_a - len_b| >= threshold, how often the longer answer won,
    drew (tie or both bad) or lost; per rater kind and per pool (seed Table 3)."""
    if pair_df.empty:
        return empty_frame(_LEN_COLS)
    delta = (pair_df["len_a"] - pair_df["len_b"]).to_numpy()
    s = choice_score(pair_df["choice"])
    # Score of the longer answer: A's score when A is longer, else B's.
    longer = np.where(delta > 0, s, 1.0 - s)
    # Outcome codes win 0, draw 1, loss 2; counts per group by integer codes and bincount.
    outcome = 1 + (longer == 0.0).astype(np.int64) - (longer == 1.0)
    absd = np.abs(delta)
    groups = {}
    for group_by in ("rater_kind", "pool"):
        # The labels present, in name order (codes order the rows as the names sort).
        codes, names = codes_and_names(pair_df[group_by])
        present = np.flatnonzero(np.bincount(codes, minlength=len(names)))
        groups[group_by] = (codes, [(str(names[c]), c) for c in present], len(names))
    rows = []
    for t in thresholds:
        keep = absd >= t
        for group_by in ("rater_kind", "pool"):
            codes, order, n_codes = groups[group_by]
            ok = keep & (codes >= 0)
            counts = np.bincount(codes[ok] * 3 + outcome[ok], minlength=3 * n_codes)
            for grp, code in order:
                win, draw, loss = (int(x) for x in counts[3 * code : 3 * code + 3])
                n = win + draw + loss
                rows.append(
                    (group_by, grp, int(t), n, win, draw, loss)
                    + ((win / n, draw / n, loss / n) if n else (np.nan,) * 3)
                )
    return pd.DataFrame(rows, columns=list(_LEN_COLS))


# --------------------------------------------------------------------------- human vs judge gaps

_GAP_COLS = {
    "criterion": "str",
    "k": "float64",
    "n_items": "int64",
    "n_at_least_k": "int64",
    "share": "float64",
}


def gaps(
    star_df: pd.DataFrame,
    ks: Iterable[float] | None = None,
    ranges: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Share of items where |mean human score - mean judge score| >= k, per criterion.

    Only first ratings count and only items rated by at least one human and one judge. With one
    human panel and one judge per item (LLMEval-2) this is exactly the paper's Tables 4-5.
    ``ks`` default: 1, 2, ... up to the criterion's span: the rubric's range (``ranges``, max -
    min) or the range of the scores it received where that is wider, at least 1; so a
    criterion whose every score is the same keeps its rows (each share 0) instead of vanishing.
    """
    keep = (~star_df["is_repeat"] & star_df["score"].notna()).to_numpy(bool)
    if not keep.any():
        return empty_frame(_GAP_COLS)
    crit, crits = codes_and_names(star_df["criterion"][keep])
    kind, kinds = codes_and_names(star_df["rater_kind"][keep])
    item, n_items = dense_codes(star_df["item_id"].to_numpy()[keep])
    score = star_df["score"].to_numpy(float)[keep]
    present = set(kinds[_present(kind, len(kinds))])
    if "human" not in present or "judge" not in present:
        return empty_frame(_GAP_COLS)
    # Mean per (criterion, item, kind): the groupby mean of the three labels, on one key.
    n_kinds = len(kinds)
    key = (crit * n_items + item) * n_kinds + kind
    at, mean = group_means(key, score, len(crits) * n_items * n_kinds)
    unit, of_kind = np.divmod(at, n_kinds)
    human, judge = of_kind == list(kinds).index("human"), of_kind == list(kinds).index("judge")
    both, h, j = np.intersect1d(unit[human], unit[judge], assume_unique=True, return_indices=True)
    diff = np.abs(mean[human][h] - mean[judge][j])
    unit_crit = both // n_items
    span_of = pd.Series(score).groupby(crit).agg(["min", "max"])
    rows = []
    for c in _present(unit_crit, len(crits)):
        d = diff[unit_crit == c]
        span = float(span_of.loc[c, "max"] - span_of.loc[c, "min"])
        span = max(span, float((ranges or {}).get(str(crits[c]), 0.0)), 1.0)
        levels = list(ks) if ks is not None else list(range(1, int(np.floor(span)) + 1))
        for k in levels:
            hit = int((d >= k - 1e-9).sum())
            rows.append((str(crits[c]), float(k), len(d), hit, hit / len(d) if len(d) else np.nan))
    return rows_frame(rows, _GAP_COLS)


# --------------------------------------------------------------------------- hint effect

_HINT_COLS = {
    "mode": "str",
    "metric": "str",
    "criterion": "str",
    "n_hint": "int64",
    "n_no_hint": "int64",
    "mean_hint": "float64",
    "mean_no_hint": "float64",
    "diff": "float64",
    "rel_diff": "float64",
    "welch_t": "float64",
    "welch_p": "float64",
    "mannwhitney_p": "float64",
}


def _compare(
    x: np.ndarray, y: np.ndarray, counts: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[float, float, float]:
    """Welch t (statistic, p) and Mann-Whitney p of x (hint) vs y (no hint). ``counts``: how
    often each distinct value (ascending) occurs in x and in y, for the p from counts
    (``mwu.mannwhitney_p``, scipy's figure without ranking the samples)."""
    nan = float("nan")
    if len(x) < 2 or len(y) < 2:
        return nan, nan, nan
    with np.errstate(all="ignore"), warnings.catch_warnings():
        # Identical samples (e.g. a criterion every answer maxes out) make scipy warn about
        # precision loss; the resulting nan / p-value is reported as is.
        warnings.simplefilter("ignore", RuntimeWarning)
        t = stats.ttest_ind(x, y, equal_var=False)
        if counts is not None and mwu.asymptotic(len(x), len(y)):
            u = mwu.mannwhitney_p(*counts)
        else:
            try:
                u = stats.mannwhitneyu(x, y, alternative="two-sided").pvalue
            except ValueError:
                u = nan
    return float(t.statistic), float(t.pvalue), float(u)


_HintRow = tuple[str, str, str, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]


def _hint_rows(
    mode: str, metric: str, values: np.ndarray, hint: np.ndarray, crit: pd.Series
) -> list[_HintRow]:
    """(mode, metric, criterion, hint values, no-hint values, their value counts) for "overall"
    and each criterion present (in name order), the values in row order as a groupby split
    gives them: one stable sort of the small (criterion, hint) key, and one count of the coded
    values per key."""
    codes, names = codes_and_names(crit)
    vcodes, k = mwu.value_codes(values)
    present = _present(codes, len(names))
    slot = np.zeros(len(names), dtype=np.int64)
    slot[present] = 2 * np.arange(len(present))
    group = slot[codes] + ~hint  # per criterion present: hint first, then no hint
    size = np.bincount(group, minlength=2 * len(present))
    counts = np.bincount(group * k + vcodes, minlength=2 * len(present) * k).reshape(-1, k)
    parts = np.split(values[np.argsort(group.astype(np.int16), kind="stable")], np.cumsum(size))
    out = [("overall", values[hint], values[~hint], counts[0::2].sum(0), counts[1::2].sum(0))]
    for i, c in enumerate(present):
        h, nh = 2 * i, 2 * i + 1
        out.append((str(names[c]), parts[h], parts[nh], counts[h], counts[nh]))
    return [(mode, metric, name, x, y, (cx, cy)) for name, x, y, cx, cy in out]


def _present(codes: np.ndarray, n: int) -> np.ndarray:
    """The codes (0 <= code < n) used, ascending: a count per code, no sort or hash."""
    return np.flatnonzero(np.bincount(codes, minlength=n))


def hint_effect(star_df: pd.DataFrame, flags: pd.DataFrame | None = None) -> pd.DataFrame:
    """Mean stars and accuracy with vs without the hint, where ``hint_shown`` takes both values.

    ``diff`` = no hint - hint and ``rel_diff`` = diff / mean with hint: the paper reports that
    annotators scored 9.79 % higher without hints. Tests: Welch's t and Mann-Whitney U.
    """
    rows: list[_HintRow] = []
    known = star_df["hint_shown"].notna().to_numpy() & star_df["score"].notna().to_numpy()
    hint = star_df["hint_shown"].to_numpy(dtype=bool, na_value=False)
    if known.any() and 0 < hint[known].sum() < known.sum():
        score = star_df["score"].to_numpy(float)[known]
        rows += _hint_rows("star", "score", score, hint[known], star_df["criterion"][known])
    if flags is not None and len(flags):
        known = flags["hint_shown"].notna().to_numpy()
        hint = flags["hint_shown"].to_numpy(dtype=bool, na_value=False)
        mode, modes = codes_and_names(flags["mode"])
        accurate = flags["accurate"].to_numpy(float)
        for c in _present(mode[known], len(modes)):
            sel = known & (mode == c)
            if hint[sel].all() or not hint[sel].any():
                continue
            crit = flags["criterion"][sel]
            rows += _hint_rows(str(modes[c]), "accuracy", accurate[sel], hint[sel], crit)
    out = []
    for mode_name, metric, crit_name, h, nh, counts in rows:
        mh = float(h.mean()) if len(h) else np.nan
        mn = float(nh.mean()) if len(nh) else np.nan
        diff = mn - mh
        rel = diff / mh if mh else np.nan
        row = (mode_name, metric, crit_name, len(h), len(nh), mh, mn, diff, rel)
        out.append((*row, *_compare(h, nh, counts)))
    return rows_frame(out, _HINT_COLS)


# --------------------------------------------------------------------------- diagnostics

_DIAG_COLS = {
    "rater_id": "str",
    "rater_kind": "str",
    "pool": "str",
    "n_ratings": "int64",
    "n_star": "int64",
    "n_pairwise": "int64",
    "left_of_decisive": "float64",
    "left_bias_p": "float64",
    "tie_share": "float64",
    "both_bad_share": "float64",
    "tie_ratio_to_pool": "float64",
    "both_bad_ratio_to_pool": "float64",
    "median_duration_s": "float64",
    "star_mean": "float64",
}


def _pair_diagnostics(base: pd.DataFrame, pair_df: pd.DataFrame) -> pd.DataFrame:
    """Add the pairwise columns to the per-rater ``base``: left share of decisive choices and its
    exact binomial p, tie and both-bad shares and their ratio to the rater's pool."""
    cols = ("left_of_decisive", "left_bias_p", "tie_share", "both_bad_share")
    if not len(pair_df):
        for c in (*cols, "tie_ratio_to_pool", "both_bad_ratio_to_pool"):
            base[c] = np.nan
        return base
    # Counts per rater code (the groupby sums of the flags, as integers).
    sides = side_codes(side_flags(pair_df))
    rater, names = codes_and_names(pair_df["rater_id"])
    counts = _side_counts(rater, len(names), sides)
    size = counts.sum(axis=1)
    seen = size > 0
    g = pd.DataFrame(
        dict(zip(SIDES, counts[seen].T, strict=False)),
        index=pd.Index(names[seen], name="rater_id"),
    )
    n = pd.Series(size[seen], index=g.index)
    dec = g["left"] + g["right"]
    base["left_of_decisive"] = (g["left"] / dec.where(dec > 0)).reindex(base.index)
    # Exact binomial p per rater, vectorised: two-sided p = min(1, 2 * min tail).
    k, m = g["left"].to_numpy(), dec.to_numpy()
    with np.errstate(all="ignore"):
        tail = np.minimum(stats.binom.cdf(k, m, 0.5), stats.binom.sf(k - 1, m, 0.5))
    pval = pd.Series(np.where(m > 0, np.minimum(1.0, 2.0 * tail), np.nan), index=g.index)
    base["left_bias_p"] = pval.reindex(base.index)
    base["tie_share"] = (g["tie"] / n).reindex(base.index)
    base["both_bad_share"] = (g["both_bad"] / n).reindex(base.index)
    pool, pools = codes_and_names(pair_df["pool"])
    per_pool = _side_counts(pool, len(pools), sides)
    pool_tie, pool_bb = (_pool_shares(per_pool, pools, SIDES.index(k)) for k in ("tie", "both_bad"))
    base_pool = base["pool"].astype(str)
    base["tie_ratio_to_pool"] = base["tie_share"] / base_pool.map(pool_tie).astype(float)
    base["both_bad_ratio_to_pool"] = base["both_bad_share"] / base_pool.map(pool_bb).astype(float)
    return base


def _side_counts(codes: np.ndarray, n: int, sides: np.ndarray) -> np.ndarray:
    """(code x side) counts of the rows, sides as ``position.side_codes`` (one bincount)."""
    k = len(SIDES) + 1
    return np.bincount(codes * k + sides, minlength=n * k).reshape(n, k)


def _pool_shares(counts: np.ndarray, names: np.ndarray, side: int) -> pd.Series:
    """Share of the ``side`` per pool present, by name (0 as NaN): counts per pool code, the
    same figure as a groupby mean of the flags (integer sums, one division)."""
    n = counts.sum(axis=1)
    hits = counts[:, side].astype(float)
    seen = n > 0
    return pd.Series(hits[seen] / n[seen], index=names[seen]).replace(0, np.nan)


def _per_rater(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Per rater (the groupby of the parts one under the other, as ``concat_aligned`` stacks
    them): first kind and pool, ratings, star ratings, median seconds. With categorical labels
    the rows are not stacked: the codes are mapped to the union's categories and counted."""
    labels_ = ("rater_id", "rater_kind", "pool")
    if not all(isinstance(p[c].dtype, pd.CategoricalDtype) for p in parts for c in labels_):
        return (
            concat_aligned(parts)
            .groupby("rater_id")
            .agg(
                rater_kind=("rater_kind", "first"),
                pool=("pool", "first"),
                n_ratings=("rating_id", "size"),
                n_star=("is_star", "sum"),
                median_duration_s=("duration_s", "median"),
            )
        )
    codes, dtypes = {}, {}
    for c in labels_:
        cats = parts[0][c].cat.categories
        if len(parts) > 1:  # concat_aligned's union of the categories, sorted
            cats = pd.Index(sorted({str(x) for p in parts for x in p[c].cat.categories}))
        dtypes[c] = parts[0][c].dtype if len(parts) == 1 else pd.CategoricalDtype(cats)
        to_union = [cats.get_indexer(p[c].cat.categories.astype(str)) for p in parts]
        codes[c] = np.concatenate(
            [
                np.append(m, -1)[p[c].cat.codes.to_numpy()]
                for m, p in zip(to_union, parts, strict=True)
            ]
        )
    rater = codes["rater_id"]
    n = len(dtypes["rater_id"].categories)
    first = np.full(n, len(rater), dtype=np.int64)
    np.minimum.at(first, rater, np.arange(len(rater)))
    seen = np.flatnonzero(first < len(rater))
    duration = np.concatenate([p["duration_s"].to_numpy(float) for p in parts])
    star = np.concatenate([p["is_star"].to_numpy(np.int64) for p in parts])
    index = pd.CategoricalIndex(
        pd.Categorical.from_codes(seen, dtype=dtypes["rater_id"]), name="rater_id"
    )
    out = {
        c: pd.Categorical.from_codes(codes[c][first[seen]], dtype=dtypes[c]) for c in labels_[1:]
    }
    median = pd.Series(duration).groupby(rater).median()
    return pd.DataFrame(
        {
            **out,
            "n_ratings": np.bincount(rater, minlength=n)[seen],
            "n_star": np.bincount(rater, star, n)[seen].astype(np.int64),
            "median_duration_s": median.reindex(seen).to_numpy(),
        },
        index=index,
    )


def annotator_diagnostics(star_df: pd.DataFrame, pair_df: pd.DataFrame) -> pd.DataFrame:
    """Per rater: counts, left/right bias (binomial p), tie and both-bad shares and their ratio to
    the pool's share (overuse > 1), median seconds per rating, mean stars given."""
    cols = ["rating_id", "rater_id", "rater_kind", "pool", "duration_s"]
    parts = []
    if len(star_df):
        s = star_df.drop_duplicates("rating_id")
        parts.append(s[cols].assign(is_star=np.ones(len(s), dtype=np.int64)))
    if len(pair_df):
        parts.append(pair_df[cols].assign(is_star=np.zeros(len(pair_df), dtype=np.int64)))
    if not parts:
        return empty_frame(_DIAG_COLS)
    base = _per_rater(parts)
    base["n_pairwise"] = base["n_ratings"] - base["n_star"]
    base = _pair_diagnostics(base, pair_df)
    if len(star_df):
        base["star_mean"] = star_df.groupby("rater_id")["score"].mean().reindex(base.index)
    else:
        base["star_mean"] = np.nan
    out = base.reset_index()
    for c in ("n_ratings", "n_star", "n_pairwise"):
        out[c] = out[c].astype(np.int64)
    return out[list(_DIAG_COLS)].sort_values(["pool", "rater_id"]).reset_index(drop=True)
