"""Group sums and means over integer keys that are pandas' groupby figures, float for float."""

from __future__ import annotations

import weakref

import numpy as np
import numpy.typing as npt
import pandas as pd


def dense_codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Integer codes 0..n-1 of the values and n: the offset from the smallest for integers in a
    short range (item ids), else a factorisation. Equal values, equal codes."""
    if values.dtype.kind in "iu" and len(values):
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < 4 * len(values) + 1024:
            return (values - lo).astype(np.int64), hi - lo + 1
    codes, uniq = pd.factorize(values)
    return codes.astype(np.int64), len(uniq)


def whole_numbers(values: np.ndarray) -> bool:
    """Whether every value is a whole number below 2**31 in size (no NaN): sums of up to 2**22
    of them are exact in float64, in any order."""
    if not len(values) or len(values) > 2**22 or not np.array_equal(values, np.floor(values)):
        return False
    return float(np.abs(values).max()) < 2**31


def group_means(
    key: np.ndarray, values: np.ndarray, n_keys: int, *, whole: bool | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(keys present ascending, mean per key): pandas' groupby mean. Whole numbers (stars) sum
    exactly in any order, so their sums come from a bincount (the same floats, sum / count);
    other values go through the groupby (its compensated sum). ``whole``: ``whole_numbers``
    of a superset of the values, if known."""
    whole = whole_numbers(values) if whole is None else whole
    if whole:
        keys = None
        if n_keys > 4 * len(key) + 1024:  # sparse keys: numbered in ascending order first
            key, keys = pd.factorize(key, sort=True)
            n_keys = len(keys)
        count = np.bincount(key, minlength=n_keys)
        at = np.flatnonzero(count)
        mean = np.bincount(key, values, n_keys)[at] / count[at]
        return (at if keys is None else np.asarray(keys)[at]), mean
    means = pd.Series(values).groupby(key, sort=True).mean()
    return means.index.to_numpy(), means.to_numpy()


def counted_shares(df: pd.DataFrame, keys: list[str], flag: str, names: list[str]) -> pd.DataFrame:
    """The groupby of the categorical ``keys`` (observed combinations, in category order) with
    the size and mean of the boolean ``flag``, from a count per combined code: the mean of
    flags is their integer sum over the size, the same float."""
    codes = [df[k].cat.codes.to_numpy().astype(np.int64) for k in keys]
    sizes = [len(df[k].cat.categories) for k in keys]
    ok = np.logical_and.reduce([c >= 0 for c in codes])  # a missing label: no group
    cell = np.zeros(int(ok.sum()), dtype=np.int64)
    for c, n in zip(codes, sizes, strict=True):
        cell = cell * n + c[ok]
    total = int(np.prod(sizes))
    size = np.bincount(cell, minlength=total)
    hits = np.bincount(cell, df[flag].to_numpy(bool)[ok], minlength=total)
    at = np.flatnonzero(size)
    out = {}
    for k, n in reversed(list(zip(keys, sizes, strict=True))):
        at, code = np.divmod(at, n) if False else (at, at % n)
        out[k] = code
        at = at // n
    cells = np.flatnonzero(size)
    table = pd.DataFrame({k: pd.Categorical.from_codes(out[k], dtype=df[k].dtype) for k in keys})
    table[names[0]] = size[cells]
    table[names[1]] = hits[cells] / size[cells]
    return table


def unit_keys(j: pd.DataFrame) -> npt.NDArray[np.int64]:
    """One integer per (mode, criterion, rater, item) of the judgements: equal keys, the same
    unit (mixed radix of the four columns' codes; computed once per report and shared by the
    first-rating flags and the consistency units)."""
    key = np.zeros(len(j), dtype=np.int64)
    size = 1  # the number of keys so far
    for col in ("mode", "criterion", "rater_id", "item_id"):
        codes, n = unit_codes(j[col], size)
        key = key * n + codes
        size *= n
    return key


def unit_codes(values: pd.Series, size: int) -> tuple[npt.NDArray[np.int64], int]:
    """Codes 0..n-1 of a column (equal values, equal codes) and n: a categorical's codes (1 up;
    0 is missing), integers less their minimum, else a factorisation (NaN its own code). Only
    equality matters, and the mixed radix must stay below 2**62."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        n = len(values.cat.categories) + 1
        if size * n < 2**62:
            return values.cat.codes.to_numpy().astype(np.int64) + 1, n
    elif values.dtype.kind in "iu" and len(values):
        v = values.to_numpy()
        lo, hi = int(v.min()), int(v.max())
        if size * (hi - lo + 1) < 2**62:
            return (v - lo).astype(np.int64), hi - lo + 1
    codes, uniq = pd.factorize(values, use_na_sentinel=False)
    return codes.astype(np.int64), max(len(uniq), 1)


# The unit keys of the frames ``agreement.judgements`` returned, while they live (by object: a frame
# derived from one is a new object and gets its keys computed again).
_UNITS: dict[int, tuple[weakref.ref[pd.DataFrame], npt.NDArray[np.int64]]] = {}


def remember_units(j: pd.DataFrame, key: npt.NDArray[np.int64]) -> None:
    """Keep ``key`` (``unit_keys(j)``) for ``known_units`` while ``j`` lives."""
    ident = id(j)
    _UNITS[ident] = (weakref.ref(j, lambda _ref: _UNITS.pop(ident, None)), key)


def known_units(j: pd.DataFrame) -> npt.NDArray[np.int64] | None:
    """``unit_keys(j)`` when ``j`` is a frame ``agreement.judgements`` returned (as it returned it)."""
    hit = _UNITS.get(id(j))
    if hit is None:
        return None
    n = len(j)
    if hit[0]() is not j or len(hit[1]) != n:
        return None
    return hit[1]
