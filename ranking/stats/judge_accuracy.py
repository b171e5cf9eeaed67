"""Accuracy within sigma in three labelled variants, and star ratings against the human mean.

Accuracy within sigma (docs/statistics.md "Ground truth and accuracy") asks whether a rating lies
within one standard deviation of the item's mean rating. The paper puts every rater in the truth,
so a rater partly agrees with itself: on LLMEval-2 GPT-4 and the humans both get 0.7174. Three
variants, each labelled in the ``variant`` column:

* ``paper``          truth = mean and sigma of all raters' first ratings, the rater included;
* ``leave_one_out``  truth = mean and sigma of the *other* raters' first ratings (at least
                     ``min_others``, default 1, of them; with one other rating sigma is 0 and
                     "accurate" means equal to it);
* ``humans_only``    truth = mean and sigma of the humans' first ratings, the rater left out
                     (for a judge: all humans on the item; for a human: the other humans).

With S = sum, Q = sum of squares and n = count of the reference ratings, mean = S / n and
sigma^2 = Q / n - mean^2 (ddof = 0; ddof = 1 multiplies by n / (n - 1)). Leaving x out is
S - x, Q - x^2, n - 1, so every variant is a vectorised pass over the judgements.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from .arrays import distinct, first_ratings
from .schema import codes_and_names, empty_frame

VARIANTS = ("paper", "leave_one_out", "humans_only")

VARIANT_COLS = {
    "variant": "str",
    "mode": "str",
    "group_by": "str",
    "group": "str",
    "n_raters": "int64",
    "n_judgements": "int64",
    "n_accurate": "int64",
    "accuracy": "float64",
}
STAR_AGREE_COLS = {
    "criterion": "str",
    "group_by": "str",
    "group": "str",
    "n_judgements": "int64",
    "mae": "float64",
    "pearson": "float64",
    "spearman": "float64",
}


# The judgement columns the tables below read (only these are copied with the first ratings).
_READ = ["mode", "rater_id", "rater_kind", "pool", "item_id", "criterion", "score"]


def unit_codes(f: pd.DataFrame) -> np.ndarray:
    """One integer per (mode, item, criterion) of the judgements (hashing one int64 key is much
    cheaper than grouping by three columns; mode and criterion by their category codes)."""
    if not len(f):
        return np.zeros(0, dtype=np.int64)
    mode, mode_names = codes_and_names(f["mode"])
    crit, crit_names = codes_and_names(f["criterion"])
    item = pd.factorize(f["item_id"])[0].astype(np.int64)
    key = (item * len(crit_names) + crit) * len(mode_names) + mode
    codes: npt.NDArray[np.int64] = pd.factorize(key)[0]
    return codes


def _unit_sums(
    x: np.ndarray, unit: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per judgement: S, Q, n of its unit's ratings where ``mask`` holds."""
    xm = np.where(mask, x, 0.0)
    s = np.bincount(unit, weights=xm)
    q = np.bincount(unit, weights=xm * xm)
    n = np.bincount(unit, weights=mask.astype(float))
    return s[unit], q[unit], n[unit]


def within_sigma(
    x: np.ndarray, s: np.ndarray, q: np.ndarray, n: np.ndarray, ddof: int
) -> np.ndarray:
    """Is x within one sigma of the reference (S, Q, n)? Exactly equal when sigma is 0."""
    with np.errstate(all="ignore"):
        mean = s / n
        var = np.maximum(q / n - mean**2, 0.0)
        if ddof:
            var = var * n / np.maximum(n - ddof, 1)
        sigma = np.sqrt(var)
    diff = np.abs(x - mean)
    within: npt.NDArray[np.bool_] = np.where(sigma <= 1e-9, diff <= 1e-9, diff < sigma)
    return within


def _reference(
    x: np.ndarray, unit: np.ndarray, human: np.ndarray, variant: str, min_others: int
) -> tuple[np.ndarray, ...]:
    """(S, Q, n, usable) of each judgement's reference ratings under ``variant``."""
    if variant == "humans_only":
        s, q, n = _unit_sums(x, unit, human)
        drop = human
    else:
        s, q, n = _unit_sums(x, unit, np.ones(len(x), bool))
        drop = np.ones(len(x), bool) if variant == "leave_one_out" else np.zeros(len(x), bool)
    s = s - np.where(drop, x, 0.0)
    q = q - np.where(drop, x * x, 0.0)
    n = n - drop
    # The paper's variant needs two ratings in the unit (the rater and one more); the others need
    # ``min_others`` reference ratings besides the rater.
    usable = n >= (2 if variant == "paper" else min_others)
    return s, q, n, usable


def _group_codes(values: pd.Series, mask: np.ndarray) -> tuple[npt.NDArray[np.int64], list[str]]:
    """Integer group per row (-1 outside ``mask``) and the sorted names of the groups present
    under ``mask`` (category codes renumbered: no string per row is hashed or compared)."""
    raw, names = codes_and_names(values)
    present = distinct(raw[mask])
    rank = np.full(len(names), -1, dtype=np.int64)
    rank[present] = np.arange(len(present))
    codes = np.full(len(values), -1, dtype=np.int64)
    codes[mask] = rank[raw[mask]]
    return codes, [str(names[i]) for i in present]


def _groups(f: pd.DataFrame, human: np.ndarray) -> list[tuple[str, np.ndarray, list[str]]]:
    """(group_by, group code per row, group names) for judges, human pools and all humans."""
    judge = (f["rater_kind"] == "judge").to_numpy(bool)
    everyone = np.full(len(f), -1, dtype=np.int64)
    everyone[human] = 0
    return [
        ("judge", *_group_codes(f["rater_id"], judge)),
        ("pool", *_group_codes(f["pool"], human)),
        ("humans", everyone, ["all"] if human.any() else []),
    ]


def _distinct_raters(group: np.ndarray, rater: np.ndarray, n_groups: int, n_r: int) -> np.ndarray:
    """Number of distinct raters per group code: a groups x raters presence table when it is
    small (a bincount, not a sort of every row), else the distinct (group, rater) keys."""
    if n_groups * n_r <= 1 << 24:
        seen = np.bincount(group * n_r + rater, minlength=n_groups * n_r).reshape(n_groups, n_r)
        counts: np.ndarray = (seen > 0).sum(axis=1)
        return counts
    return np.bincount(distinct(group * n_r + rater) // n_r, minlength=n_groups)


def accuracy_variants(
    j: pd.DataFrame, *, ddof: int = 0, min_others: int = 1, min_ratings: int = 0
) -> pd.DataFrame:
    """Accuracy within sigma per variant, mode and group (judge, human pool, all humans).

    Raters with fewer than ``min_ratings`` first ratings in a mode are not scored in it (their
    ratings stay in the others' truth), as ``accuracy_by_rater`` leaves them out.
    Groups are integer-coded once; every (variant, mode, grouping) is then three bincounts.
    """
    f = first_ratings(j, _READ)
    if f.empty:
        return empty_frame(VARIANT_COLS)
    x = f["score"].to_numpy(float)
    mode, mode_names = codes_and_names(f["mode"])
    rater = pd.factorize(f["rater_id"])[0].astype(np.int64)
    n_r = int(rater.max()) + 1
    human = (f["rater_kind"] == "human").to_numpy(bool)
    coded = _groups(f, human)
    unit = unit_codes(f)
    modes = distinct(mode)
    rows = []
    scored = _enough_ratings(f, rater, mode, min_ratings)
    for variant in VARIANTS:
        s, q, n, usable = _reference(x, unit, human, variant, min_others)
        usable &= scored
        acc = within_sigma(x, s, q, n, ddof) & usable
        for mi in modes:
            m, in_mode = str(mode_names[mi]), usable & (mode == mi)
            for group_by, codes, names in coded:
                sel = in_mode & (codes >= 0)
                g = codes[sel]
                k = np.bincount(g, minlength=len(names))
                hit = np.bincount(g, weights=acc[sel], minlength=len(names))
                raters = _distinct_raters(g, rater[sel], len(names), n_r)
                rows += [
                    (
                        variant,
                        m,
                        group_by,
                        names[i],
                        int(raters[i]),
                        int(k[i]),
                        int(hit[i]),
                        hit[i] / k[i],
                    )
                    for i in np.flatnonzero(k)
                ]
    return pd.DataFrame(rows, columns=list(VARIANT_COLS)) if rows else empty_frame(VARIANT_COLS)


def _enough_ratings(
    f: pd.DataFrame, rater: np.ndarray, mode: np.ndarray, min_ratings: int
) -> np.ndarray:
    """Per judgement: whether its rater has at least ``min_ratings`` first ratings in its mode
    (a first rating is one item: its criteria are several judgements of one rating)."""
    if min_ratings <= 0:
        return np.ones(len(f), bool)
    n_m = int(mode.max()) + 1
    cell = rater * n_m + mode
    item = pd.factorize(f["item_id"])[0].astype(np.int64)
    n_cells = (int(rater.max()) + 1) * n_m
    ratings = np.bincount(distinct(item * n_cells + cell) % n_cells, minlength=n_cells)
    enough: np.ndarray = ratings[cell] >= min_ratings
    return enough


def _corr(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), float("nan")
    pearson = float(np.corrcoef(x, y)[0, 1])
    spearman = float(np.corrcoef(stats.rankdata(x), stats.rankdata(y))[0, 1])
    return pearson, spearman


def star_vs_human_mean(j: pd.DataFrame) -> pd.DataFrame:
    """Per criterion: MAE, Pearson and Spearman of each judge's stars against the item's human
    mean, and of each human's stars against the other humans' mean (pooled per pool and overall).
    """
    # The mode compared as the column is (a categorical compares its codes): no string per row.
    f = j.loc[j["is_first"] & (j["mode"] == "star").to_numpy(bool), _READ] if len(j) else j
    if f.empty:
        return empty_frame(STAR_AGREE_COLS)
    x = f["score"].to_numpy(float)
    human = (f["rater_kind"] == "human").to_numpy(bool)
    s, _, n = _unit_sums(x, unit_codes(f), human)
    n = n - human
    with np.errstate(all="ignore"):
        ref = (s - np.where(human, x, 0.0)) / n
    usable = n >= 1
    # Integer codes in sorted name order: one integer comparison per row and group instead of
    # a string comparison (the same rows, in the same order, as comparing the names).
    crit, crit_names = codes_and_names(f["criterion"])
    rows = []
    coded = _groups(f, human)
    for ci, c in enumerate(crit_names):
        for group_by, codes, names in coded:
            base = usable & (crit == ci) & (codes >= 0)
            for gi in distinct(codes[base]):
                sel = base & (codes == gi)
                xs, rs = x[sel], ref[sel]
                rows.append(
                    (
                        str(c),
                        group_by,
                        names[gi],
                        int(sel.sum()),
                        float(np.abs(xs - rs).mean()),
                        *_corr(xs, rs),
                    )
                )
    return (
        pd.DataFrame(rows, columns=list(STAR_AGREE_COLS)) if rows else empty_frame(STAR_AGREE_COLS)
    )
