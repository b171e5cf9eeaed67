"""Chance-corrected agreement with bootstrap 95 % intervals over items, vectorised.

Fleiss' kappa and Krippendorff's alpha depend on the items only through each item's vector of
counts per category, and Cohen's kappa of two raters only through their joint table. Items with
the same count vector are interchangeable, so drawing items with replacement is the same as
drawing, for every distinct count vector ("pattern"), how many times it appears: a multinomial
over the patterns with their observed shares. With three raters and five star values there are
at most a few dozen patterns, so 1,000 resamples cost a (1000 x patterns) matrix product instead
of 1,000 passes over the items. The resample is exact, not an approximation: it is the
distribution of the item bootstrap.

Every function takes a ``numpy.random.Generator``; the report seeds it, so intervals repeat.
Intervals are percentile intervals (2.5 % and 97.5 % of the resampled values, NaNs left out).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

N_BOOTSTRAP = 1000


def nan_quantiles(values: np.ndarray, qs: list[float], axis: int = 0) -> np.ndarray:
    """``np.nanquantile(values, qs, axis)`` where a slice with no finite value (a figure
    undefined in every resample) gives NaN without numpy's "All-NaN slice" warning: only the
    slices with a value are passed to numpy (the same numbers), and no warning filter is
    changed (those are process-wide, and reports run on several threads)."""
    moved = np.moveaxis(np.asarray(values, dtype=float), axis, 0)
    flat = moved.reshape(moved.shape[0], -1)
    out = np.full((len(qs), flat.shape[1]), np.nan)
    ok = ~np.isnan(flat).all(axis=0)
    if ok.any():
        out[:, ok] = np.nanquantile(flat[:, ok], qs, axis=0)
    return out.reshape((len(qs), *moved.shape[1:]))


def percentile_interval(values: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(2.5 %, 97.5 %) percentiles, ignoring NaN (a resample where a figure is undefined)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return np.full(values.shape[1:], np.nan), np.full(values.shape[1:], np.nan)
    lo, hi = nan_quantiles(values, [0.025, 0.975], axis=axis)
    return lo, hi


def patterns(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of an items x categories count matrix and how often each occurs.

    Each row is packed into one int64 (its counts as digits in base max + 1), so finding the
    distinct rows is a 1-D ``np.unique`` instead of a row-wise sort."""
    counts = np.asarray(counts, dtype=np.int64)
    if counts.size == 0:
        return counts.reshape(0, counts.shape[1] if counts.ndim == 2 else 0), np.zeros(0, int)
    k = counts.shape[1]
    base = int(counts.max()) + 1
    if k * np.log2(max(base, 2)) >= 62:
        return np.unique(counts, axis=0, return_counts=True)
    weights = base ** np.arange(k, dtype=np.int64)
    keys, freq = np.unique(counts @ weights, return_counts=True)
    uniq = (keys[:, None] // weights[None, :]) % base
    return uniq, freq


def resample_weights(freq: np.ndarray, n_boot: int, rng: np.random.Generator | None) -> np.ndarray:
    """(1 + n_boot) x patterns weights: row 0 the observed counts, then item-bootstrap draws."""
    freq = np.asarray(freq, dtype=np.int64)
    total = int(freq.sum())
    if total == 0 or n_boot == 0 or rng is None:
        return freq[None, :].astype(float)
    draws = rng.multinomial(total, freq / total, size=n_boot)
    return np.vstack([freq[None, :], draws]).astype(float)


def fleiss_batch(uniq: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Fleiss' kappa for each row of pattern weights (see ``agreement.fleiss_kappa``)."""
    uniq = np.asarray(uniq, dtype=float)
    n_i = uniq.sum(axis=1)
    ok = n_i >= 2
    uniq, n_i, weights = uniq[ok], n_i[ok], weights[:, ok]
    if len(n_i) == 0:
        return np.full(weights.shape[0], np.nan)
    p_i = ((uniq**2).sum(axis=1) - n_i) / (n_i * (n_i - 1))
    n_units = weights.sum(axis=1)
    with np.errstate(all="ignore"):
        p_bar = weights @ p_i / n_units
        p_j = (weights @ uniq) / (weights @ n_i)[:, None]
        pe = (p_j**2).sum(axis=1)
        out = (p_bar - pe) / (1.0 - pe)
    return np.where(pe < 1.0 - 1e-12, out, np.nan)


def _delta(level: str, cats: np.ndarray, n_c: np.ndarray) -> np.ndarray:
    """Distance metric, (K x K) or (B x K x K) when it depends on the marginals (ordinal)."""
    k = len(cats)
    if level == "nominal":
        return 1.0 - np.eye(k)
    if level == "interval":
        squared: npt.NDArray[np.float64] = np.subtract.outer(cats, cats) ** 2
        return squared
    if level == "ordinal":
        cum = np.cumsum(n_c, axis=-1)
        idx = np.arange(k)
        lo, hi = np.minimum.outer(idx, idx), np.maximum.outer(idx, idx)
        below = np.where(lo > 0, cum[..., np.maximum(lo - 1, 0)], 0.0)
        between = cum[..., hi] - below
        ordinal: npt.NDArray[np.float64] = (
            between - (n_c[..., :, None] + n_c[..., None, :]) / 2.0
        ) ** 2
        return ordinal
    raise ValueError(f"unknown level {level!r}")


def alpha_batch(uniq: np.ndarray, cats: np.ndarray, weights: np.ndarray, level: str) -> np.ndarray:
    """Krippendorff's alpha for each row of pattern weights (coincidence-matrix form).

    A unit with count vector n_u and m_u = sum n_u values adds (n_u n_u^T - diag n_u) / (m_u - 1)
    to the coincidence matrix; alpha = 1 - (n - 1) sum(o * delta) / sum(n_c n_k^T * delta).
    """
    uniq = np.asarray(uniq, dtype=float)
    m = uniq.sum(axis=1)
    ok = m >= 2
    uniq, m, weights = uniq[ok], m[ok], weights[:, ok]
    k = uniq.shape[1] if uniq.ndim == 2 else 0
    if len(m) == 0 or k < 2:
        return np.full(weights.shape[0], np.nan)
    contrib = (uniq[:, :, None] * uniq[:, None, :]) - np.einsum("uk,kl->ukl", uniq, np.eye(k))
    contrib /= (m - 1.0)[:, None, None]
    coinc = (weights @ contrib.reshape(len(m), k * k)).reshape(-1, k, k)
    n_c = coinc.sum(axis=2)
    n = n_c.sum(axis=1)
    delta = _delta(level, np.asarray(cats, dtype=float), n_c)
    d_o = (coinc * delta).sum(axis=(1, 2))
    d_e = (n_c[:, :, None] * n_c[:, None, :] * delta).sum(axis=(1, 2))
    with np.errstate(all="ignore"):
        out = 1.0 - (n - 1.0) * d_o / d_e
    return np.where(d_e > 0, out, np.nan)


def cohen_from_tables(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa from joint tables (..., K, K) of two raters' labels."""
    t = np.asarray(tables, dtype=float)
    n = t.sum(axis=(-1, -2))
    with np.errstate(all="ignore"):
        po = np.trace(t, axis1=-2, axis2=-1) / n
        pe = (t.sum(axis=-1) * t.sum(axis=-2)).sum(axis=-1) / n**2
        out = (po - pe) / (1.0 - pe)
    return np.where((n > 0) & (pe < 1.0 - 1e-12), out, np.nan)


def cohen_intervals(
    tables: np.ndarray, n_boot: int, rng: np.random.Generator, chunk: int = 256
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap intervals of Cohen's kappa for P pairs' joint tables (P x K x K).

    Resampling a pair's common items with replacement is a multinomial draw over its table's cells.
    Pairs are processed in chunks so memory stays at chunk x n_boot x K^2.
    """
    p, k, _ = tables.shape
    lo, hi = np.full(p, np.nan), np.full(p, np.nan)
    if p == 0 or n_boot == 0:
        return lo, hi
    flat = tables.reshape(p, k * k).astype(np.int64)
    n = flat.sum(axis=1)
    for start in range(0, p, chunk):
        sl = slice(start, start + chunk)
        nn = n[sl]
        pv = flat[sl] / np.maximum(nn, 1)[:, None]
        draws = rng.multinomial(nn, pv, size=(n_boot, len(nn)))
        kap = cohen_from_tables(draws.reshape(n_boot, len(nn), k, k))
        lo[sl], hi[sl] = percentile_interval(kap, axis=0)
    return lo, hi


def with_interval(
    stat: str,
    uniq: np.ndarray,
    cats: np.ndarray,
    freq: np.ndarray,
    *,
    level: str,
    n_boot: int,
    rng: np.random.Generator | None,
) -> tuple[float, float, float]:
    """(estimate, ci_low, ci_high) of "fleiss" or "alpha" from item patterns."""
    w = resample_weights(freq, n_boot, rng)
    vals = fleiss_batch(uniq, w) if stat == "fleiss" else alpha_batch(uniq, cats, w, level)
    if len(vals) == 1:
        return float(vals[0]), float("nan"), float("nan")
    lo, hi = percentile_interval(vals[1:])
    return float(vals[0]), float(lo), float(hi)
