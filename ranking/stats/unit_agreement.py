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
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .arrays import joint_tables, rater_pairs, run_pairs
from .intervals import alpha_batch, fleiss_batch, patterns
from .schema import codes_and_names


def within_item_pairs(item: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every two rows p < q of the same item (positions into ``item``)."""
    order = np.argsort(item, kind="stable")
    a, b = run_pairs(item[order])
    return order[a], order[b]


def mean_cohen_codes(
    item: np.ndarray, rater: np.ndarray, value: np.ndarray, *, min_common: int = 5
) -> tuple[float, int]:
    """Mean Cohen's kappa over rater pairs with >= ``min_common`` common items (and expected
    agreement below 1), and the number of such pairs, from one group's rows in their order:
    ``agreement.mean_cohen_kappa`` over arrays."""
    if len(item) == 0:
        return float("nan"), 0
    v, cats = pd.factorize(value, sort=True)
    rater = pd.factorize(rater)[0].astype(np.int64)
    item = pd.factorize(item)[0].astype(np.int64)
    pk = _pair_kappas(item, rater, v.astype(np.int64), len(cats), min_common)
    return _subset_mean(pk, _ranks(rater, int(rater.max()) + 1))


@dataclass(frozen=True)
class _PairKappas:
    """The rater pairs (lo < hi, rater codes) of a group's rows with a kappa (>= min_common
    common items, expected agreement below 1), each with the smallest (row of lo, row of hi)
    and (row of hi, row of lo) key over its common items (row positions: any increasing
    numbering of the rows)."""

    lo: np.ndarray
    hi: np.ndarray
    kappa: np.ndarray
    key_lo_hi: np.ndarray
    key_hi_lo: np.ndarray


def _pair_kappas(
    item: np.ndarray,
    rater: np.ndarray,
    v: np.ndarray,
    n_c: int,
    min_common: int,
    pos: np.ndarray | None = None,
) -> _PairKappas:
    """``_PairKappas`` of rows with item codes ``item``, rater codes ``rater`` (>= 0) and value
    codes ``v`` (0..n_c-1, in sorted order); ``pos``: the rows' positions (default 0..n-1)."""
    pos = np.arange(len(item), dtype=np.int64) if pos is None else pos
    n_r = int(rater.max()) + 1 if len(rater) else 1
    # The pairs in any order (``_subset_mean`` orders them by key): by item, then rater, so a
    # pair's lower rater comes first, and the row pairs are near each other.
    order = np.argsort(item * n_r + rater, kind="stable")
    rater, v, pos = rater[order], v[order], pos[order]
    lo, hi = run_pairs(item[order])
    pid, pairs = rater_pairs(rater, n_r, lo, hi, min_common)
    cells = joint_tables(pid, len(pairs), v[lo], v[hi], n_c)
    # The same operations as the frame formulas (``agreement.cohen_kappa`` per pair): exact
    # integer counts, then the same float divisions.
    n = cells.sum(axis=(1, 2)).astype(float)
    agree = np.trace(cells, axis1=1, axis2=2).astype(float)
    po = agree / n
    pe = (cells.sum(axis=2) * cells.sum(axis=1)).sum(axis=1) / n**2
    keep = pe < 1.0  # and >= min_common common items, two raters: ``rater_pairs``
    with np.errstate(all="ignore"):
        kappa = (po[keep] - pe[keep]) / (1.0 - pe[keep])
    # Each row pair's kappa number; the pairs without a kappa share a spare last slot.
    number = np.r_[np.where(keep, np.cumsum(keep) - 1, len(kappa)), len(kappa)][pid]
    lo, hi = pos[lo], pos[hi]
    span = int(pos.max()) + 1 if len(pos) else 1
    big = np.iinfo(np.int64).max
    key_lo_hi, key_hi_lo = np.full(len(kappa) + 1, big), np.full(len(kappa) + 1, big)
    np.minimum.at(key_lo_hi, number, lo * span + hi)
    np.minimum.at(key_hi_lo, number, hi * span + lo)
    kept = pairs[keep]
    return _PairKappas(kept // n_r, kept % n_r, kappa, key_lo_hi[:-1], key_hi_lo[:-1])


def _ranks(rater: np.ndarray, n_r: int) -> np.ndarray:
    """Per rater code: its rank by first row among ``rater`` (-1 when absent)."""
    uniq = pd.unique(rater)
    rank = np.full(n_r, -1, dtype=np.int64)
    rank[uniq] = np.arange(len(uniq))
    return rank


def _subset_mean(pk: _PairKappas, rank: np.ndarray) -> tuple[float, int]:
    """Mean kappa of the pairs whose raters both have a rank (first-row order in the subset),
    and their number. The mean takes the pairs in the order the self-merge listed them: the
    rater seen first on the left, by each pair's smallest (left row, right row)."""
    r_lo, r_hi = rank[pk.lo], rank[pk.hi]
    inside = (r_lo >= 0) & (r_hi >= 0)
    if not inside.any():
        return float("nan"), 0
    key = np.where(r_lo < r_hi, pk.key_lo_hi, pk.key_hi_lo)[inside]
    kappa = pk.kappa[inside][np.argsort(key)]
    return float(kappa.mean()), len(kappa)


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


def _groups(
    f: pd.DataFrame, rater: np.ndarray
) -> Iterator[tuple[tuple[str, str, str], np.ndarray, bool]]:
    """((mode, pool, criterion), row positions, whole) per (mode, criterion) in name order,
    first for all pools ("all"), then per pool present, in name order. ``whole``: every rater of
    the (mode, criterion) has all its rows in one pool (then a pool's rater pairs are the "all"
    group's pairs of two raters of that pool, with the same common items)."""
    mode, mode_names = codes_and_names(f["mode"])
    crit, crit_names = codes_and_names(f["criterion"])
    pool, pool_names = codes_and_names(f["pool"])
    key = mode * len(crit_names) + crit
    pool_of = np.full(int(rater.max()) + 1, -1, dtype=np.int64)
    # A handful of (mode, criterion) groups: one comparison of the key per group gives its rows
    # in ascending order, with no sort of the whole column nor of each group's rows.
    for k in np.flatnonzero(np.bincount(key, minlength=len(mode_names) * len(crit_names))):
        rows = np.flatnonzero(key == k)
        m, c = str(mode_names[mode[rows[0]]]), str(crit_names[crit[rows[0]]])
        in_pool, of_rater = pool[rows], rater[rows]
        pool_of[of_rater] = in_pool
        whole = bool((pool_of[of_rater] == in_pool).all())
        yield (m, "all", c), rows, whole
        # The pools' rows in ascending order: one stable sort of the group's pool codes.
        ends = np.cumsum(np.bincount(in_pool, minlength=len(pool_names)))
        narrow = in_pool.astype(np.int16) if len(pool_names) <= 2**15 else in_pool
        by_pool = rows[np.argsort(narrow, kind="stable")]
        for code in np.flatnonzero(np.diff(np.r_[0, ends])):
            start = ends[code - 1] if code else 0
            yield (m, str(pool_names[code]), c), by_pool[start : ends[code]], whole


def agreement_rows(
    f: pd.DataFrame, *, min_common: int = 5
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(krippendorff rows, kappa rows) of first-rating judgements ``f`` (see
    ``agreement.agreement_tables``)."""
    if f.empty:
        return [], []
    item_all = pd.factorize(f["item_id"])[0].astype(np.int64)
    rater_all = codes_and_names(f["rater_id"])[0]
    n_r = int(rater_all.max()) + 1
    value_all = f["value"].to_numpy(dtype=float)
    vcode_all, vcats_all = pd.factorize(value_all, sort=True)
    coded = not (vcode_all < 0).any()
    a_rows, k_rows = [], []
    pk: _PairKappas | None = None  # the "all" group's pairs, shared by its pools when whole
    for (mode, pool, crit), rows, whole in _groups(f, rater_all):
        level = "ordinal" if mode == "star" else "nominal"
        item = item_all[rows]
        two = np.bincount(item)[item] >= 2
        if not two.all():
            rows, item = rows[two], item[two]
        if not len(rows) and pool != "all":
            # No item of this pool has two raters (e.g. one judge per item): nothing to agree on.
            continue
        rater = rater_all[rows]
        if coded:
            v, cats = _sub_codes(vcode_all[rows], vcats_all)
        else:  # a missing value: the subset's own factorisation, as the frame formulas do
            v, cats = pd.factorize(value_all[rows], sort=True)
        alpha, fleiss, n_units = _unit_figures(item, v, np.asarray(cats), level)
        a_rows.append((mode, pool, crit, level, alpha, n_units, len(rows)))
        if pool == "all" or not whole:
            pk = None
            if len(rows):
                codes = v.astype(np.int64)
                pk = _pair_kappas(item, rater, codes, len(cats), min_common, rows)
        ck, n_pairs = (
            _subset_mean(pk, _ranks(rater, n_r))
            if pk is not None and len(rows)
            else (float("nan"), 0)
        )
        k_rows.append((mode, pool, crit, fleiss, n_units, ck, n_pairs))
    return a_rows, k_rows
