"""Two-sided p-values of Spearman's rho and Kendall's tau-b between two rankings of few models.

Both come from the permutation distribution: every pairing of the two rankings' ranks (ties kept
as mid-ranks) is equally likely when the rankings are unrelated. Up to ``EXACT_MAX`` models every
one of the n! pairings is counted (the exact p); beyond, the p is estimated from ``N_RANDOM``
random pairings drawn from a fixed seed, (1 + hits) / (1 + N_RANDOM). Kendall's p without ties
(up to 33 models) is scipy's exact p: the same distribution, counted by recursion.

The statistics are whole numbers, so no tolerance decides a tie with the observed value: with
a, b = 2 x mid-rank - (n + 1) of each ranking, rho is proportional to sum a_i b_i and tau-b to
S = sum over i < j of sign(x_i - x_j) sign(y_i - y_j); the factors are the same in every pairing,
so |rho| and |tau-b| order the pairings as |sum a b| and |S| do.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import numpy.typing as npt
from scipy import stats

# n! pairings are counted up to 9 models (362,880; about 0.1 s for both null distributions).
EXACT_MAX = 9
# Random pairings beyond: the p of a test at 0.05 is within 0.0014 (two standard errors).
N_RANDOM = 100_000
# The smallest drawn p: (1 + 0) / (1 + N_RANDOM) = 1/100,001 (9.9999e-06), "p <= 1/100,001".
P_FLOOR = 1 / (1 + N_RANDOM)
SEED = 0
# scipy's kendalltau(method="auto") is exact up to this many models when neither ranking ties.
KENDALL_EXACT_MAX = 33

IntArray = npt.NDArray[np.int64]


@functools.cache
def _orders(n: int) -> npt.NDArray[np.uint8]:
    """The pairings counted for n models, one per row: all n! up to EXACT_MAX, else N_RANDOM
    uniform random orders from the fixed seed."""
    if n <= EXACT_MAX:
        return _all_orders(n)
    rng = np.random.default_rng(SEED)
    return rng.permuted(np.tile(np.arange(n, dtype=np.uint8), (N_RANDOM, 1)), axis=1)


def _all_orders(n: int) -> npt.NDArray[np.uint8]:
    """All n! permutations of range(n), built by inserting k into every place of each
    permutation of range(k) (the rows in another order than itertools', the same set)."""
    out = np.zeros((1, 0), dtype=np.uint8)
    for k in range(n):
        m = len(out)
        grown = np.empty((m * (k + 1), k + 1), dtype=np.uint8)
        for place in range(k + 1):
            block = grown[place * m : (place + 1) * m]
            block[:, :place], block[:, place], block[:, place + 1 :] = (
                out[:, :place],
                k,
                out[:, place:],
            )
        out = grown
    return out


def centred_ranks(v: npt.NDArray[np.float64]) -> IntArray:
    """2 x the mid-ranks (1 = lowest; ties share their mean rank) - (n + 1): whole numbers
    summing to 0."""
    v = np.asarray(v, dtype=np.float64)
    s = np.sort(v)
    below, upto = np.searchsorted(s, v, side="left"), np.searchsorted(s, v, side="right")
    centred: IntArray = (below + upto + 1 - (len(v) + 1)).astype(np.int64)
    return centred


def _spearman_sums(a: IntArray, b: IntArray) -> IntArray:
    """|sum a_i b_order(i)| for every counted order."""
    # In floating point (a matrix product through BLAS), exact: every term and sum is a whole
    # number far below 2**53.
    sums = np.abs(b.astype(np.float64)[_orders(len(b))] @ a.astype(np.float64))
    whole: IntArray = np.rint(sums).astype(np.int64)
    return whole


def _kendall_sums(a: IntArray, b: IntArray) -> IntArray:
    """|S| for every counted order (the pairs of models looped over, the orders vectorised; the
    ranks, at most 2n, and S, at most n(n - 1)/2 in size, fit small integers)."""
    y = np.ascontiguousarray(b.astype(np.int16)[_orders(len(b))].T)  # one row per model
    s = np.zeros(y.shape[1], dtype=np.int32)
    for i, j in itertools.combinations(range(len(a)), 2):
        if a[i] != a[j]:  # the pair's sign in y, turned by its sign in x
            hi, lo = (y[i], y[j]) if a[i] > a[j] else (y[j], y[i])
            s += hi > lo
            s -= hi < lo
    return np.abs(s).astype(np.int64)


@functools.lru_cache(maxsize=16)
def _null(kind: str, a: tuple[int, ...], b: tuple[int, ...]) -> npt.NDArray[np.int32]:
    """The sorted null distribution of |statistic|. It depends on the two sets of ranks only,
    not on which model holds which nor on which ranking is which, so every tie-free pair of n
    models shares one, and so does every pair of one tied ranking with a tie-free one."""
    fn = _spearman_sums if kind == "spearman" else _kendall_sums
    null = fn(np.array(a, dtype=np.int64), np.array(b, dtype=np.int64))
    return np.sort(null).astype(np.int32)


def _p(kind: str, observed: int, a: IntArray, b: IntArray) -> float:
    """Share of the counted orders at least as extreme; (1 + hits) / (1 + draws) when drawn."""
    key = sorted([tuple(sorted(a.tolist())), tuple(sorted(b.tolist()))])
    null = _null(kind, key[0], key[1])
    hits = len(null) - int(np.searchsorted(null, observed, side="left"))
    if len(a) <= EXACT_MAX:
        return hits / len(null)
    return (1 + hits) / (1 + len(null))  # P_FLOOR when no drawn pairing is as extreme


def kendall_s(x: IntArray, y: IntArray) -> int:
    """S = concordant - discordant pairs (pairs tied in either ranking count 0)."""
    i, j = np.triu_indices(len(x), k=1)
    return int((np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])).sum())


def spearman_p(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    """Two-sided permutation p of Spearman's rho (exact up to EXACT_MAX models)."""
    a, b = centred_ranks(x), centred_ranks(y)
    return _p("spearman", abs(int(a @ b)), a, b)


def _tied_pairs(r: IntArray) -> int:
    """Pairs of models that share a rank: sum of t (t - 1) / 2 over the groups of ties."""
    _, counts = np.unique(r, return_counts=True)
    return int((counts * (counts - 1) // 2).sum())


# scipy's exact two-sided p of tau without ties, by (models, |S|): it depends on nothing else.
_KENDALL_EXACT: dict[tuple[int, int], float] = {}


def _kendall_exact(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], s: int) -> float:
    key = (len(x), abs(s))
    if key not in _KENDALL_EXACT:
        _KENDALL_EXACT[key] = float(stats.kendalltau(x, y, method="exact").pvalue)
    return _KENDALL_EXACT[key]


def correlations(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> dict[str, float]:
    """Spearman's rho and Kendall's tau-b of two aligned score arrays (at least two models, no
    NaN, neither constant) with their two-sided permutation p-values, from one set of mid-ranks.

    rho is the Pearson correlation of the mid-ranks (scipy's ``spearmanr``); tau-b is
    S / sqrt((n0 - n1)(n0 - n2)), n0 = n(n - 1)/2 and n1, n2 the pairs tied in each ranking
    (scipy's ``kendalltau(variant="b")``): the same figures to the last bits or so, without
    scipy's per-call overhead (a report correlates about a hundred pairs of rankings)."""
    a, b = centred_ranks(x), centred_ranks(y)
    n, s, ab = len(a), kendall_s(a, b), int(a @ b)
    pairs = n * (n - 1) // 2
    x_ties, y_ties = _tied_pairs(a), _tied_pairs(b)
    tau = s / math.sqrt(pairs - x_ties) / math.sqrt(pairs - y_ties)
    if x_ties == 0 and y_ties == 0 and n <= KENDALL_EXACT_MAX:
        tau_p = _kendall_exact(x, y, s)
    else:
        tau_p = _p("kendall", abs(s), a, b)
    return {
        "spearman_rho": ab / math.sqrt(float(a @ a) * float(b @ b)),
        "spearman_p": _p("spearman", abs(ab), a, b),
        "kendall_tau_b": min(1.0, max(-1.0, tau)),
        "kendall_p": tau_p,
    }


def kendall_p(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], scipy_p: float | None = None
) -> float:
    """Two-sided permutation p of Kendall's tau-b. Without ties and up to KENDALL_EXACT_MAX
    models it is scipy's exact p (the same distribution, counted by recursion): ``scipy_p``,
    the p of ``kendalltau(x, y)`` when the caller has it, else computed."""
    a, b = centred_ranks(x), centred_ranks(y)
    tied = len(np.unique(a)) < len(a) or len(np.unique(b)) < len(b)
    if not tied and len(a) <= KENDALL_EXACT_MAX:
        if scipy_p is None:
            scipy_p = float(stats.kendalltau(x, y, method="exact").pvalue)
        return scipy_p
    return _p("kendall", abs(kendall_s(a, b)), a, b)
