"""Bradley-Terry maximum likelihood with bootstrap confidence intervals.

Matches are first aggregated into a models x models matrix, so that the cost of a fit does not
depend on the number of matches: W[i, j] = wins of i over j with a tie (or both-bad) counting half
a win for each side, N[i, j] = games between i and j. The fit is Hunter's (2004) MM algorithm,
p_i <- W_i / sum_j N_ij / (p_i + p_j), run for all bootstrap rounds at once on (B, M, M) arrays.

The bootstrap resamples matches: the aggregated outcome cells (pair, outcome) are drawn from a
multinomial with the observed cell shares and the observed total, which is the same as drawing
the matches with replacement, without touching the matches again.

A small prior (``prior`` virtual games per compared pair, split as a tie) keeps the estimate
finite when a model won or lost every game; with thousands of games it moves nothing visible.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pandas as pd

from .elo import HAVE_NUMBA, numba
from .intervals import nan_quantiles

ELO_SCALE = 400.0 / np.log(10.0)


def aggregate(
    a: np.ndarray, b: np.ndarray, s: np.ndarray, n_models: int
) -> tuple[np.ndarray, np.ndarray]:
    """(W, N): half-win matrix and games matrix from matches (A's score s in {0, .5, 1})."""
    idx = a * n_models + b
    size = n_models * n_models
    w_ab = np.bincount(idx, weights=s, minlength=size).reshape(n_models, n_models)
    w_ba = np.bincount(idx, weights=1.0 - s, minlength=size).reshape(n_models, n_models)
    n = np.bincount(idx, minlength=size).reshape(n_models, n_models).astype(float)
    return w_ab + w_ba.T, n + n.T


def fit(
    w: np.ndarray,
    n: np.ndarray,
    *,
    prior: float = 0.1,
    tol: float = 1e-10,
    max_iter: int = 10_000,
) -> np.ndarray:
    """Log-strengths (mean 0) from W and N; W and N may carry a leading batch axis."""
    w = np.asarray(w, dtype=float)
    n = np.asarray(n, dtype=float)
    single = w.ndim == 2
    if single:
        w, n = w[None], n[None]
    played = n > 0
    w = w + played * (prior / 2.0)
    n = n + played * prior
    wins = w.sum(axis=2)
    n_models = w.shape[-1]
    p = np.ones(w.shape[:2])
    active = wins > 0
    for _ in range(max_iter):
        denom = (n / (p[:, :, None] + p[:, None, :])).sum(axis=2)
        with np.errstate(divide="ignore", invalid="ignore"):
            new = np.where(active, wins / denom, 1.0)
        # Normalise to geometric mean 1 over the models that played, so the scale is fixed.
        logp = np.log(new)
        logp -= np.where(active, logp, 0.0).sum(axis=1, keepdims=True) / np.maximum(
            active.sum(axis=1, keepdims=True), 1
        )
        new = np.exp(logp)
        step = np.max(np.abs(np.log(new) - np.log(p)))
        p = new
        if step < tol:
            break
    logp = np.log(p)
    logp = np.where(active, logp, np.nan)
    if n_models and single:
        strengths: npt.NDArray[np.float64] = logp[0]
        return strengths
    return logp


def _minus_diff_py(theta: np.ndarray) -> np.ndarray:
    """(B, M, M): theta[b, j] - theta[b, i] at [b, i, j], the argument of ``np.exp``."""
    n_b, m = theta.shape
    out = np.empty((n_b, m, m))
    for b in range(n_b):
        for i in range(m):
            for j in range(m):
                out[b, i, j] = theta[b, j] - theta[b, i]
    return out


def _system_py(
    e: np.ndarray, wins: np.ndarray, n: np.ndarray, active: np.ndarray, fix: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and minus the Hessian (plus ``fix``) of every round from e = exp(theta_j -
    theta_i): ``_system_numpy``'s arithmetic element by element, its row sums in numpy's
    order (``np.sum`` of up to 128 values: eight running sums combined as a tree, then the
    tail; below 8 values one running sum from -0.0). No array is passed to a call in the loop
    (each would cost two atomic reference counts)."""
    n_b, m, _ = e.shape
    grad, lap = np.empty((n_b, m)), np.empty((n_b, m, m))
    pi, rows, acc, sums = np.empty((m, m)), np.empty((2, m)), np.empty((2, 8)), np.empty(2)
    cut = m - m % 8
    for b in range(n_b):
        for i in range(m):
            for j in range(m):
                pi[i, j] = 1.0 / (1.0 + e[b, i, j])
        for i in range(m):
            for j in range(m):
                rows[0, j] = n[b, i, j] * pi[i, j]
                rows[1, j] = rows[0, j] * pi[j, i]
            for k in range(2):
                sums[k] = -0.0
                if m < 8:
                    for j in range(m):
                        sums[k] += rows[k, j]
                    continue
                for j in range(8):
                    acc[k, j] = rows[k, j]
                for j in range(8, cut):
                    acc[k, j % 8] += rows[k, j]
                t = ((acc[k, 0] + acc[k, 1]) + (acc[k, 2] + acc[k, 3])) + (
                    (acc[k, 4] + acc[k, 5]) + (acc[k, 6] + acc[k, 7])
                )
                for j in range(cut, m):
                    t += rows[k, j]
                sums[k] = t
            grad[b, i] = wins[b, i] - sums[0] if active[b, i] else 0.0
            for j in range(m):
                eye = 1.0 if i == j else 0.0
                lap[b, i, j] = eye * sums[1] - rows[1, j] + fix[b, i, j]
                lap[b, i, j] += eye * (0.0 if active[b, i] else 1.0)
    return grad, lap


def _system_numpy(
    theta: np.ndarray, wins: np.ndarray, n: np.ndarray, active: np.ndarray, fix: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The Newton system in numpy: the gradient and the Laplacian below (plus ``fix``)."""
    eye = np.eye(n.shape[-1])
    with np.errstate(over="ignore"):
        pi = 1.0 / (1.0 + np.exp(theta[:, None, :] - theta[:, :, None]))  # P(i beats j)
    grad = np.where(active, wins - (n * pi).sum(axis=2), 0.0)
    off = n * pi * pi.transpose(0, 2, 1)
    # Minus the Hessian is a graph Laplacian (singular along the all-ones vector over the
    # active models): adding ones/m there fixes the scale; inactive models stay put.
    lap = eye * off.sum(axis=2)[:, :, None] - off + fix
    lap += eye * (~active)[:, :, None]
    return grad, lap


def _system(
    theta: np.ndarray, wins: np.ndarray, n: np.ndarray, active: np.ndarray, fix: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``_system_numpy``, bit for bit: numpy's exp between two compiled loops (numba's exp is
    the C library's, numpy's its own), up to 128 models (numpy's row sums are a tree there)."""
    if _system_fast is None or theta.shape[1] > 128:
        return _system_numpy(theta, wins, n, active, fix)
    e = _minus_diff(theta)
    with np.errstate(over="ignore"):
        np.exp(e, out=e)
    return _system_fast(e, wins, n, active, fix)


_minus_diff: Callable[[np.ndarray], np.ndarray] = _minus_diff_py
_system_fast: Callable[..., tuple[np.ndarray, np.ndarray]] | None = None
if HAVE_NUMBA:
    _minus_diff = numba.njit(cache=True, nogil=True)(_minus_diff_py)
    _system_fast = numba.njit(cache=True, nogil=True)(_system_py)


def _newton_steps(
    theta: np.ndarray, w: np.ndarray, n: np.ndarray, active: np.ndarray, tol: float, max_iter: int
) -> np.ndarray:
    """Newton's method on the log-likelihood, batched over rounds: (B, M) log-strengths, NaN in
    the rounds that did not converge (the caller fits those by MM)."""
    wins = w.sum(axis=2)
    n_act = np.maximum(active.sum(axis=1), 1)[:, None, None]
    fix = (active[:, :, None] & active[:, None, :]).astype(float) / n_act
    done = np.zeros(len(theta), bool)
    for _ in range(max_iter):
        grad, lap = _system(theta, wins, n, active, fix)
        try:
            step = np.linalg.solve(lap, grad[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:  # a round whose games split the models into groups
            return np.full_like(theta, np.nan)
        theta = theta + step
        theta -= np.where(active, theta, 0.0).sum(axis=1, keepdims=True) / n_act[:, :, 0]
        done = np.max(np.abs(step), axis=1) < tol
        if done.all():
            break
    theta[~done] = np.nan
    return theta


def fit_newton(
    w: np.ndarray,
    n: np.ndarray,
    *,
    prior: float = 0.1,
    start: np.ndarray | None = None,
    tol: float = 1e-10,
    max_iter: int = 50,
) -> np.ndarray:
    """The maximum of the same likelihood as ``fit`` (same prior, same mean-0 scale) for a batch
    (B, M, M) of W and N, by Newton's method from ``start``: a few steps from the full sample's
    estimate instead of the MM algorithm's hundreds. Rounds that do not converge are fitted by
    ``fit``. Returns (B, M) log-strengths, NaN for models without a game in that round."""
    w, n = np.asarray(w, dtype=float), np.asarray(n, dtype=float)
    played = n > 0
    w_p = w + played * (prior / 2.0)
    n_p = n + played * prior
    active = w_p.sum(axis=2) > 0
    theta = np.zeros(w.shape[:2])
    if start is not None:
        theta[:] = np.nan_to_num(np.asarray(start, dtype=float), nan=0.0)
    theta = np.where(active, theta, 0.0)
    theta -= theta.sum(axis=1, keepdims=True) / np.maximum(active.sum(axis=1), 1)[:, None]
    theta = np.where(active, theta, 0.0)
    theta = _newton_steps(theta, w_p, n_p, active, tol, max_iter)
    bad = np.isnan(theta).any(axis=1) & active.any(axis=1)
    if bad.any():
        theta[bad] = fit(w[bad], n[bad], prior=prior)
    return np.where(active, theta, np.nan)


def bootstrap(
    a: np.ndarray,
    b: np.ndarray,
    s: np.ndarray,
    n_models: int,
    *,
    n_rounds: int = 100,
    rng: np.random.Generator,
    prior: float = 0.1,
    start: np.ndarray | None = None,
) -> np.ndarray:
    """(B, M) log-strengths over ``n_rounds`` multinomial resamples of the matches, each fitted
    by Newton's method from ``start`` (the full sample's log-strengths; zeros if not given)."""
    if len(a) == 0 or n_rounds == 0:
        return np.full((n_rounds, n_models), np.nan)
    # Outcome cells: (a, b, s) with s in {0, 0.5, 1}; count each distinct cell once.
    code = (a * n_models + b) * 3 + np.rint(s * 2).astype(np.int64)
    cells, counts = np.unique(code, return_counts=True)
    total = int(counts.sum())
    draws = rng.multinomial(total, counts / total, size=n_rounds)  # (B, K)
    pair, out = np.divmod(cells, 3)
    ca, cb = np.divmod(pair, n_models)
    cs = out / 2.0
    # Each cell adds to two entries of W (its score to a-over-b, the rest to b-over-a) and of N.
    # The sums are of whole and half counts: exact in any order, so both paths give the same.
    ab, ba = ca * n_models + cb, cb * n_models + ca
    if _add_cells is not None:
        w, n = _add_cells(draws, ab, ba, cs, n_models)
    else:  # one gather and one reduceat per matrix
        draws = draws.astype(float)
        w = _sum_columns(draws, np.r_[ab, ba], np.r_[cs, 1.0 - cs], n_models)
        n = _sum_columns(draws, np.r_[ab, ba], np.ones(2 * len(cells)), n_models)
    return fit_newton(w, n, prior=prior, start=start)


def _add_cells_py(
    draws: np.ndarray, ab: np.ndarray, ba: np.ndarray, cs: np.ndarray, n_models: int
) -> tuple[np.ndarray, np.ndarray]:
    """(W, N) of every round, (B, M, M): cell c's draws add ``cs[c]`` times to W at ``ab[c]``
    (flat a * M + b), the rest at ``ba[c]``, and once to N at both."""
    w = np.zeros((draws.shape[0], n_models * n_models))
    n = np.zeros((draws.shape[0], n_models * n_models))
    for r in range(draws.shape[0]):
        for c in range(draws.shape[1]):
            d = float(draws[r, c])
            w[r, ab[c]] += cs[c] * d
            w[r, ba[c]] += (1.0 - cs[c]) * d
            n[r, ab[c]] += d
            n[r, ba[c]] += d
    return w.reshape(-1, n_models, n_models), n.reshape(-1, n_models, n_models)


# Compiled when numba is installed (it is 20 times faster than the numpy sums below).
_add_cells: Callable[..., tuple[np.ndarray, np.ndarray]] | None = (
    numba.njit(cache=True, nogil=True)(_add_cells_py) if HAVE_NUMBA else None
)


def _sum_columns(
    draws: np.ndarray, target: np.ndarray, weight: np.ndarray, n_models: int
) -> np.ndarray:
    """(B, M, M): per round, the sum of ``weight * draws[:, cell]`` over the cells sent to each
    entry ``target`` (flat a * M + b; entry i of ``target`` and ``weight`` is cell i mod K)."""
    k = draws.shape[1]
    cell = np.r_[np.arange(k), np.arange(k)]
    keep = weight != 0
    target, weight, cell = target[keep], weight[keep], cell[keep]
    order = np.argsort(target, kind="stable")
    target, weight, cell = target[order], weight[order], cell[order]
    starts = np.flatnonzero(np.r_[True, target[1:] != target[:-1]])
    out = np.zeros((draws.shape[0], n_models * n_models))
    if len(cell):
        out[:, target[starts]] = np.add.reduceat(draws[:, cell] * weight, starts, axis=1)
    return out.reshape(-1, n_models, n_models)


def table(
    a: np.ndarray,
    b: np.ndarray,
    s: np.ndarray,
    models: list[str],
    *,
    n_rounds: int = 100,
    rng: np.random.Generator,
    prior: float = 0.1,
    level: float = 0.95,
) -> pd.DataFrame:
    """Leaderboard: BT rating on the Elo scale (1500 + 400 log10 strength) with percentile CIs."""
    m = len(models)
    w, n = aggregate(a, b, s, m)
    est = fit(w, n, prior=prior)
    boot = bootstrap(a, b, s, m, n_rounds=n_rounds, rng=rng, prior=prior, start=est)
    lo_q, hi_q = (1.0 - level) / 2.0, 1.0 - (1.0 - level) / 2.0
    rating = 1500.0 + ELO_SCALE * est
    boot_r = 1500.0 + ELO_SCALE * boot
    with np.errstate(all="ignore"):
        if n_rounds:
            lo, hi = nan_quantiles(boot_r, [lo_q, hi_q])
            # Rank intervals: rank of each model within each bootstrap round.
            br = np.where(np.isnan(boot_r), -np.inf, boot_r)
            ranks = (br[:, None, :] > br[:, :, None]).sum(axis=2) + 1
            rank_lo = np.quantile(ranks, lo_q, axis=0, method="lower")
            rank_hi = np.quantile(ranks, hi_q, axis=0, method="higher")
        else:
            lo = hi = np.full(m, np.nan)
            rank_lo = rank_hi = np.full(m, np.nan)
    out = pd.DataFrame(
        {
            "model": models,
            "games": (n.sum(axis=1)).astype(np.int64),
            "strength": est,
            "rating": rating,
            "ci_low": lo,
            "ci_high": hi,
            "rank_ci_low": rank_lo,
            "rank_ci_high": rank_hi,
        }
    )
    return out
