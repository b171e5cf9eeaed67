"""Bootstrap intervals of Cohen's kappa for many rater pairs at once, compiled with numba.

A study with thousands of raters has thousands of rater pairs; 1,000 resamples each would cost
seconds through numpy's multinomial (one call per draw). The kernel here draws each resampled
joint table as a chain of binomials over the table's non-empty cells (the multinomial's
definition), computes kappa from it at once and keeps only the 2.5 % and 97.5 % percentiles
(numpy's "linear" rule), so nothing of size pairs x resamples is ever stored. Without numba the
same resampling runs through ``intervals.cohen_intervals`` (numpy's multinomial): both are item
bootstraps of the same tables; their random streams differ.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from . import parallel
from .elo import HAVE_NUMBA, numba


def _percentile_sorted(v: np.ndarray, m: int, q: float) -> float:
    pos = q * (m - 1)
    lo = int(np.floor(pos))
    hi = min(lo + 1, m - 1)
    value: float = v[lo] + (pos - lo) * (v[hi] - v[lo])
    return value


def _unit(s: np.uint64) -> float:
    """A uniform in [0, 1) from the splitmix64 state ``s`` (already advanced by the golden
    gamma): a scalar function, inline in the compiled loop (an array argument would cost two
    atomic reference-count updates per call)."""
    z = (s ^ (s >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    value: float = np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)
    return value


GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _search(n: int, m: int, f: float, ratio: float, u: float) -> int:
    """Inversion of Binomial(n, r) searched outward from its mode ``m`` (probability ``f``;
    ``ratio`` = r / (1 - r)): the values m, m+1, m-1, m+2, m-2, ... take consecutive stretches
    of [0, 1), each as long as its probability, and the stretch holding ``u`` is the draw. Any
    fixed order of the values gives the binomial distribution; this one takes about 0.8
    standard deviations of steps, where inversion from 0 takes about the mean."""
    u -= f
    if u < 0.0:
        return m
    lo, hi, f_lo, f_hi = m, m, f, f
    while lo > 0 or hi < n:
        if hi < n:
            f_hi *= ratio * (n - hi) / (hi + 1)
            hi += 1
            u -= f_hi
            if u < 0.0:
                return hi
        if lo > 0:
            f_lo *= lo / (ratio * (n - lo + 1))
            lo -= 1
            u -= f_lo
            if u < 0.0:
                return lo
    return m  # rounding left u past the whole support (probability about 1e-16)


def _pmf(log_choose: float, n: int, x: int, log_r: float, log_1r: float) -> float:
    """P(X = x) of Binomial(n, r), given log C(n, x)."""
    return math.exp(log_choose + x * log_r + (n - x) * log_1r)


def _log_factorials(n: int) -> np.ndarray:
    """log(i!) for i = 0..n (``math.lgamma``)."""
    out = np.empty(n + 1)
    for i in range(n + 1):
        out[i] = math.lgamma(i + 1.0)
    return out


def _pair_cells(table: np.ndarray, k: int, cells: np.ndarray, par: np.ndarray) -> int:
    """The chain of one pair's table (flat K x K counts): ``cells[t]`` = (row, column, flip)
    of the t-th non-empty cell, and ``par[t]`` = (r, log r, log(1 - r), r / (1 - r)) with
    r = min(q, 1 - q), q = its count / (its count and the later cells'); flip = q > 1/2 (the
    draw is then n - Binomial(n, r)). Returns the number of non-empty cells."""
    c = 0
    for i in range(k * k):
        if table[i] > 0:
            cells[c, 0], cells[c, 1], cells[c, 2] = i // k, i % k, table[i]
            c += 1
    left = 0
    for t in range(c - 1, -1, -1):
        left += cells[t, 2]
        q = cells[t, 2] / left
        cells[t, 2] = q > 0.5
        r = min(q, 1.0 - q)
        if r > 0.0:
            par[t, 0], par[t, 1], par[t, 2] = r, math.log(r), math.log1p(-r)
            par[t, 3] = r / (1.0 - r)
    return c


def _pair_kappas(
    n: int,
    k: int,
    c: int,
    cells: np.ndarray,
    par: np.ndarray,
    lf: np.ndarray,
    modes: np.ndarray,
    marg: np.ndarray,
    vals: np.ndarray,
    s: np.uint64,
    draws: np.ndarray,
) -> tuple[int, np.uint64]:
    """Kappa of ``len(vals)`` multinomial resamples of one pair's table (``_pair_cells``),
    each a chain of binomials over the non-empty cells, accumulating only what kappa reads
    (the diagonal and the margins). The defined kappas go to ``vals``; returns (how many,
    the stream's state). ``modes[t, left]``: the probability of the mode of cell t's binomial
    with ``left`` items, computed at its first use (negative until then). Variances above
    ``BTPE_VARIANCE`` go to numpy's sampler (numba's stream, seeded per block too). With
    ``draws`` of one row per resample (tests), each resample's cell counts are kept there."""
    m_ok = 0
    keep = draws.shape[0] == len(vals)
    for b in range(len(vals)):
        for i in range(2 * k):
            marg[i] = 0.0
        left, diag = n, 0
        for t in range(c):
            x = left if t == c - 1 else 0
            if t < c - 1 and left > 0:
                r = par[t, 0]
                if left * r * (1.0 - r) > BTPE_VARIANCE:
                    x = np.random.binomial(left, r)
                else:
                    mode = int((left + 1) * r)
                    f = modes[t, left]
                    if f < 0.0:
                        lc = lf[left] - lf[mode] - lf[left - mode]
                        f = _pmf(lc, left, mode, par[t, 1], par[t, 2])
                        modes[t, left] = f
                    s += GOLDEN
                    x = _search(left, mode, f, par[t, 3], _unit(s))
                if cells[t, 2]:
                    x = left - x
            if keep:
                draws[b, t] = x
            marg[cells[t, 0]] += x
            marg[k + cells[t, 1]] += x
            diag += x if cells[t, 0] == cells[t, 1] else 0
            left -= x
        pe = 0.0
        for i in range(k):
            pe += marg[i] * marg[k + i]
        pe /= n * n
        if pe < 1.0 - 1e-12:
            vals[m_ok] = (diag / n - pe) / (1.0 - pe)
            m_ok += 1
    return m_ok, s


def _cohen_boot_py(
    flat: np.ndarray, k: int, n_boot: int, seed: int, lo: np.ndarray, hi: np.ndarray
) -> None:
    np.random.seed(seed)
    s = np.uint64(seed) * GOLDEN
    n_max = int(flat.sum(axis=1).max()) if flat.shape[0] else 0
    lf = _log_factorials(n_max)
    vals = np.empty(n_boot)
    cells = np.zeros((k * k, 3), np.int64)
    par = np.zeros((k * k, 4))
    modes = np.empty((k * k, n_max + 1))
    marg = np.zeros(2 * k)
    no_draws = np.zeros((0, 0), np.int64)
    for p in range(flat.shape[0]):
        n = flat[p].sum()
        c = _pair_cells(flat[p], k, cells, par)
        modes[:c, : n + 1] = -1.0
        m, s = _pair_kappas(n, k, c, cells, par, lf, modes, marg, vals, s, no_draws)
        if m == 0:
            lo[p] = np.nan
            hi[p] = np.nan
            continue
        good = np.sort(vals[:m])
        lo[p] = _percentile_sorted(good, m, 0.025)
        hi[p] = _percentile_sorted(good, m, 0.975)


# The compiled bootstrap, or None without numba.
_cohen_boot: Callable[[np.ndarray, int, int, int, np.ndarray, np.ndarray], None] | None
if HAVE_NUMBA:
    _percentile_sorted = numba.njit(cache=True, nogil=True)(_percentile_sorted)
    _unit = numba.njit(cache=True, nogil=True, inline="always")(_unit)
    _search = numba.njit(cache=True, nogil=True, inline="always")(_search)
    _pmf = numba.njit(cache=True, nogil=True, inline="always")(_pmf)
    _log_factorials = numba.njit(cache=True, nogil=True)(_log_factorials)
    _pair_cells = numba.njit(cache=True, nogil=True)(_pair_cells)
    _pair_kappas = numba.njit(cache=True, nogil=True)(_pair_kappas)
    _cohen_boot = numba.njit(cache=True, nogil=True)(_cohen_boot_py)
else:  # pragma: no cover
    _cohen_boot = None


# Binomials of the chain with a variance up to this are drawn by the search from the mode
# (about 20-50 ns each); larger ones by numpy's sampler (BTPE: 40-140 ns whatever the mean).
BTPE_VARIANCE = 225.0


def resample_tables(table: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, K * K) resampled counts of one flat K x K table through the kernel's chain
    (its non-empty cells in order): for tests of the sampler's distribution."""
    k = math.isqrt(len(table))
    flat = np.ascontiguousarray(table, dtype=np.int64)
    n = int(flat.sum())
    cells, par = np.zeros((k * k, 3), np.int64), np.zeros((k * k, 4))
    c = _pair_cells(flat, k, cells, par)
    draws = np.zeros((n_boot, k * k), np.int64)
    np.random.seed(seed)
    modes = np.full((k * k, n + 1), -1.0)
    _pair_kappas(
        n,
        k,
        c,
        cells,
        par,
        _log_factorials(n),
        modes,
        np.zeros(2 * k),
        np.empty(n_boot),
        np.uint64(seed * int(GOLDEN) % 2**64),
        draws,
    )
    out = np.zeros((n_boot, k * k), np.int64)
    out[:, np.flatnonzero(flat)] = draws[:, :c]
    return out


# Pairs per block of the compiled bootstrap: each block draws from its own seed (spawned from
# one seed per table), and the blocks run on the kernel threads (``parallel``). A fixed size, so
# the intervals do not depend on the number of threads.
PAIRS_PER_BLOCK = 256


def cohen_intervals_fast(
    tables: np.ndarray, n_boot: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray] | None:
    """(ci_low, ci_high) per pair from the compiled kernel, or None without numba."""
    if _cohen_boot is None:
        return None
    p, k, _ = tables.shape
    lo, hi = np.full(p, np.nan), np.full(p, np.nan)
    if p == 0 or n_boot == 0:
        return lo, hi
    flat = np.ascontiguousarray(tables.reshape(p, k * k), dtype=np.int64)
    starts = range(0, p, PAIRS_PER_BLOCK)
    seeds = parallel.block_seeds(int(rng.integers(0, 2**31 - 1)), len(starts))
    jobs = []
    for i, seed in zip(starts, seeds, strict=True):
        part = slice(i, i + PAIRS_PER_BLOCK)  # views: the kernel writes into lo and hi
        jobs.append((flat[part], k, n_boot, seed, lo[part], hi[part]))
    parallel.kernel_map(_cohen_boot, jobs)
    return lo, hi
