"""PPI++ estimators against slow, obviously-correct references: plain Python loops for the mean,
scipy.optimize on the PPI++ objective for both the mean and Bradley-Terry."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from scipy import optimize

from ranking.stats import ppi


def _random_study(seed: int, n: int = 40, n_unl: int = 120):
    rng = np.random.default_rng(seed)
    y_all = rng.normal(3.0, 1.0, n + n_unl)
    f_all = 0.7 * y_all + rng.normal(0.5, 0.6, n + n_unl)
    return y_all[:n], f_all[:n], f_all[n:]


def _slow_mean(y, f, f_unl, lam=None):
    """The PPI++ mean written out with the statistics module and loops."""
    n, big_n = len(y), len(f_unl)
    ybar, fbar, fbar_u = statistics.fmean(y), statistics.fmean(f), statistics.fmean(f_unl)
    cov = sum((a - ybar) * (b - fbar) for a, b in zip(y, f, strict=True)) / (n - 1)
    var_f = statistics.variance(list(f) + list(f_unl))
    if lam is None:
        lam = min(1.0, max(0.0, cov / ((1 + n / big_n) * var_f)))
    theta = ybar + lam * (fbar_u - fbar)
    resid = [a - lam * b for a, b in zip(y, f, strict=True)]
    var = lam**2 * statistics.variance(f_unl) / big_n + statistics.variance(resid) / n
    return theta, math.sqrt(var), lam


@pytest.mark.parametrize("seed", range(5))
def test_the_mean_matches_a_loop_reference_on_random_data(seed):
    y, f, f_unl = _random_study(seed)
    r = ppi.ppi_mean(y, f, f_unl)
    theta, se, lam = _slow_mean(y, f, f_unl)
    assert float(r.estimate) == pytest.approx(theta, rel=1e-12)
    assert float(r.se) == pytest.approx(se, rel=1e-12)
    assert float(r.lam) == pytest.approx(lam, rel=1e-12)
    assert float(r.human) == pytest.approx(statistics.fmean(y))
    assert float(r.human_se) == pytest.approx(statistics.stdev(y) / math.sqrt(len(y)))
    assert float(r.judge) == pytest.approx(statistics.fmean(list(f) + list(f_unl)))


def test_the_mean_is_the_minimiser_of_the_ppi_objective():
    y, f, f_unl = _random_study(7)
    lam = 0.6

    def objective(theta):
        t = theta[0]
        return (
            np.mean((t - y) ** 2) / 2
            + lam * np.mean((t - f_unl) ** 2) / 2
            - lam * np.mean((t - f) ** 2) / 2
        )

    best = optimize.minimize(objective, x0=[0.0], method="BFGS").x[0]
    assert float(ppi.ppi_mean(y, f, f_unl, lam=lam).estimate) == pytest.approx(best, abs=1e-6)


def test_the_power_tuned_lambda_minimises_the_variance():
    y, f, f_unl = _random_study(3)
    n, big_n = len(y), len(f_unl)
    var_f = np.var(np.concatenate([f, f_unl]), ddof=1)
    var_y = np.var(y, ddof=1)
    cov = np.cov(y, f)[0, 1]

    def variance(lam):
        return lam**2 * var_f / big_n + (var_y - 2 * lam * cov + lam**2 * var_f) / n

    best = optimize.minimize_scalar(variance, bounds=(0, 1), method="bounded").x
    assert float(ppi.ppi_mean(y, f, f_unl).lam) == pytest.approx(best, abs=1e-5)


def test_a_batch_with_missing_values_equals_the_rows_one_by_one():
    rng = np.random.default_rng(11)
    y = rng.normal(size=(4, 30))
    f = y + rng.normal(size=(4, 30))
    f_unl = rng.normal(size=(4, 50))
    y[0, :5] = np.nan  # not labelled: left out of the labelled sample
    f_unl[1, :10] = np.nan
    batch = ppi.ppi_mean(y, f, f_unl)
    for i in range(4):
        keep = ~np.isnan(y[i])
        one = ppi.ppi_mean(y[i, keep], f[i, keep], f_unl[i, ~np.isnan(f_unl[i])])
        assert batch.estimate[i] == pytest.approx(float(one.estimate))
        assert batch.se[i] == pytest.approx(float(one.se))


def test_without_judge_only_items_the_estimate_is_the_human_one():
    y, f, _ = _random_study(1)
    r = ppi.ppi_mean(y, f, np.array([]))
    assert float(r.lam) == 0.0
    assert float(r.estimate) == pytest.approx(float(r.human))
    assert float(r.se) == pytest.approx(float(r.human_se))


def test_ratings_saved_is_the_extra_sample_for_equal_width():
    # Half the width needs four times the items: 100 items -> 300 more.
    assert float(ppi.ratings_saved(np.float64(100), np.float64(2.0), np.float64(1.0))) == 300
    assert np.isnan(ppi.ratings_saved(np.float64(100), np.float64(1.0), np.float64(0.0)))


# --------------------------------------------------------------------------- Bradley-Terry


def _bt_study(seed: int, n_models: int = 4, n: int = 150, n_unl: int = 400):
    rng = np.random.default_rng(seed)
    beta = np.linspace(-1.0, 1.0, n_models)
    a = rng.integers(0, n_models, n + n_unl)
    b = (a + rng.integers(1, n_models, n + n_unl)) % n_models
    p = 1 / (1 + np.exp(-(beta[a] - beta[b])))
    y = (rng.random(n + n_unl) < p).astype(float)
    y[rng.random(n + n_unl) < 0.1] = 0.5  # some ties
    f = np.where(rng.random(n + n_unl) < 0.7, y, (rng.random(n + n_unl) < 0.6).astype(float))
    lab = ppi.Games(a[:n], b[:n], y[:n])
    unl = ppi.Games(a[n:], b[n:], f[n:])
    return lab, f[:n], unl


def _scipy_bt(lab, f, unl, n_models, lam):
    """argmin of the PPI++ objective written term by term, scipy's BFGS, centred."""

    def loss(beta_free, games, out):
        beta = np.append(beta_free, 0.0)
        d = beta[games.a] - beta[games.b]
        return np.mean(np.logaddexp(0, d) - out * d)

    def objective(beta_free):
        return loss(beta_free, lab, lab.y) + lam * (
            loss(beta_free, unl, unl.y) - loss(beta_free, lab, f)
        )

    x = optimize.minimize(objective, np.zeros(n_models - 1), method="BFGS", tol=1e-12).x
    full = np.append(x, 0.0)
    return full - full.mean()


@pytest.mark.parametrize("lam", [0.0, 0.4, 1.0])
def test_bradley_terry_matches_scipy_on_the_ppi_objective(lam):
    lab, f, unl = _bt_study(2)
    res = ppi.ppi_bradley_terry(lab, f, unl, 4, lam=lam)
    assert res.lam == lam
    np.testing.assert_allclose(res.strength, _scipy_bt(lab, f, unl, 4, lam), atol=1e-5)
    if lam == 1.0:  # the judge-only figure is the fit on every judge outcome
        everything = ppi.Games(np.r_[lab.a, unl.a], np.r_[lab.b, unl.b], np.r_[f, unl.y])
        reference = _scipy_bt(everything, everything.y, everything, 4, 0.0)
        np.testing.assert_allclose(res.judge, reference, atol=1e-5)


def _slow_sandwich(lab, f, unl, strength, lam, n_models):
    """The sandwich covariance with loops over games, in the free parametrisation (last model
    the reference), then centred."""
    beta = strength - strength[-1]

    def grad(a, b, out):
        d = beta[a] - beta[b]
        s = 1 / (1 + math.exp(-d))
        g = np.zeros(n_models)
        g[a] += s - out
        g[b] -= s - out
        return g[:-1], s * (1 - s)

    hess = np.zeros((n_models - 1, n_models - 1))
    games = list(zip(lab.a, lab.b, strict=True)) + list(zip(unl.a, unl.b, strict=True))
    for a, b in games:
        x = np.zeros(n_models)
        x[a], x[b] = 1.0, -1.0
        hess += grad(a, b, 0.0)[1] * np.outer(x[:-1], x[:-1]) / len(games)
    delta = [
        grad(a, b, y)[0] - lam * grad(a, b, fy)[0]
        for a, b, y, fy in zip(lab.a, lab.b, lab.y, f, strict=True)
    ]
    judge = [grad(a, b, fy)[0] for a, b, fy in zip(unl.a, unl.b, unl.y, strict=True)]
    v = np.cov(np.array(delta).T) / len(delta) + lam**2 * np.cov(np.array(judge).T) / len(judge)
    hi = np.linalg.inv(hess)
    cov = np.zeros((n_models, n_models))
    cov[:-1, :-1] = hi @ v @ hi
    c = np.eye(n_models) - 1 / n_models
    return np.sqrt(np.diag(c @ cov @ c))


def test_bradley_terry_standard_errors_match_a_loop_sandwich():
    lab, f, unl = _bt_study(5)
    res = ppi.ppi_bradley_terry(lab, f, unl, 4)
    assert 0 < res.lam < 1
    np.testing.assert_allclose(
        res.se, _slow_sandwich(lab, f, unl, res.strength, res.lam, 4), rtol=1e-6
    )
    human = ppi.ppi_bradley_terry(lab, f, unl, 4, lam=0.0)
    np.testing.assert_allclose(res.human, human.strength, atol=1e-8)
    # With a judge that agrees with people 70% of the time, borrowing it narrows every interval.
    assert np.all(res.se < res.human_se)


def test_bradley_terry_is_none_when_the_comparisons_leave_a_model_out():
    a, b = np.array([0, 1, 0, 1] * 5), np.array([1, 0, 1, 0] * 5)
    lab = ppi.Games(a, b, np.tile([1.0, 0.0, 0.5, 1.0], 5))
    empty = ppi.Games(np.array([], int), np.array([], int), np.array([]))
    assert ppi.ppi_bradley_terry(lab, lab.y, empty, 3) is None  # model 2 never played
    assert ppi.ppi_bradley_terry(lab, lab.y, empty, 1) is None
    assert ppi.ppi_bradley_terry(lab, lab.y, empty, 2) is not None


def test_relabelling_the_models_only_permutes_the_bradley_terry_figures():
    lab, f, unl = _bt_study(9)
    perm = np.array([2, 0, 3, 1])  # model i becomes perm[i]
    relabel = ppi.ppi_bradley_terry(
        ppi.Games(perm[lab.a], perm[lab.b], lab.y), f, ppi.Games(perm[unl.a], perm[unl.b], unl.y), 4
    )
    res = ppi.ppi_bradley_terry(lab, f, unl, 4)
    assert relabel.lam == pytest.approx(res.lam)
    for name in ("strength", "se", "human", "human_se", "judge"):
        np.testing.assert_allclose(getattr(relabel, name)[perm], getattr(res, name), atol=1e-7)
