"""Cohen's kappa for every rater pair, Fleiss' kappa and Krippendorff's alpha, each with a
bootstrap 95 % interval over items (see ``intervals`` for how the resampling is vectorised).

Labels are the judgement values of ``agreement.judgements``: stars per criterion, and for
pairwise the four choices A, B, tie, both-bad (as in the ``kappa`` and ``krippendorff`` tables).
Only first ratings count.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from . import intervals as iv
from .arrays import (
    distinct,
    first_ratings,
    joint_tables,
    mode_criterion_groups,
    rater_pairs,
    run_pairs,
)
from .kappa_kernel import cohen_intervals_fast
from .schema import codes_and_names, empty_frame

# With fewer common items a pair's kappa interval spans most of [-1, 1] (n = 15: about
# [-0.1, 0.5]); such pairs are listed with their kappa and no interval, which also keeps the
# thousands of small crowd pairs from dominating the report's time. docs/statistics.md.
PAIR_INTERVAL_MIN_ITEMS = 30

PAIR_COLS = {
    "mode": "str",
    "criterion": "str",
    "rater_a": "str",
    "kind_a": "str",
    "rater_b": "str",
    "kind_b": "str",
    "n_items": "int64",
    "kappa": "float64",
    "ci_low": "float64",
    "ci_high": "float64",
}
CHANCE_COLS = {
    "mode": "str",
    "raters": "str",
    "criterion": "str",
    "statistic": "str",
    "estimate": "float64",
    "ci_low": "float64",
    "ci_high": "float64",
    "n_units": "int64",
    "n_values": "int64",
}


def pair_tables(
    rater: np.ndarray, n_r: int, values: np.ndarray, item_id: np.ndarray, min_common: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rater_1 codes, rater_2 codes, joint tables P x K x K) of one (mode, criterion)'s rows
    (``rater``: codes below ``n_r`` in name order): every two raters with at least
    ``min_common`` common items, ordered rater_1 < rater_2."""
    value, cats = pd.factorize(values, sort=True)
    item = pd.factorize(item_id)[0]
    # By item, then rater: one stable sort of a combined key (``np.lexsort((rater, item))``'s
    # order; the rows usually come nearly sorted by item, which a stable sort finds cheap).
    order = np.argsort(item.astype(np.int64) * n_r + rater, kind="stable")
    item, rater, value = item[order], rater[order], value[order]
    # Every pair of judgements within an item: items are contiguous after the sort.
    ii, jj = run_pairs(item)
    k = len(cats)
    if not len(ii):
        return np.zeros(0, int), np.zeros(0, int), np.zeros((0, k, k))
    pid, pairs = rater_pairs(rater, n_r, ii, jj, min_common)
    cells = joint_tables(pid, len(pairs), value[ii], value[jj], k)
    return pairs // n_r, pairs % n_r, cells


def _pair_intervals(
    tables: np.ndarray, n: np.ndarray, n_boot: int, min_items: int, rng: np.random.Generator
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Bootstrap intervals for the pairs with at least ``min_items`` common items (NaN else)."""
    lo, hi = np.full(len(n), np.nan), np.full(len(n), np.nan)
    big = n >= min_items
    if big.any():
        fast = cohen_intervals_fast(tables[big], n_boot, rng)
        lo[big], hi[big] = (
            fast if fast is not None else iv.cohen_intervals(tables[big], n_boot, rng)
        )
    return lo, hi


def _kinds(rater: np.ndarray, kind: np.ndarray, kind_names: np.ndarray, n_r: int) -> np.ndarray:
    """Each rater code's kind name, from its first row (``drop_duplicates`` of the rater
    column; ``kind``: codes of ``kind_names``)."""
    first = ~pd.Series(rater).duplicated().to_numpy()
    code = np.full(n_r, len(kind_names), dtype=np.int64)  # a rater without rows: NaN
    code[rater[first]] = kind[first]
    out: np.ndarray = np.append(np.asarray(kind_names, dtype=object), np.nan)[code]
    return out


def cohen_pairs(
    j: pd.DataFrame,
    *,
    min_common: int = 5,
    interval_min_items: int = PAIR_INTERVAL_MIN_ITEMS,
    n_boot: int = iv.N_BOOTSTRAP,
    rng: np.random.Generator | None = None,
) -> pd.DataFrame:
    """Cohen's kappa with a bootstrap interval for every two raters with >= ``min_common`` items
    in common, per (mode, criterion)."""
    # Only the columns read, as arrays; each (mode, criterion) is a set of row positions.
    cols = ["mode", "criterion", "rater_id", "rater_kind", "item_id", "value"]
    f = first_ratings(j, cols)
    rng = rng if rng is not None else np.random.default_rng(0)
    parts = []
    if len(f):
        rater, names = codes_and_names(f["rater_id"])
        kind, kind_names = codes_and_names(f["rater_kind"])
        item_id, value = f["item_id"].to_numpy(), f["value"].to_numpy()
    for mode, crit, at in mode_criterion_groups(f) if len(f) else []:
        r1, r2, tables = pair_tables(rater[at], len(names), value[at], item_id[at], min_common)
        n = tables.sum(axis=(1, 2))
        keep = n >= min_common
        r1, r2, tables, n = r1[keep], r2[keep], tables[keep], n[keep]
        if not len(n):
            continue
        lo, hi = _pair_intervals(tables, n, n_boot, interval_min_items, rng)
        kinds = _kinds(rater[at], kind[at], kind_names, len(names))
        parts.append(
            pd.DataFrame(
                {
                    "mode": mode,
                    "criterion": crit,
                    "rater_a": names[r1],
                    "kind_a": kinds[r1],
                    "rater_b": names[r2],
                    "kind_b": kinds[r2],
                    "n_items": n.astype(np.int64),
                    "kappa": iv.cohen_from_tables(tables),
                    "ci_low": lo,
                    "ci_high": hi,
                }
            )
        )
    return pd.concat(parts, ignore_index=True) if parts else empty_frame(PAIR_COLS)


def _coded(item_id: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(item code, value code, the values in sorted order) of one (mode, criterion)'s rows."""
    item = pd.factorize(item_id)[0]
    value, cats = pd.factorize(values, sort=True)
    return item, value, np.asarray(cats, dtype=float)


def _counts(
    coded: tuple[np.ndarray, np.ndarray, np.ndarray], sel: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Items x categories counts of the items with at least two values among the rows ``sel``
    (all: None), and the categories present there (as factorising those rows' values would
    give them). The item codes are the whole group's: items not in ``sel`` count nothing, and
    rows of zeros are dropped."""
    item, value, cats = coded
    if sel is not None:
        item, value = item[sel], value[sel]
        present = np.flatnonzero(np.bincount(value, minlength=len(cats)))
        if len(present) < len(cats):
            rank = np.full(len(cats), -1, dtype=np.int64)
            rank[present] = np.arange(len(present))
            value, cats = rank[value], cats[present]
    k = len(cats)
    counts = np.bincount(item * k + value, minlength=(item.max() + 1) * k).reshape(-1, k)
    return counts[counts.sum(axis=1) >= 2], cats


def _chance_rows(
    mode: str,
    raters: str,
    crit: str,
    counted: tuple[np.ndarray, np.ndarray],
    n_boot: int,
    rng: np.random.Generator,
) -> list[tuple[Any, ...]]:
    counts, cats = counted
    if not len(counts):
        return []
    uniq, freq = iv.patterns(counts)
    levels = ("nominal",) if mode == "pairwise" else ("ordinal", "interval")
    rows: list[tuple[Any, ...]] = []
    for stat, level in [("fleiss_kappa", ""), *((f"alpha_{lv}", lv) for lv in levels)]:
        kind = "fleiss" if stat == "fleiss_kappa" else "alpha"
        est, lo, hi = iv.with_interval(
            kind, uniq, cats, freq, level=level or "nominal", n_boot=n_boot, rng=rng
        )
        rows.append((mode, raters, crit, stat, est, lo, hi, len(counts), int(counts.sum())))
    return rows


def _subsets(
    human: np.ndarray, pool: np.ndarray, pool_names: np.ndarray
) -> list[tuple[str, np.ndarray | None]]:
    """("all", None), ("humans", rows) and one (pool, rows) per pool of the group's rows in
    sorted order (as a groupby over the pool column lists them), the rows as boolean masks
    (``pool``: the group's codes of the names ``pool_names``, sorted)."""
    out: list[tuple[str, np.ndarray | None]] = [("all", None), ("humans", human)]
    return out + [(str(pool_names[c]), pool == c) for c in distinct(pool)]


def chance_agreement(
    j: pd.DataFrame, *, n_boot: int = iv.N_BOOTSTRAP, rng: np.random.Generator | None = None
) -> pd.DataFrame:
    """Fleiss' kappa and Krippendorff's alpha (nominal for pairwise; ordinal and interval for
    stars) with bootstrap intervals, per (mode, raters, criterion). ``raters``: "all" (humans
    and judges), "humans", or one pool."""
    # Only the columns read, as arrays; each (mode, criterion) is a set of row positions.
    cols = ["mode", "criterion", "rater_kind", "pool", "item_id", "value"]
    f = first_ratings(j, cols)
    rng = rng if rng is not None else np.random.default_rng(0)
    rows: list[tuple[Any, ...]] = []
    if len(f):
        human = (f["rater_kind"] == "human").to_numpy(bool)
        pool, pool_names = codes_and_names(f["pool"])
        item_id, value = f["item_id"].to_numpy(), f["value"].to_numpy()
    for mode, crit, at in mode_criterion_groups(f) if len(f) else []:
        # Items and values coded once per group; each subset selects rows of the codes.
        coded = _coded(item_id[at], value[at])
        for raters, sel in _subsets(human[at], pool[at], pool_names):
            if sel is None or sel.any():
                counted = _counts(coded, sel)
                rows += _chance_rows(mode, raters, crit, counted, n_boot, rng)
    return pd.DataFrame(rows, columns=list(CHANCE_COLS)) if rows else empty_frame(CHANCE_COLS)
