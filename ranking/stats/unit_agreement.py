"""The report's ``krippendorff`` and ``kappa`` tables over integer codes.

Krippendorff's alpha, Fleiss' kappa and the mean Cohen kappa per (mode, pool, criterion) and for
all pools together, on first ratings: the definitions are in ``agreement`` (and
docs/statistics.md). Here the first-rating judgements are coded once (mode, criterion, pool,
rater, item) and every group is a set of row positions, so no group copies a frame and the mean
Cohen kappa enumerates the pairs of ratings of an item from sorted positions instead of merging
the group with itself. The figures are the same as the frame formulas, bit for bit: the counts
are integers, and the mean over rater pairs takes the pairs in the order the self-merge listed
them (by the first rating of the pair's first rater, then its partner).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from .arrays import distinct
from .intervals import alpha_batch, fleiss_batch, patterns
from .schema import codes_and_names


def _first_seen(codes: np.ndarray) -> np.ndarray:
    """Codes renumbered in order of first appearance (``pd.factorize`` of integer codes)."""
    first: np.ndarray = pd.factorize(codes)[0].astype(np.int64)
    return first


def within_item_pairs(item: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every two rows p < q of the same item (positions into ``item``)."""
    order = np.argsort(item, kind="stable")
    it = item[order]
    starts = np.flatnonzero(np.r_[True, it[1:] != it[:-1]])
    sizes = np.diff(np.r_[starts, len(it)])
    i_idx, j_idx = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for m in distinct(sizes[sizes >= 2]):
        base = starts[sizes == m]
        a, b = np.triu_indices(int(m), k=1)
        i_idx.append(order[(base[:, None] + a[None, :]).ravel()])
        j_idx.append(order[(base[:, None] + b[None, :]).ravel()])
    return np.concatenate(i_idx), np.concatenate(j_idx)


def mean_cohen_codes(
    item: np.ndarray, rater: np.ndarray, value: np.ndarray, *, min_common: int = 5
) -> tuple[float, int]:
    """Mean Cohen's kappa over rater pairs with >= ``min_common`` common items (and expected
    agreement below 1), and the number of such pairs, from one group's rows in their order:
    ``agreement.mean_cohen_kappa`` over arrays."""
    if len(item) == 0:
        return float("nan"), 0
    v, cats = pd.factorize(value, sort=True)
    return _mean_cohen(item, rater, v.astype(np.int64), len(cats), min_common)


def _mean_cohen(
    item: np.ndarray, rater: np.ndarray, v: np.ndarray, n_c: int, min_common: int
) -> tuple[float, int]:
    """``mean_cohen_codes`` with the values coded 0..n_c-1 in sorted order."""
    rater = _first_seen(rater)
    p, q = within_item_pairs(item)
    # The self-merge's row for two ratings has the rater coded first on the left.
    swap = rater[p] > rater[q]
    left, right = np.where(swap, q, p), np.where(swap, p, q)
    ok = rater[left] != rater[right]
    left, right = left[ok], right[ok]
    if not len(left):
        return float("nan"), 0
    n_r = int(rater.max()) + 1
    pid, n_p = _pair_numbers(rater[left] * n_r + rater[right], left * len(item) + right)
    v1, v2 = v[left], v[right]
    n = np.bincount(pid, minlength=n_p).astype(float)
    agree = np.bincount(pid, weights=v1 == v2, minlength=n_p)
    m1 = np.bincount(pid * n_c + v1, minlength=n_p * n_c).reshape(n_p, n_c)
    m2 = np.bincount(pid * n_c + v2, minlength=n_p * n_c).reshape(n_p, n_c)
    po = agree / n
    pe = (m1 * m2).sum(axis=1) / n**2
    keep = (n >= min_common) & (pe < 1.0)
    if not keep.any():
        return float("nan"), 0
    kappa = (po[keep] - pe[keep]) / (1.0 - pe[keep])
    return float(kappa.mean()), int(keep.sum())


def _pair_numbers(pair: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, int]:
    """(number per row, count) of the rater pairs ``pair``, numbered in the order the self-merge
    listed them: by each pair's smallest row key ``key`` (unique per row). The sums over a pair
    do not depend on the row order, so only the numbering needs that order: one hash of the
    pairs and their smallest keys, not a sort of every row."""
    codes, uniq = pd.factorize(pair)
    smallest = np.full(len(uniq), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(smallest, codes, key)
    number = np.empty(len(uniq), dtype=np.int64)
    number[np.argsort(smallest)] = np.arange(len(uniq))
    return number[codes], len(uniq)


def _sub_codes(codes: np.ndarray, cats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted codes of a subset (``pd.factorize(values, sort=True)`` of the subset's values) from
    the sorted codes of all rows: the categories present, renumbered in order."""
    present = np.bincount(codes, minlength=len(cats)) > 0
    renumber = np.cumsum(present) - 1
    return renumber[codes], cats[present]


def _unit_figures(
    item: np.ndarray, c: np.ndarray, cats: np.ndarray, level: str
) -> tuple[float, float, int]:
    """(Krippendorff's alpha, Fleiss' kappa, number of items) of rows whose items all have at
    least two values (``item``: integer codes; ``c``: value codes in sorted ``cats``):
    ``krippendorff_alpha`` and ``fleiss_kappa`` of their count matrix."""
    if len(item) == 0:
        return float("nan"), float("nan"), 0
    k = len(cats)
    counts = np.bincount(item * k + c, minlength=(int(item.max()) + 1) * k).reshape(-1, k)
    counts = counts[counts.sum(axis=1) > 0]  # the items of the group (any order: patterns)
    uniq, freq = patterns(counts)
    weights = freq[None].astype(float)
    cats = np.asarray(cats, dtype=float)
    alpha = float(alpha_batch(uniq, cats, weights, level)[0])  # NaN when one value (D_e = 0)
    return alpha, float(fleiss_batch(uniq, weights)[0]), len(counts)


def _groups(f: pd.DataFrame) -> Iterator[tuple[tuple[str, str, str], np.ndarray]]:
    """((mode, pool, criterion), row positions) per (mode, criterion) in name order, first for
    all pools ("all"), then per pool present, in name order."""
    mode, mode_names = codes_and_names(f["mode"])
    crit, crit_names = codes_and_names(f["criterion"])
    pool, pool_names = codes_and_names(f["pool"])
    key = mode * len(crit_names) + crit
    # A handful of (mode, criterion) groups: one comparison of the key per group gives its rows
    # in ascending order, with no sort of the whole column nor of each group's rows.
    for k in np.flatnonzero(np.bincount(key, minlength=len(mode_names) * len(crit_names))):
        rows = np.flatnonzero(key == k)
        m, c = str(mode_names[mode[rows[0]]]), str(crit_names[crit[rows[0]]])
        yield (m, "all", c), rows
        for code in distinct(pool[rows]):
            yield (m, str(pool_names[code]), c), rows[pool[rows] == code]


def agreement_rows(
    f: pd.DataFrame, *, min_common: int = 5
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(krippendorff rows, kappa rows) of first-rating judgements ``f`` (see
    ``agreement.agreement_tables``)."""
    if f.empty:
        return [], []
    item_all = pd.factorize(f["item_id"])[0].astype(np.int64)
    rater_all = codes_and_names(f["rater_id"])[0]
    value_all = f["value"].to_numpy(dtype=float)
    vcode_all, vcats_all = pd.factorize(value_all, sort=True)
    coded = not (vcode_all < 0).any()
    a_rows, k_rows = [], []
    for (mode, pool, crit), rows in _groups(f):
        level = "ordinal" if mode == "star" else "nominal"
        item = item_all[rows]
        sizes = np.bincount(item)
        rows = rows[sizes[item] >= 2]
        if not len(rows) and pool != "all":
            # No item of this pool has two raters (e.g. one judge per item): nothing to agree on.
            continue
        item = item_all[rows]
        if coded:
            v, cats = _sub_codes(vcode_all[rows], vcats_all)
        else:  # a missing value: the subset's own factorisation, as the frame formulas do
            v, cats = pd.factorize(value_all[rows], sort=True)
        alpha, fleiss, n_units = _unit_figures(item, v, np.asarray(cats), level)
        a_rows.append((mode, pool, crit, level, alpha, n_units, len(rows)))
        ck, n_pairs = (
            _mean_cohen(item, rater_all[rows], v.astype(np.int64), len(cats), min_common)
            if len(rows)
            else (float("nan"), 0)
        )
        k_rows.append((mode, pool, crit, fleiss, n_units, ck, n_pairs))
    return a_rows, k_rows
