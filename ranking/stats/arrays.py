"""Small array helpers shared by the statistics.

``np.unique(x)`` without ``return_*`` arguments takes numpy's hash-based path (numpy >= 2.3),
which on this project's numpy is several times slower than sorting: 0.2 s for 429k integer ids
with 176k distinct values, 1.1 s for 1M distinct ones (docs/decisions/report-speed.md, "Seventh
round, kernels"). ``distinct`` gives the same array through pandas' hash table and a sort of
the distinct values only.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from .schema import codes_and_names


def distinct(values: npt.ArrayLike) -> np.ndarray:
    """The sorted distinct values of a 1-D array: ``np.unique(values)``, element for element
    (a NaN, if any, once and last)."""
    out: np.ndarray = np.sort(pd.unique(np.asarray(values).ravel()))
    return out


def key_groups(key: npt.ArrayLike, n_keys: int) -> list[tuple[int, np.ndarray]]:
    """(key, its row positions in ascending order) for every key in 0..n_keys-1 that occurs, in
    key order: the groups a sorted groupby over the key lists, with each group's rows in their
    order. One comparison of the column per key, so for a handful of keys (no sort, no frame)."""
    key = np.asarray(key)
    if not len(key):
        return []
    present = np.flatnonzero(np.bincount(key, minlength=n_keys))
    return [(int(k), np.flatnonzero(key == k)) for k in present]


def mode_criterion_groups(f: pd.DataFrame) -> list[tuple[str, str, np.ndarray]]:
    """(mode, criterion, row positions) of the judgements ``f`` per (mode, criterion), in name
    order: what ``f.groupby(["mode", "criterion"], sort=True, observed=True)`` lists for the
    coerced frames (categories in sorted order), as row positions instead of frame copies."""
    mode, mode_names = codes_and_names(f["mode"])
    crit, crit_names = codes_and_names(f["criterion"])
    n_c = len(crit_names)
    return [
        (str(mode_names[k // n_c]), str(crit_names[k % n_c]), rows)
        for k, rows in key_groups(mode * n_c + crit, len(mode_names) * n_c)
    ]


def first_ratings(j: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """The first-rating judgements of ``j`` with (at least) the columns ``cols``:
    ``j.loc[j["is_first"], cols]``, or ``j`` itself when every row is a first rating (the judge
    section selects them once for all its tables: ``judge_report.FIRST_COLUMNS``)."""
    if not len(j):
        return j
    first = j["is_first"].to_numpy(bool)
    return j if bool(first.all()) else j.loc[first, cols]


def run_pairs(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every two positions a < b within a run of equal values of ``key`` (equal values
    contiguous, e.g. sorted): the runs by length (ascending), then by position, each run's pairs
    in ``np.triu_indices`` order."""
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    sizes = np.diff(np.r_[starts, len(key)])
    a_idx, b_idx = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for m in distinct(sizes[sizes >= 2]):
        base = starts[sizes == m]
        a, b = np.triu_indices(int(m), k=1)
        a_idx.append((base[:, None] + a[None, :]).ravel())
        b_idx.append((base[:, None] + b[None, :]).ravel())
    return np.concatenate(a_idx), np.concatenate(b_idx)


def rater_pairs(
    rater: np.ndarray, n_r: int, a: np.ndarray, b: np.ndarray, min_common: int
) -> tuple[np.ndarray, np.ndarray]:
    """(pair id per row pair, pair keys ``rater[a] * n_r + rater[b]``) of the rater pairs of the
    row pairs (a, b): the pairs of two different raters with at least ``min_common`` row pairs,
    in order of first appearance (``pd.factorize`` of the keys, the pairs kept renumbered in
    their order); the row pairs of the other pairs get the id ``len(keys)`` (a spare slot, so
    no row pair is filtered out)."""
    # The keys fit 32 bits for fewer than 46341 raters: a cheaper hash table, the same order.
    r = rater.astype(np.int32) if n_r * n_r < 2**31 else rater.astype(np.int64)
    pid, pairs = pd.factorize(r[a] * r.dtype.type(n_r) + r[b])
    pairs = pairs.astype(np.int64)
    # Most pairs share an item or two: their tables are not counted.
    kept = (np.bincount(pid, minlength=len(pairs)) >= min_common) & (pairs // n_r != pairs % n_r)
    if kept.all():
        return pid, pairs
    new_id = np.where(kept, np.cumsum(kept) - 1, int(kept.sum()))
    return new_id[pid], pairs[kept]


def joint_tables(pid: np.ndarray, n_p: int, va: np.ndarray, vb: np.ndarray, k: int) -> np.ndarray:
    """Per pair id (0..n_p-1): the k x k counts of its (va, vb) value codes (0..k-1); ids of
    n_p and more (``rater_pairs``' spare slot) are not counted."""
    cells = np.bincount((pid * k + va) * k + vb, minlength=(n_p + 1) * k * k)
    out: np.ndarray = cells[: n_p * k * k].reshape(n_p, k, k)
    return out
