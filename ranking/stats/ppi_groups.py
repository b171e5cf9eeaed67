"""Group numbers for the judge-assisted section (``ppi_section``, ``ppi_curve``): what
``frame.groupby(by, sort=True)`` numbers, from integer codes instead of a pandas groupby.

A categorical column is numbered by its codes (a categorical groups in category order), any
other column by ``pd.factorize(sort=True)`` (sorted values); several columns combine their codes
in lexicographic order, and the groups no row has are dropped (``observed``). A missing key is
group -1, in no group, as pandas drops it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .arrays import distinct

Codes = npt.NDArray[np.int64]


def sort_codes(values: pd.Series | pd.Index) -> tuple[Codes, np.ndarray]:
    """(code per row, value per code): codes order the rows as ``groupby(sort=True)`` orders
    the values; -1 where the value is missing."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        cat = values.array
        return np.asarray(cat.codes, dtype=np.int64), np.asarray(cat.categories, dtype=object)
    codes, levels = pd.factorize(np.asarray(values), sort=True)
    return codes.astype(np.int64), np.asarray(levels, dtype=object)


def group_numbers(frame: pd.DataFrame, by: list[str] | str) -> tuple[Codes, list[tuple[Any, ...]]]:
    """Each row's group number (-1: a missing key) and the groups' keys, both in the order of
    ``frame.groupby(by, sort=True)``."""
    cols = [by] if isinstance(by, str) else list(by)
    combined = np.zeros(len(frame), np.int64)
    missing = np.zeros(len(frame), bool)
    levels = []
    for col in cols:
        codes, lev = sort_codes(frame[col])
        missing |= codes < 0
        combined = combined * max(len(lev), 1) + codes
        levels.append(lev)
    valid = combined[~missing]
    size = int(np.prod([max(len(lev), 1) for lev in levels]))
    out = np.full(len(frame), -1, np.int64)
    if size <= 1 << 22:  # label columns: a count per combined code, a lookup per row
        used = np.flatnonzero(np.bincount(valid, minlength=size))
        number = np.zeros(size, np.int64)
        number[used] = np.arange(len(used))
        out[~missing] = number[valid]
    else:
        used = distinct(valid)
        out[~missing] = np.searchsorted(used, valid)
    keys = []
    for combined_code in used:
        key, rest = [], int(combined_code)
        for lev in reversed(levels):
            rest, c = divmod(rest, max(len(lev), 1))
            key.append(lev[c])
        keys.append(tuple(reversed(key)))
    return out, keys


def positions(numbers: Codes, n_groups: int) -> list[npt.NDArray[np.intp]]:
    """Each group's row positions in row order (a stable sort of the group numbers)."""
    if n_groups == 0:
        return []
    narrow = np.int8 if n_groups < 2**7 else np.int16 if n_groups < 2**15 else np.int64
    small = numbers.astype(narrow)  # stable radix sort of the narrowest integers
    order = np.argsort(small, kind="stable")
    order = order[numbers[order] >= 0]
    bounds = np.cumsum(np.bincount(numbers[order], minlength=n_groups))[:-1]
    return np.split(order, bounds)


def int_codes(values: np.ndarray, *, sort: bool) -> tuple[Codes, int]:
    """(code per row, number of codes) of an integer column: the values themselves when they
    are small non-negative integers (so the codes order the rows as the values do), else
    ``pd.factorize`` (in sorted order when ``sort``)."""
    if len(values) and values.dtype.kind in "iu":
        lo, hi = int(values.min()), int(values.max())
        if lo >= 0 and hi < 1 << 32:
            return values.astype(np.int64), hi + 1
    codes, uniq = pd.factorize(values, sort=sort)
    return codes.astype(np.int64), len(uniq)


def key_codes(values: pd.Series, *, sort: bool) -> tuple[Codes, int]:
    """(code per row, number of codes) of a key column: ``int_codes`` for integers, else
    ``sort_codes`` (so with ``sort`` the codes order the rows as ``groupby(sort=True)`` does)."""
    if values.dtype.kind in "iu":
        return int_codes(values.to_numpy(), sort=sort)
    codes, levels = sort_codes(values)
    return codes, len(levels)


def combined_key(parts: list[tuple[Codes, int]], *, sort: bool) -> Codes:
    """One integer per row, equal for two rows exactly when all their codes are; ordered as the
    codes are lexicographically when ``sort``; -1 where a code is -1 (a missing value)."""
    n = len(parts[0][0]) if parts else 0
    key, size = np.zeros(n, np.int64), 1
    missing = np.zeros(n, bool)
    for codes, n_codes in parts:
        if size * max(n_codes, 1) >= 1 << 62:  # renumber the distinct keys so far
            key, uniq = pd.factorize(key, sort=sort)
            size = len(uniq)
        missing |= codes < 0
        key, size = key * max(n_codes, 1) + codes, size * max(n_codes, 1)
    key[missing] = -1
    return key
