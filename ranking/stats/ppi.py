"""Judge-assisted estimates with valid intervals: PPI++ (Angelopoulos, Duchi and Zrnic 2023,
"PPI++: Efficient Prediction-Powered Inference").

Humans rate n items ("labelled": a human outcome Y and the judge's f), the judge alone rates N
more (f~). For a mean, with lambda in [0, 1]:

    theta = mean_n(Y) + lambda * (mean_N(f~) - mean_n(f))
    Var   = lambda^2 Var(f~) / N + Var(Y - lambda f) / n
    lambda_hat = Cov_n(Y, f) / ((1 + n / N) Var(f)),   clipped to [0, 1]

(Var(f) over all n + N judge ratings). The estimate is unbiased for the human mean whatever the
judge does, because the judge's error enters once with each sign; lambda only decides how much of
the judge's precision is borrowed. lambda = 0 is the human-only estimate.

Bradley-Terry is an M-estimator: the logistic loss l(beta; y) = softplus(d) - y d with
d = beta_a - beta_b and y the A side's score (0, 0.5, 1; a mean of several humans is fine). The
PPI++ objective (1/n) sum l(Y) + lambda [(1/N) sum l(f~) - (1/n) sum l(f)] is convex for lambda
in [0, 1]; Newton solves it. Its covariance is the sandwich H^-1 (V_delta / n + lambda^2 V_f / N)
H^-1 with V_delta = Cov_n(g(Y) - lambda g(f)), V_f = Cov_N(g(f~)) (g the loss gradients) and H
the mean Hessian over all items (it does not depend on the outcomes). lambda_hat minimises the
summed variance of the centred strengths (the paper's power tuning for M-estimators, with the
trace taken over the centred parametrisation so that no model is the reference).

Every function here is pure numpy; arrays use NaN for "no rating" so that batches of studies (the
simulation) and subsamples (the width-vs-budget curve) run as one vectorised call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Z95 = 1.959963984540054
NEWTON_ITER = 100
RIDGE = 1e-9  # keeps Newton finite when a model won or lost every game; moves nothing else


@dataclass(frozen=True)
class MeanResult:
    """Arrays over the batch axes: the combined (PPI++) estimate and the human-only one."""

    estimate: np.ndarray
    se: np.ndarray
    lam: np.ndarray
    human: np.ndarray
    human_se: np.ndarray
    judge: np.ndarray
    n: np.ndarray
    n_unlabelled: np.ndarray


@dataclass(frozen=True)
class _Sums:
    """Labelled count and sums of Y, f, Y^2, f^2, Yf; unlabelled count and sums of f~, f~^2."""

    n: np.ndarray
    sy: np.ndarray
    sf: np.ndarray
    syy: np.ndarray
    sff: np.ndarray
    syf: np.ndarray
    n_u: np.ndarray
    su: np.ndarray
    suu: np.ndarray


@dataclass(frozen=True)
class Moments(_Sums):
    """Sufficient statistics of one or a batch of studies (the sums of ``_Sums``). Means,
    variances and covariances follow from them, so a subsample is a matrix product (the width
    curve) rather than a pass over the items."""

    @classmethod
    def of(cls, y: np.ndarray, f: np.ndarray, f_unl: np.ndarray) -> Moments:
        """From outcomes over the last axis; NaN is missing (a labelled item needs both)."""
        y, f, f_unl = (np.asarray(v, dtype=float) for v in (y, f, f_unl))
        both = ~np.isnan(y) & ~np.isnan(f)
        y0, f0 = np.where(both, y, 0.0), np.where(both, f, 0.0)
        u_ok = ~np.isnan(f_unl)
        u0 = np.where(u_ok, f_unl, 0.0)
        return cls(
            *(both.sum(axis=-1).astype(float), y0.sum(-1), f0.sum(-1)),
            *((y0 * y0).sum(-1), (f0 * f0).sum(-1), (y0 * f0).sum(-1)),
            *(u_ok.sum(axis=-1).astype(float), u0.sum(-1), (u0 * u0).sum(-1)),
        )


def _var(ss: np.ndarray, s: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Sample variance (ddof 1) from the sum of squares and the sum; NaN below two values."""
    with np.errstate(all="ignore"):
        return np.where(n > 1, np.maximum(ss - s * s / n, 0.0) / (n - 1), np.nan)


def power_tuned_lambda(
    cov_yf: np.ndarray, var_f: np.ndarray, n: np.ndarray, n_unl: np.ndarray
) -> np.ndarray:
    """Cov(Y, f) / ((1 + n / N) Var(f)) clipped to [0, 1]; 0 when N = 0 or Var(f) = 0."""
    with np.errstate(all="ignore"):
        lam = cov_yf / ((1.0 + n / n_unl) * var_f)
    ok = (n_unl > 0) & (var_f > 0) & np.isfinite(lam)
    return np.clip(np.where(ok, lam, 0.0), 0.0, 1.0)


def mean_from_moments(m: Moments, *, lam: float | None = None) -> MeanResult:
    """The PPI++ mean and its standard error (module docstring) from sufficient statistics."""
    n, n_u = m.n, m.n_u
    with np.errstate(all="ignore"):
        ybar, fbar, fbar_u = m.sy / n, m.sf / n, m.su / n_u
        cov = np.where(n > 1, (m.syf - m.sy * m.sf / n) / (n - 1), np.nan)
        if lam is None:
            var_all = _var(m.sff + m.suu, m.sf + m.su, n + n_u)
            lam_a = power_tuned_lambda(cov, var_all, n, n_u)
        else:
            lam_a = np.where(n_u > 0, float(lam), 0.0) * np.ones_like(ybar)
        lam_a = np.where(np.isnan(lam_a), 0.0, lam_a)
        shift = np.where(lam_a > 0, lam_a * (fbar_u - fbar), 0.0)
        var_y = _var(m.syy, m.sy, n)
        resid = np.maximum(var_y - 2 * lam_a * cov + lam_a**2 * _var(m.sff, m.sf, n), 0.0)
        judge_part = np.where(lam_a > 0, lam_a**2 * _var(m.suu, m.su, n_u) / n_u, 0.0)
        return MeanResult(
            estimate=ybar + shift,
            se=np.sqrt(resid / n + judge_part),
            lam=lam_a,
            human=ybar,
            human_se=np.sqrt(var_y / n),
            judge=(m.sf + m.su) / (n + n_u),
            n=n,
            n_unlabelled=n_u,
        )


def ppi_mean(
    y: np.ndarray, f: np.ndarray, f_unl: np.ndarray, *, lam: float | None = None
) -> MeanResult:
    """PPI++ mean over the last axis (NaN = missing). ``y`` and ``f`` are the labelled items'
    human and judge outcomes (an item counts only when both are present); ``f_unl`` the judge's
    outcomes on the other items. ``lam`` fixes lambda (None: power-tuned)."""
    return mean_from_moments(Moments.of(y, f, f_unl), lam=lam)


def interval(est: np.ndarray, se: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The normal 95% interval est +- 1.96 se."""
    return est - Z95 * se, est + Z95 * se


def ratings_saved(
    n: np.ndarray | float, width_human: np.ndarray, width_ppi: np.ndarray
) -> np.ndarray:
    """Human-rated items a human-only estimate would need beyond n to be as narrow as the
    combined one: n (w_human / w_ppi)^2 - n (widths shrink as 1 / sqrt(n))."""
    with np.errstate(all="ignore"):
        out = n * (width_human / width_ppi) ** 2 - n
    return np.where(np.isfinite(out), out, np.nan)


# --------------------------------------------------------------------------- Bradley-Terry


@dataclass(frozen=True)
class Games:
    """Comparisons as model indices a, b and A's outcome y."""

    a: np.ndarray
    b: np.ndarray
    y: np.ndarray


@dataclass(frozen=True)
class PairSums(_Sums):
    """Games aggregated per ordered pair of models (the loss depends on a game only through its
    pair and outcome, so fits and covariances need only these sums): design rows x (e_a - e_b
    without the reference model's column) and the sums of ``_Sums`` per row."""

    x: np.ndarray

    @classmethod
    def of(cls, labelled: Games, f: np.ndarray, unlabelled: Games, n_models: int) -> PairSums:
        code_l = labelled.a * n_models + labelled.b
        code_u = unlabelled.a * n_models + unlabelled.b
        codes, inv = np.unique(np.concatenate([code_l, code_u]), return_inverse=True)
        il, iu = inv[: len(code_l)], inv[len(code_l) :]
        k = len(codes)

        def total(idx: np.ndarray, w: np.ndarray) -> npt.NDArray[np.float64]:
            return np.bincount(idx, weights=w, minlength=k)

        y = labelled.y
        x = np.zeros((k, n_models))
        x[np.arange(k), codes // n_models] += 1.0
        x[np.arange(k), codes % n_models] -= 1.0
        return cls(
            *(total(il, np.ones(len(il))), total(il, y), total(il, f)),
            *(total(il, y * y), total(il, f * f), total(il, y * f)),
            *(total(iu, np.ones(len(iu))), total(iu, unlabelled.y), total(iu, unlabelled.y**2)),
            x=x[:, :-1],
        )


def _sigmoid(d: np.ndarray) -> np.ndarray:
    p: npt.NDArray[np.float64] = 0.5 * (1.0 + np.tanh(0.5 * d))
    return p


def _softplus(d: np.ndarray) -> np.ndarray:
    out: npt.NDArray[np.float64] = np.logaddexp(0.0, d)
    return out


def weighted_logistic(x: np.ndarray, w: np.ndarray, c: np.ndarray) -> np.ndarray:
    """argmin_beta sum_k w_k softplus(x_k beta) - c_k x_k beta (+ a negligible ridge), by Newton
    with step halving. w >= 0 makes it convex."""
    beta = np.zeros(x.shape[1])

    def objective(b: np.ndarray) -> float:
        d = x @ b
        return float(np.sum(w * _softplus(d) - c * d) + 0.5 * RIDGE * b @ b)

    current = objective(beta)
    for _ in range(NEWTON_ITER):
        p = _sigmoid(x @ beta)
        grad = x.T @ (w * p - c) + RIDGE * beta
        hess = (x * (w * p * (1.0 - p))[:, None]).T @ x + RIDGE * np.eye(len(beta))
        step = np.linalg.lstsq(hess, grad, rcond=None)[0]
        t = 1.0
        while t > 1e-8:
            trial = beta - t * step
            value = objective(trial)
            if value <= current + 1e-15:
                break
            t /= 2.0
        beta, done = trial, current - value < 1e-13 * max(1.0, abs(current))
        current = value
        if done:
            break
    return beta


def _fit(p: PairSums, lam: float) -> np.ndarray:
    """The PPI++ objective as one weighted logistic fit over the pairs."""
    n, n_u = p.n.sum(), max(p.n_u.sum(), 1.0)
    w = (1.0 - lam) * p.n / n + lam * p.n_u / n_u
    c = (p.sy - lam * p.sf) / n + lam * p.su / n_u
    return weighted_logistic(p.x, w, c)


def _hessian(x: np.ndarray, beta: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Mean Hessian of the loss over games (``counts`` games per pair)."""
    q = _sigmoid(x @ beta)
    h: npt.NDArray[np.float64] = (x * (counts * q * (1.0 - q))[:, None]).T @ x / counts.sum()
    return h


def _grad_cov(
    x: np.ndarray, s1: np.ndarray, s2: np.ndarray, s12: np.ndarray, m: float
) -> np.ndarray:
    """Sample cross-covariance (ddof 1) of per-game gradients r1 x and r2 x, from per-pair sums
    of r1, r2 and r1 r2 over ``m`` games."""
    if m < 2:
        return np.zeros((x.shape[1], x.shape[1]))
    g1, g2 = x.T @ s1, x.T @ s2
    cov: npt.NDArray[np.float64] = ((x * s12[:, None]).T @ x - np.outer(g1, g2) / m) / (m - 1)
    return cov


def _resid(
    q: np.ndarray, n: np.ndarray, so: np.ndarray, soo: np.ndarray, kappa: float = 1.0
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per pair: sums of r = kappa q - o and of r^2, for the outcome o with sums so, soo."""
    return kappa * n * q - so, kappa**2 * n * q * q - 2 * kappa * q * so + soo


def _inverse(h: np.ndarray) -> np.ndarray | None:
    """H^-1, or None when H is singular (a model the comparisons do not connect)."""
    if h.size == 0 or np.linalg.matrix_rank(h) < len(h):
        return None
    return np.linalg.inv(h)


def _centring(n_params: int) -> np.ndarray:
    """P: free parameters (reference model at 0) -> centred log-strengths of every model."""
    m = n_params + 1
    return (np.eye(m) - 1.0 / m)[:, :-1]


def bt_lambda(p: PairSums, beta: np.ndarray, hi: np.ndarray) -> float:
    """Power-tuned lambda, minimising the summed variance of the centred strengths (so no model
    is special): tr(K (C + C')) / (2 (1 + n/N) tr(K V_f)) in [0, 1], K = H^-1 P'P H^-1, C the
    labelled cross-covariance of the human and judge gradients, V_f the judge gradients'
    covariance over all games."""
    n, n_u = p.n.sum(), p.n_u.sum()
    if n_u == 0:
        return 0.0
    q = _sigmoid(p.x @ beta)
    ry, _ = _resid(q, p.n, p.sy, p.syy)
    rf, _ = _resid(q, p.n, p.sf, p.sff)
    ryf = p.n * q * q - q * (p.sy + p.sf) + p.syf
    c = _grad_cov(p.x, ry, rf, ryf, n)
    r_all, rr_all = _resid(q, p.n + p.n_u, p.sf + p.su, p.sff + p.suu)
    v_f = _grad_cov(p.x, r_all, r_all, rr_all, n + n_u)
    proj = _centring(len(beta))
    k = hi @ proj.T @ proj @ hi
    num = np.trace(k @ (c + c.T))
    den = 2.0 * (1.0 + n / n_u) * np.trace(k @ v_f)
    return float(np.clip(num / den, 0.0, 1.0)) if den > 0 else 0.0


def _centred(beta: np.ndarray, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Add the reference model (0), then centre: beta - mean(beta), with its standard errors."""
    proj = _centring(len(beta))
    return proj @ beta, np.sqrt(np.maximum(np.diag(proj @ cov @ proj.T), 0.0))


def _ppi_cov(p: PairSums, beta: np.ndarray, lam: float, hi: np.ndarray) -> np.ndarray:
    """H^-1 (V_delta / n + lambda^2 V_f / N) H^-1."""
    n, n_u = p.n.sum(), p.n_u.sum()
    q = _sigmoid(p.x @ beta)
    so = p.sy - lam * p.sf
    soo = p.syy - 2 * lam * p.syf + lam**2 * p.sff
    r, rr = _resid(q, p.n, so, soo, 1.0 - lam)
    meat = _grad_cov(p.x, r, r, rr, n) / n
    if n_u and lam:
        ru, rru = _resid(q, p.n_u, p.su, p.suu)
        meat = meat + lam**2 * _grad_cov(p.x, ru, ru, rru, n_u) / n_u
    cov: npt.NDArray[np.float64] = hi @ meat @ hi
    return cov


def _human_only(p: PairSums) -> tuple[np.ndarray, np.ndarray]:
    n = p.n.sum()
    beta = weighted_logistic(p.x, p.n / n, p.sy / n)
    hi = _inverse(_hessian(p.x, beta, p.n))
    if hi is None:
        return np.full(len(beta) + 1, np.nan), np.full(len(beta) + 1, np.nan)
    r, rr = _resid(_sigmoid(p.x @ beta), p.n, p.sy, p.syy)
    return _centred(beta, hi @ _grad_cov(p.x, r, r, rr, n) @ hi / n)


@dataclass(frozen=True)
class BTResult:
    """Centred log-strengths (mean 0 over the models) with standard errors, per model."""

    strength: np.ndarray
    se: np.ndarray
    lam: float
    human: np.ndarray
    human_se: np.ndarray
    judge: np.ndarray


def ppi_bradley_terry(
    labelled: Games, f: np.ndarray, unlabelled: Games, n_models: int, *, lam: float | None = None
) -> BTResult | None:
    """PPI++ Bradley-Terry: ``labelled.y`` the human outcomes, ``f`` the judge's on the same
    games, ``unlabelled.y`` the judge's on games no human rated. None when the labelled games do
    not identify every model (fewer than two models, or a model outside the comparisons)."""
    if n_models < 2 or len(labelled.y) < 2:
        return None
    p = PairSums.of(labelled, np.asarray(f, dtype=float), unlabelled, n_models)
    if _inverse(_hessian(p.x, np.zeros(n_models - 1), p.n)) is None:
        return None
    all_games = p.n + p.n_u
    if lam is None:
        beta = _fit(p, 1.0 if p.n_u.sum() else 0.0)
        hi = _inverse(_hessian(p.x, beta, all_games))
        lam = bt_lambda(p, beta, hi) if hi is not None else 0.0
    lam = float(lam) if p.n_u.sum() else 0.0
    beta = _fit(p, lam)
    hi = _inverse(_hessian(p.x, beta, all_games))
    if hi is None:
        return None
    strength, se = _centred(beta, _ppi_cov(p, beta, lam, hi))
    human, human_se = _human_only(p)
    judge = weighted_logistic(p.x, all_games / all_games.sum(), (p.sf + p.su) / all_games.sum())
    judge_c, _ = _centred(judge, np.zeros((n_models - 1, n_models - 1)))
    return BTResult(strength, se, lam, human, human_se, judge_c)
