"""PPI++ by simulation with known truth: 1,000 simulated studies per scenario (vectorised), with a
judge that prefers longer answers. The combined 95% intervals must cover the true human mean at
least 94% of the time, and be narrower than the human-only ones when the judge tracks people."""

from __future__ import annotations

import numpy as np
import pytest

from ranking.stats import ppi

N_STUDIES = 1000
N_HUMAN, N_JUDGE_ONLY = 150, 600
# Answer length (standardised) differs by model: the length-biased judge flatters model 3.
LENGTH = np.array([-1.0, -0.3, 0.3, 1.0])
TRUE_MEAN = np.array([2.2, 2.8, 3.1, 3.0])


def _star_studies(seed: int, judge_weight: float, length_bias: float):
    """(studies, models, items) human stars and judge stars. Humans: the model's true mean plus
    item and rater noise. Judge: ``judge_weight`` x the item's quality plus ``length_bias`` x the
    answer's length, plus its own noise (so its mean is biased per model)."""
    rng = np.random.default_rng(seed)
    shape = (N_STUDIES, len(TRUE_MEAN), N_HUMAN + N_JUDGE_ONLY)
    quality = TRUE_MEAN[None, :, None] + rng.normal(0, 0.8, shape)
    length = LENGTH[None, :, None] + rng.normal(0, 0.5, shape)
    humans = quality + rng.normal(0, 0.6, shape)
    judge = 1.0 + judge_weight * quality + length_bias * length + rng.normal(0, 0.5, shape)
    return humans, judge


def _coverage(result: ppi.MeanResult, truth: np.ndarray) -> tuple[float, float]:
    lo, hi = ppi.interval(result.estimate, result.se)
    h_lo, h_hi = ppi.interval(result.human, result.human_se)
    t = truth[None, :]
    return float(np.mean((lo <= t) & (t <= hi))), float(np.mean((h_lo <= t) & (t <= h_hi)))


def test_star_means_with_a_length_biased_judge_cover_the_truth_and_are_narrower():
    humans, judge = _star_studies(seed=2024, judge_weight=0.8, length_bias=0.7)
    r = ppi.ppi_mean(humans[..., :N_HUMAN], judge[..., :N_HUMAN], judge[..., N_HUMAN:])
    coverage, human_coverage = _coverage(r, TRUE_MEAN)
    assert coverage >= 0.94, coverage
    assert human_coverage >= 0.94, human_coverage
    # The judge alone flatters the long-answer model 3 past model 2, the reverse of people.
    judge_mean = r.judge.mean(axis=0)
    assert judge_mean[3] > judge_mean[2] + 0.2 and TRUE_MEAN[3] < TRUE_MEAN[2]
    assert np.mean(r.estimate[:, 3] < r.estimate[:, 2]) > 0.5  # the combined one does not
    # Narrower in (nearly) every study, by the theory's factor sqrt(1 - rho^2 / (1 + n / N)):
    # Var(Y) = 0.8^2 + 0.6^2, Var(f) = (0.8 * 0.8)^2 + (0.7 * 0.5)^2 + 0.5^2, Cov = 0.8 * 0.8^2.
    rho2 = (0.8 * 0.64) ** 2 / ((0.64 + 0.36) * (0.64**2 + 0.35**2 + 0.25))
    expected = np.sqrt(1 - rho2 / (1 + N_HUMAN / N_JUDGE_ONLY))
    assert np.mean(r.se < r.human_se) > 0.99
    assert np.mean(r.se / r.human_se) == pytest.approx(expected, abs=0.01)


def test_a_judge_unrelated_to_people_costs_almost_nothing_and_stays_valid():
    humans, judge = _star_studies(seed=7, judge_weight=0.0, length_bias=1.0)
    r = ppi.ppi_mean(humans[..., :N_HUMAN], judge[..., :N_HUMAN], judge[..., N_HUMAN:])
    coverage, _ = _coverage(r, TRUE_MEAN)
    assert coverage >= 0.94, coverage
    # lambda is tuned to ~0, so the interval is the human one up to noise in the tuning.
    assert float(np.median(r.lam)) < 0.05
    assert np.mean(r.se / r.human_se) < 1.01


def test_win_rates_with_ties_and_a_length_biased_judge():
    """Outcomes 1 / 0.5 / 0 from the model's side; the judge copies the human verdict half the
    time and otherwise (mostly) prefers the longer answer."""
    rng = np.random.default_rng(99)
    p_win = np.array([0.2, 0.35, 0.5, 0.6])
    p_tie = 0.15
    truth = p_win + p_tie / 2
    shape = (N_STUDIES, len(p_win), N_HUMAN + N_JUDGE_ONLY)
    u = rng.random(shape)
    human = np.where(
        u < p_win[None, :, None], 1.0, np.where(u < p_win[None, :, None] + p_tie, 0.5, 0.0)
    )
    longer = rng.random(shape) < (0.5 + 0.45 * np.tanh(2 * LENGTH))[None, :, None]
    judge = np.where(rng.random(shape) < 0.5, human, longer.astype(float))
    r = ppi.ppi_mean(human[..., :N_HUMAN], judge[..., :N_HUMAN], judge[..., N_HUMAN:])
    coverage, human_coverage = _coverage(r, truth)
    assert coverage >= 0.94, coverage
    assert human_coverage >= 0.94, human_coverage
    judge_bias = r.judge.mean(axis=0) - truth  # the judge alone is biased both ways
    assert judge_bias[3] > 0.1 and judge_bias[0] < -0.1
    assert np.mean(r.se < r.human_se) > 0.95


def test_bradley_terry_with_a_length_biased_judge_covers_the_true_strengths():
    """Human outcomes follow Bradley-Terry exactly, so the estimand is the true (centred)
    strength; the judge copies people 70% of the time and otherwise favours length."""
    rng = np.random.default_rng(5)
    beta = np.array([-0.8, -0.2, 0.3, 0.7])
    beta = beta - beta.mean()
    n, n_unl, m = 200, 600, len(beta)
    covered = narrower = 0
    for _ in range(N_STUDIES):
        a = rng.integers(0, m, n + n_unl)
        b = (a + rng.integers(1, m, n + n_unl)) % m
        y = (rng.random(n + n_unl) < 1 / (1 + np.exp(-(beta[a] - beta[b])))).astype(float)
        biased = (rng.random(n + n_unl) < 0.5 + 0.4 * np.tanh(LENGTH[a] - LENGTH[b])).astype(float)
        f = np.where(rng.random(n + n_unl) < 0.7, y, biased)
        res = ppi.ppi_bradley_terry(
            ppi.Games(a[:n], b[:n], y[:n]), f[:n], ppi.Games(a[n:], b[n:], f[n:]), m
        )
        covered += int(np.sum(np.abs(res.strength - beta) <= ppi.Z95 * res.se))
        narrower += int(np.all(res.se < res.human_se))
    assert covered / (N_STUDIES * m) >= 0.94
    assert narrower / N_STUDIES > 0.95
