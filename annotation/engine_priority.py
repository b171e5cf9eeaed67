"""Where a human rating buys the most ranking certainty: the priorities of adaptive assignment.

Pure numpy (no Django), so the engine's refresh (annotation/engine_adaptive.py) and the benchmark
(benchmarks/adaptive_assignment.py) use the very same function.

Pairwise studies: Bradley-Terry strengths are bootstrapped from the human ratings so far
(ranking/stats/bradley_terry.py); the uncertainty of the pair (i, j) is

    u_ij = min(P*(theta_i > theta_j), P*(theta_j > theta_i))

over the bootstrap rounds: 0 when every resample orders the two models the same way, 0.5 when
their order is a coin toss (their intervals overlap completely). One virtual tie per pair of
models joins the real matches (a prior: a few lucky wins do not make a model look settled), and
before any rating every pair counts as a coin toss. An item's priority is the u of its pair.

Star studies: each model's mean score with its standard error; u_ij = Phi(-|m_i - m_j| / se_ij)
is the normal-approximation chance that the two means are in the wrong order, and a model's
uncertainty is its largest u against any other model. An item's priority is its model's.

Priorities are rounded to PRIORITY_STEP so that items of equally uncertain pairs tie, and the
engine then serves them lowest load first (spreading ratings over questions).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from ranking.stats import bradley_terry

PRIORITY_STEP = 0.02
# The engine refreshes a study's priorities after this many human submits (or REFRESH_SECONDS
# after its last refresh); the benchmark refreshes its simulation at the same pace.
REFRESH_EVERY = 20
REFRESH_SECONDS = 60
BOOTSTRAP_ROUNDS = 100
# A model with fewer ratings than this has an unknown mean (uncertainty 0.5 against everyone).
MIN_STAR_RATINGS = 2

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


def quantize(u: Floats) -> Floats:
    return np.round(np.asarray(u, dtype=float) / PRIORITY_STEP) * PRIORITY_STEP


def pair_uncertainty(
    a: Ints, b: Ints, s: Floats, n_models: int, *, rng: np.random.Generator
) -> Floats:
    """(M, M) order uncertainty u_ij in [0, 0.5] from matches (A's score s in {0, .5, 1})."""
    if len(a) == 0:
        return np.full((n_models, n_models), 0.5)
    # One virtual tie per pair of models, resampled with the real matches: without it a model
    # that won its first three games would look certain to the bootstrap, and never be asked
    # about again.
    i, j = np.triu_indices(n_models, k=1)
    boot = bradley_terry.bootstrap(
        np.concatenate([np.asarray(a, dtype=np.int64), i]),
        np.concatenate([np.asarray(b, dtype=np.int64), j]),
        np.concatenate([np.asarray(s, dtype=float), np.full(len(i), 0.5)]),
        n_models,
        n_rounds=BOOTSTRAP_ROUNDS,
        rng=rng,
    )
    known = ~np.isnan(boot)
    both = known[:, :, None] & known[:, None, :]
    greater = np.where(both, boot[:, :, None] > boot[:, None, :], False).mean(axis=0)
    less = np.where(both, boot[:, :, None] < boot[:, None, :], False).mean(axis=0)
    share_known = both.mean(axis=0)
    # Rounds where either model never played count as a coin toss.
    p_greater = greater + (1.0 - share_known) / 2.0
    p_less = less + (1.0 - share_known) / 2.0
    return np.asarray(np.minimum(p_greater, p_less), dtype=float)


def star_uncertainty(model: Ints, value: Floats, n_models: int) -> Floats:
    """(M,) each model's largest chance of being out of order with another model's mean."""
    model = np.asarray(model, dtype=np.int64)
    value = np.asarray(value, dtype=float)
    count = np.bincount(model, minlength=n_models).astype(float)
    total = np.bincount(model, weights=value, minlength=n_models)
    squares = np.bincount(model, weights=value * value, minlength=n_models)
    known = count >= MIN_STAR_RATINGS
    safe = np.maximum(count, 1.0)
    mean = total / safe
    var = np.maximum(squares / safe - mean * mean, 0.0) * safe / np.maximum(count - 1.0, 1.0)
    # A floor on the spread: a model rated the same every time is not known exactly.
    se2 = np.maximum(var, 0.25) / safe
    out = np.zeros(n_models)
    for i in range(n_models):
        worst = 0.0
        for j in range(n_models):
            if i == j:
                continue
            if not (known[i] and known[j]):
                worst = 0.5
                break
            z = abs(mean[i] - mean[j]) / math.sqrt(se2[i] + se2[j])
            worst = max(worst, 0.5 * math.erfc(z / math.sqrt(2.0)))
        out[i] = worst
    return out


def pairwise_item_priorities(item_a: Ints, item_b: Ints, u: Floats) -> Floats:
    """Priority of each pairwise item from its two models' order uncertainty."""
    return quantize(u[np.asarray(item_a), np.asarray(item_b)])


def star_item_priorities(item_model: Ints, u: Floats) -> Floats:
    """Priority of each star item from its model's uncertainty."""
    return quantize(u[np.asarray(item_model)])
