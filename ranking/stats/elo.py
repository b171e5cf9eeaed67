"""Elo ratings: in time order, over many shuffles of the same matches, and the last rounds.

Elo is sequential: match t needs the ratings left by match t-1, so it cannot be vectorised over
matches. Over *shuffles* it can: S orders of the same matches are S independent chains. The inner
loop is compiled with numba when it is installed (about 0.2 s for 100 shuffles x 100k matches on
one core); without numba a numpy version steps through the matches and updates all S chains at
once with fancy indexing (about 1-2 s for the same work). Both give identical numbers.

Paper, Equations 3-4: E_A = 1 / (1 + 10^((R_B - R_A) / 400)), R'_A = R_A + K (S_A - E_A), and
B moves by the opposite amount. K = 32, start 1500.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from . import parallel

try:  # numba is optional: it only makes the same loop faster.
    import numba as numba  # re-exported for kappa_kernel

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only where numba is absent
    # mypy cannot type an optional import (python/mypy#1297): the name is None without numba.
    numba = None  # type: ignore[assignment]
    HAVE_NUMBA = False

LN10_400 = np.log(10.0) / 400.0


@dataclass(frozen=True)
class EloRule:
    """The update rule's constants: K and every model's starting rating (the paper's 32, 1500)."""

    k: float = 32.0
    start: float = 1500.0


PAPER_RULE = EloRule()

# Paper appendix, Equations 11 and 14: Var[R_A^inf] = c * p (1 - p), with c from the Taylor
# expansion (32^2 / (1 - 0.632^2)) and from the linear fit on 1300..1700 (32^2 / (1 - 0.9264^2)).
ELO_VAR_TAYLOR = 1706.67
ELO_VAR_LINEAR_FIT = 7211.27


def analytic_variance(p: float) -> dict[str, float]:
    """The paper's approximate variance of a model's Elo rating for a judge of accuracy ``p``."""
    q = float(p) * (1.0 - float(p))
    return {
        "p": float(p),
        "var_linear_fit": ELO_VAR_LINEAR_FIT * q,
        "var_taylor": ELO_VAR_TAYLOR * q,
        "sd_linear_fit": float(np.sqrt(ELO_VAR_LINEAR_FIT * q)),
    }


def _play_py(r: np.ndarray, x: Any, y: Any, score: Any, k: float) -> None:
    """One game (Equations 3-4): ``x`` scored ``score`` against ``y`` and both ratings in ``r``
    move by the same amount. On scalars one chain plays; on index arrays (one slot per chain,
    never repeated within a step) every chain plays its game at once."""
    d = k * (score - 1.0 / (1.0 + np.exp((r[y] - r[x]) * LN10_400)))
    r[x] += d
    r[y] -= d


def _delta_py(r_x: float, r_y: float, score: float, k: float) -> float:
    """``_play``'s step for one chain from scalars: x gains, y loses this amount. The compiled
    loops update their rating arrays themselves: passing an array to a compiled function costs
    two atomic reference-count updates per call, about as much as the step itself."""
    d: float = k * (score - 1.0 / (1.0 + np.exp((r_y - r_x) * LN10_400)))
    return d


# The compiled kernels call the compiled step (a plain Python function would not compile).
_delta: Callable[[float, float, float, float], float] = (
    numba.njit(cache=True, nogil=True, inline="always")(_delta_py) if HAVE_NUMBA else _delta_py
)


def _elo_chains_py(
    a: np.ndarray,
    b: np.ndarray,
    s: np.ndarray,
    order: np.ndarray,
    n_models: int,
    k: float,
    start: float,
) -> np.ndarray:
    """Plain-loop kernel: ``order`` is (S, T) indices into the matches; returns (S, M) ratings."""
    n_chains, n_steps = order.shape
    out = np.full((n_chains, n_models), start)
    for i in range(n_chains):
        for t in range(n_steps):
            m = order[i, t]
            x, y = a[m], b[m]
            d = _delta(out[i, x], out[i, y], s[m], k)
            out[i, x] += d
            out[i, y] -= d
    return out


def _elo_history_py(
    a: np.ndarray,
    b: np.ndarray,
    s: np.ndarray,
    n_models: int,
    k: float,
    start: float,
    record_from: int,
) -> np.ndarray:
    """Ratings after each match from ``record_from`` on (row 0 = before that match)."""
    n_steps = len(a)
    hist = np.empty((n_steps - record_from + 1, n_models))
    r = np.full(n_models, start)
    for t in range(n_steps):
        if t == record_from:
            hist[0] = r
        d = _delta(r[a[t]], r[b[t]], s[t], k)
        r[a[t]] += d
        r[b[t]] -= d
        if t >= record_from:
            hist[t - record_from + 1] = r
    if record_from >= n_steps:
        hist[0] = r
    return hist


def _elo_shuffled_py(
    packed: np.ndarray,
    n_chains: int,
    n_models: int,
    n_groups: int,
    k: float,
    start: float,
    seeds: np.ndarray,
) -> np.ndarray:
    """Compiled variant that shuffles as it goes, so no (S, T) order array is ever built.

    ``packed`` holds one match per integer (``pack_matches``: a 265k-match study fits in the
    CPU cache), decoded with shifts. Each chain draws its permutation (Fisher-Yates) from its own
    splitmix64 stream seeded by ``seeds[i]``, so chains are independent of each other (and run on
    several threads without changing the result). The draw in [0, t] is the high word of
    ``z * (t + 1)`` (Lemire's multiply-shift from two 32 x 32 -> 64 bit products: no division;
    the bias is below 2^-32 for any t < 2^31). Returns (chains, 1 + groups, models): row 0 plays
    every match; with ``n_groups`` > 0, row 1 + g plays the matches of group g in the same
    shuffled order (a uniformly random order of that group's matches too).
    """
    n_steps = len(packed)
    shift = _pack_bits(n_models) + 2
    low = (1 << (shift - 2)) - 1
    out = np.full((n_chains, 1 + n_groups, n_models), start)
    for i in range(n_chains):
        order = packed.copy()
        state = np.uint64(seeds[i])
        for t in range(n_steps - 1, 0, -1):
            state = state + np.uint64(0x9E3779B97F4A7C15)
            z = state
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
            m = np.uint64(t + 1)
            hi = (z >> np.uint64(32)) * m + (((z & np.uint64(0xFFFFFFFF)) * m) >> np.uint64(32))
            j = np.int64(hi >> np.uint64(32))
            tmp = order[t]
            order[t] = order[j]
            order[j] = tmp
        for t in range(n_steps):
            code = order[t]
            x, y, score = (code >> shift) & low, (code >> 2) & low, (code & 3) * 0.5
            d = _delta(out[i, 0, x], out[i, 0, y], score, k)
            out[i, 0, x] += d
            out[i, 0, y] -= d
            if n_groups:
                g = 1 + (code >> (2 * shift - 2))
                d = _delta(out[i, g, x], out[i, g, y], score, k)
                out[i, g, x] += d
                out[i, g, y] -= d
    return out


def _pack_bits(n_models: int) -> int:
    """Bits of a model code in ``pack_matches`` (at least 1)."""
    bits = 1
    while (1 << bits) < n_models:
        bits += 1
    return bits


def pack_matches(
    a: np.ndarray, b: np.ndarray, s: np.ndarray, n_models: int, group: np.ndarray | None = None
) -> np.ndarray:
    """One integer per match: ``(((group << bits) | a) << bits | b) << 2 | 2 s`` (s in {0, 0.5,
    1}; ``bits`` per model code; no group: 0), int32 when it fits."""
    bits = _pack_bits(n_models)
    code = np.zeros(len(a), np.int64) if group is None else np.asarray(group, np.int64)
    code = (code << bits) | np.asarray(a, np.int64)
    code = (code << bits) | np.asarray(b, np.int64)
    code = (code << 2) | np.rint(np.asarray(s, float) * 2).astype(np.int64)
    top = int(code.max()) if len(code) else 0
    return code.astype(np.int32 if top < 2**31 else np.int64)


# The compiled kernels, or None (history: the plain loop) without numba.
_Kernel = Callable[..., npt.NDArray[Any]]
_elo_chains: _Kernel | None
_elo_history: _Kernel
_elo_shuffled: _Kernel | None
if HAVE_NUMBA:
    _pack_bits = numba.njit(cache=True, nogil=True)(_pack_bits)
    _elo_chains = numba.njit(cache=True, nogil=True)(_elo_chains_py)
    _elo_history = numba.njit(cache=True, nogil=True)(_elo_history_py)
    # Deliberately not parallel=True: numba's default "workqueue" threading layer aborts the
    # process when two threads (a threaded web server, a task worker) launch parallel kernels at
    # once. One core already does 100 x 100k matches in about 0.2 s.
    _elo_shuffled = numba.njit(cache=True, nogil=True)(_elo_shuffled_py)
else:  # pragma: no cover
    _elo_chains = None
    _elo_history = _elo_history_py
    _elo_shuffled = None


def elo_chains(
    a: np.ndarray,
    b: np.ndarray,
    s: np.ndarray,
    order: np.ndarray,
    n_models: int,
    *,
    rule: EloRule = PAPER_RULE,
    use_numba: bool | None = None,
) -> np.ndarray:
    """Final Elo ratings of S chains; chain i plays matches ``order[i]`` in that order."""
    a = np.ascontiguousarray(a, dtype=np.int64)
    b = np.ascontiguousarray(b, dtype=np.int64)
    s = np.ascontiguousarray(s, dtype=np.float64)
    order = np.ascontiguousarray(np.atleast_2d(order), dtype=np.int64)
    if use_numba is None:
        use_numba = HAVE_NUMBA
    if order.shape[1] == 0 or n_models == 0:
        return np.full((order.shape[0], n_models), float(rule.start))
    if use_numba and _elo_chains is not None:
        return _elo_chains(a, b, s, order, n_models, float(rule.k), float(rule.start))
    # Without numba: one Python step per match, each step vectorised over the S chains, which
    # share one flat rating array; the flat indices are transposed so step t reads one row.
    n_chains = order.shape[0]
    flat = np.full(n_chains * n_models, float(rule.start))
    offs = np.arange(n_chains)[:, None] * n_models
    ia = np.ascontiguousarray((a[order] + offs).T)
    ib = np.ascontiguousarray((b[order] + offs).T)
    ss = np.ascontiguousarray(s[order].T)
    for t in range(order.shape[1]):
        _play_py(flat, ia[t], ib[t], ss[t], float(rule.k))
    return flat.reshape(n_chains, n_models)


def elo_ratings(
    a: np.ndarray,
    b: np.ndarray,
    s: np.ndarray,
    n_models: int,
    *,
    rule: EloRule = PAPER_RULE,
) -> np.ndarray:
    """Elo ratings after playing the matches in the given order (time order)."""
    order = np.arange(len(a), dtype=np.int64)[None, :]
    ratings: npt.NDArray[np.float64] = elo_chains(a, b, s, order, n_models, rule=rule)[0]
    return ratings


def shuffle_orders(n_matches: int, n_shuffles: int, rng: np.random.Generator) -> np.ndarray:
    """(S, T) array: row i is a uniformly random permutation of the matches."""
    base = np.broadcast_to(np.arange(n_matches, dtype=np.int64), (n_shuffles, n_matches))
    return rng.permuted(base, axis=1)


def elo_shuffles(
    a: np.ndarray,
    b: np.ndarray,
    s: np.ndarray,
    n_models: int,
    *,
    n_shuffles: int = 100,
    rng: np.random.Generator,
    rule: EloRule = PAPER_RULE,
    use_numba: bool | None = None,
) -> np.ndarray:
    """(S, M) final ratings over ``n_shuffles`` random orders of the same matches.

    With numba the permutations are drawn inside the compiled loop from a seed taken from
    ``rng`` (reproducible, but not the same permutations as the numpy path would draw).
    """
    if use_numba is None:
        use_numba = HAVE_NUMBA
    if use_numba and _elo_shuffled is not None and len(a) and n_models and n_shuffles:
        packed = pack_matches(a, b, s, n_models)
        return _shuffled(packed, n_models, 0, n_shuffles, rng, rule)[:, 0]
    order = shuffle_orders(len(a), n_shuffles, rng)
    return elo_chains(a, b, s, order, n_models, rule=rule, use_numba=use_numba)


def _shuffled(
    packed: np.ndarray,
    n_models: int,
    n_groups: int,
    n_shuffles: int,
    rng: np.random.Generator,
    rule: EloRule,
) -> np.ndarray:
    """The compiled shuffles (``_elo_shuffled_py``), blocks of chains on the kernel threads.
    Each chain has its own seed: the blocks give the same ratings as one call."""
    assert _elo_shuffled is not None
    seeds = rng.integers(1, 2**63 - 1, size=n_shuffles, dtype=np.int64).astype(np.uint64)
    k, start = float(rule.k), float(rule.start)
    blocks = parallel.split(n_shuffles, parallel.KERNEL_THREADS)
    jobs = [(packed, c.stop - c.start, n_models, n_groups, k, start, seeds[c]) for c in blocks]
    return np.concatenate(parallel.kernel_map(_elo_shuffled, jobs))


def elo_shuffles_grouped(
    matches: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    n_models: int,
    *,
    n_shuffles: int = 100,
    rng: np.random.Generator,
    rule: EloRule = PAPER_RULE,
) -> tuple[np.ndarray, list[np.ndarray]] | None:
    """Shuffles of the union of the groups' matches and of each group, in one pass: each chain
    shuffles all matches once and every group's chain plays its own matches in that order (a
    uniformly random order of them). Model codes are shared by the groups. Returns (the union's
    (S, M) ratings, one (S, M) array per group), or None without numba."""
    if _elo_shuffled is None or not n_shuffles or not n_models:
        return None
    group = np.repeat(np.arange(len(matches)), [len(m[0]) for m in matches])
    a, b, s = (np.concatenate([m[i] for m in matches]) for i in range(3))
    if not len(a):
        return None
    out = _shuffled(
        pack_matches(a, b, s, n_models, group), n_models, len(matches), n_shuffles, rng, rule
    )
    return out[:, 0], [out[:, 1 + g] for g in range(len(matches))]


def elo_history(
    a: np.ndarray,
    b: np.ndarray,
    s: np.ndarray,
    n_models: int,
    *,
    last: int = 100,
    rule: EloRule = PAPER_RULE,
) -> np.ndarray:
    """Ratings over the last ``last`` matches in order: (last + 1, M), row 0 before them."""
    n = len(a)
    record_from = max(n - int(last), 0)
    if n == 0:
        return np.full((1, n_models), float(rule.start))
    return _elo_history(
        np.ascontiguousarray(a, dtype=np.int64),
        np.ascontiguousarray(b, dtype=np.int64),
        np.ascontiguousarray(s, dtype=np.float64),
        n_models,
        float(rule.k),
        float(rule.start),
        record_from,
    )


def ranks_desc(ratings: np.ndarray) -> np.ndarray:
    """Rank 1 = highest rating, along the last axis; equal ratings share the lowest rank (1 +
    the number of higher ratings: pandas' and scipy's method "min", as every other leaderboard).
    Until 2026-11-27 ties were broken by position, i.e. by model name."""
    higher = ratings[..., np.newaxis, :] > ratings[..., :, np.newaxis]
    return 1 + higher.sum(axis=-1)
