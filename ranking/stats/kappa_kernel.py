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


def _uniform(state: np.ndarray) -> float:
    """A uniform in [0, 1) from the splitmix64 stream whose state is ``state[0]`` (advanced).
    Inline in the compiled loop: several times cheaper than numba's ``np.random.random()``,
    which dominated the draws below."""
    s = state[0] + np.uint64(0x9E3779B97F4A7C15)
    state[0] = s
    z = (s ^ (s >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    value: float = np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)
    return value


def _binomial(n: int, q: float, state: np.ndarray) -> int:
    """One binomial draw. Small means by inversion (a few multiplications per unit of the mean,
    several times cheaper than the general sampler) with a uniform from ``state``; large ones
    by numpy's sampler (numba's stream, seeded per block too)."""
    flip = q > 0.5
    r = 1.0 - q if flip else q
    if n * r >= 30.0:
        return np.random.binomial(n, q)
    ratio = r / (1.0 - r)
    p = (1.0 - r) ** n
    u = _uniform(state)
    x = 0
    while u > p and x < n:
        u -= p
        p *= ratio * (n - x) / (x + 1)
        x += 1
    return n - x if flip else x


def _binomial_chain(
    cnt: np.ndarray, idx: np.ndarray, probs: np.ndarray, n: int, state: np.ndarray
) -> None:
    """One multinomial draw of n over the cells ``idx`` as a chain of binomials."""
    remaining = n
    rest = 1.0
    for t in range(len(idx) - 1):
        q = probs[t] / rest if rest > 0 else 1.0
        if q >= 1.0:
            x = remaining
        elif remaining > 0:
            x = _binomial(remaining, q, state)
        else:
            x = 0
        cnt[idx[t]] = x
        remaining -= x
        rest -= probs[t]
    cnt[idx[len(idx) - 1]] = remaining


def _cohen_boot_py(
    flat: np.ndarray, k: int, n_boot: int, seed: int, lo: np.ndarray, hi: np.ndarray
) -> None:
    np.random.seed(seed)
    state = np.full(1, np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15), dtype=np.uint64)
    vals = np.empty(n_boot)
    cnt = np.zeros(k * k)
    for p in range(flat.shape[0]):
        n = flat[p].sum()
        idx = np.nonzero(flat[p])[0]
        probs = flat[p][idx] / n
        # A binomial per non-empty cell, whatever the number of items: drawing few items one by
        # one (a uniform and a search each) was slower than the chain (seventh round).
        for b in range(n_boot):
            cnt[:] = 0.0
            _binomial_chain(cnt, idx, probs, n, state)
            po = 0.0
            pe = 0.0
            for i in range(k):
                po += cnt[i * k + i]
                row = 0.0
                col = 0.0
                for jj in range(k):
                    row += cnt[i * k + jj]
                    col += cnt[jj * k + i]
                pe += row * col
            po /= n
            pe /= n * n
            vals[b] = (po - pe) / (1.0 - pe) if pe < 1.0 - 1e-12 else np.nan
        good = vals[~np.isnan(vals)]
        m = len(good)
        if m == 0:
            lo[p] = np.nan
            hi[p] = np.nan
            continue
        good = np.sort(good)
        lo[p] = _percentile_sorted(good, m, 0.025)
        hi[p] = _percentile_sorted(good, m, 0.975)


# The compiled bootstrap, or None without numba.
_cohen_boot: Callable[[np.ndarray, int, int, int, np.ndarray, np.ndarray], None] | None
if HAVE_NUMBA:
    _percentile_sorted = numba.njit(cache=True, nogil=True)(_percentile_sorted)
    _uniform = numba.njit(cache=True, nogil=True, inline="always")(_uniform)
    _binomial = numba.njit(cache=True, nogil=True)(_binomial)
    _binomial_chain = numba.njit(cache=True, nogil=True)(_binomial_chain)
    _cohen_boot = numba.njit(cache=True, nogil=True)(_cohen_boot_py)
else:  # pragma: no cover
    _cohen_boot = None


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
