"""Annotator reliability from latent-class models, beside the majority vote.

Pairwise choices: Dawid-Skene (1979). Every item i has an unknown true class t_i in K classes
(A, B, tie, both_bad) with prior p_k; annotator r answers l with probability pi_r[k, l] when the
truth is k. EM alternates

* E-step: P(t_i = k | answers) ∝ p_k · Π_{(r, l) on i} pi_r[k, l];
* M-step: pi_r[k, l] = (α + Σ_i T_ik · [r said l on i]) / (Kα + Σ_i T_ik · [r rated i]),
          p_k = (α + Σ_i T_ik) / (Kα + n_items),

started from the majority vote's soft posteriors, until the log-likelihood stops improving.
A rater's reliability is its expected accuracy Σ_k p_k · pi_r[k, k]; a spammer answering at random
sits near 1/K, a careful annotator near 1.

Stars: a continuous counterpart, score_ri = truth_i + bias_r + ε, ε ~ N(0, σ_r²). Alternating
weighted least squares: truth_i = Σ_r w_r (x_ri − bias_r) / Σ_r w_r with w_r = 1/σ_r²;
bias_r = mean_i (x_ri − truth_i) (centred to mean 0 so the model is identified); σ_r² = mean
squared residual against the other raters' truth, shrunk by a weak prior (two pseudo-ratings at
variance 1) and floored. A rater's reliability is 1/σ_r: a random clicker has a large σ, a
harsh but careful rater a large |bias| and a small σ.

Pure numpy, no Django; inputs are parallel integer arrays so callers choose their own labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

PAIR_CLASSES: tuple[str, ...] = ("A", "B", "tie", "both_bad")
SIGMA_FLOOR = 0.05


@dataclass(frozen=True)
class DawidSkene:
    posteriors: np.ndarray  # (n_items, K): P(true class | answers)
    confusions: np.ndarray  # (n_raters, K, K): row = truth, column = answer
    priors: np.ndarray  # (K,)
    reliability: np.ndarray  # (n_raters,): expected accuracy Σ_k p_k pi_r[k, k]
    n_iter: int
    log_likelihood: float

    @property
    def labels(self) -> np.ndarray:
        return self.posteriors.argmax(axis=1)


@dataclass(frozen=True)
class StarNoise:
    truth: np.ndarray  # (n_items,)
    bias: np.ndarray  # (n_raters,)
    sigma: np.ndarray  # (n_raters,)
    n_iter: int

    @property
    def reliability(self) -> np.ndarray:
        return 1.0 / self.sigma


def _check(items: np.ndarray, raters: np.ndarray, values: np.ndarray) -> None:
    if not (len(items) == len(raters) == len(values)):
        raise ValueError("items, raters and values must have the same length")


def majority_posteriors(
    items: np.ndarray, labels: np.ndarray, n_items: int, n_classes: int
) -> np.ndarray:
    """Soft majority vote: each item's share of answers per class (ties split evenly)."""
    counts = np.zeros((n_items, n_classes))
    np.add.at(counts, (items, labels), 1.0)
    total = counts.sum(axis=1, keepdims=True)
    uniform = np.full((n_items, n_classes), 1.0 / n_classes)
    shares: npt.NDArray[np.float64] = np.divide(counts, total, out=uniform, where=total > 0)
    return shares


def majority_labels(
    items: np.ndarray, labels: np.ndarray, n_items: int, n_classes: int, seed: int = 0
) -> np.ndarray:
    """Hard majority vote per item; a shared top count is broken at random (seeded)."""
    post = majority_posteriors(items, labels, n_items, n_classes)
    rng = np.random.default_rng(seed)
    jitter = rng.random(post.shape) * 1e-9
    top: npt.NDArray[np.intp] = (post + jitter * (post == post.max(axis=1, keepdims=True))).argmax(
        axis=1
    )
    return top


def _m_step(
    items: np.ndarray,
    raters: np.ndarray,
    labels: np.ndarray,
    post: np.ndarray,
    n_raters: int,
    n_classes: int,
    alpha: float,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    counts = np.full((n_raters, n_classes, n_classes), alpha)
    # numpy's stub for ufunc.at leaves out index tuples holding a slice, which numpy accepts.
    np.add.at(counts, (raters, slice(None), labels), post[items])  # type: ignore[arg-type]
    # np.add.at with a slice in the middle adds post[items] (n, K) over the truth axis.
    confusions = counts / counts.sum(axis=2, keepdims=True)
    priors = (alpha + post.sum(axis=0)) / (n_classes * alpha + post.shape[0])
    return confusions, priors


def _e_step(
    items: np.ndarray,
    raters: np.ndarray,
    labels: np.ndarray,
    confusions: np.ndarray,
    priors: np.ndarray,
    n_items: int,
) -> tuple[npt.NDArray[np.float64], float]:
    log_post = np.tile(np.log(priors), (n_items, 1))
    np.add.at(log_post, items, np.log(confusions[raters, :, labels]))
    top = log_post.max(axis=1, keepdims=True)
    weights = np.exp(log_post - top)
    norm = weights.sum(axis=1, keepdims=True)
    return weights / norm, float((top + np.log(norm)).sum())


def dawid_skene(
    items: np.ndarray,
    raters: np.ndarray,
    labels: np.ndarray,
    *,
    n_classes: int = len(PAIR_CLASSES),
    alpha: float = 0.01,
    max_iter: int = 200,
    tol: float = 1e-7,
) -> DawidSkene:
    """Dawid-Skene EM over answers (item index, rater index, class index), all 0-based ints.

    ``alpha`` is a small additive (Dirichlet) smoothing so an unseen answer is not impossible.
    """
    items, raters, labels = (np.asarray(a, dtype=np.int64) for a in (items, raters, labels))
    _check(items, raters, labels)
    n_items = int(items.max()) + 1 if len(items) else 0
    n_raters = int(raters.max()) + 1 if len(raters) else 0
    post = majority_posteriors(items, labels, n_items, n_classes)
    confusions = np.full((n_raters, n_classes, n_classes), 1.0 / n_classes)
    priors = np.full(n_classes, 1.0 / n_classes)
    ll, it = -np.inf, 0
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        confusions, priors = _m_step(items, raters, labels, post, n_raters, n_classes, alpha)
        post, new_ll = _e_step(items, raters, labels, confusions, priors, n_items)
        if abs(new_ll - ll) < tol * max(1.0, abs(new_ll)):
            ll = new_ll
            break
        ll = new_ll
    reliability = np.einsum("k,rkk->r", priors, confusions)
    return DawidSkene(post, confusions, priors, reliability, it, ll)


def _loo_sigma(
    items: np.ndarray,
    raters: np.ndarray,
    scores: np.ndarray,
    bias: np.ndarray,
    w: np.ndarray,
    n_items: int,
    n_raters: int,
) -> np.ndarray:
    """Each rater's residual sd against the *other* raters' weighted truth: measured against a
    truth it helped make, a rater would look more precise and weigh ever more (ML collapse)."""
    x = scores - bias[raters]
    num = np.bincount(items, weights=w * x, minlength=n_items)
    den = np.bincount(items, weights=w, minlength=n_items)
    den_other = den[items] - w
    has_other = den_other > 1e-12
    truth_other = np.divide(num[items] - w * x, den_other, out=np.zeros_like(x), where=has_other)
    err2 = np.where(has_other, (x - truth_other) ** 2, 0.0)
    n = np.bincount(raters, weights=has_other.astype(float), minlength=n_raters)
    var = np.bincount(raters, weights=err2, minlength=n_raters)
    # An inverse-gamma prior worth two ratings at variance 1 keeps a rater with few ratings near
    # the middle instead of at either extreme.
    return np.maximum(np.sqrt((var + 2.0) / (n + 2.0)), SIGMA_FLOOR)


def star_noise(
    items: np.ndarray,
    raters: np.ndarray,
    scores: np.ndarray,
    *,
    max_iter: int = 100,
    tol: float = 1e-6,
) -> StarNoise:
    """Fit score = truth_item + bias_rater + N(0, sigma_rater²) by alternating weighted means
    (sigma from leave-one-rater-out residuals)."""
    items, raters = (np.asarray(a, dtype=np.int64) for a in (items, raters))
    scores = np.asarray(scores, dtype=float)
    _check(items, raters, scores)
    n_items = int(items.max()) + 1 if len(items) else 0
    n_raters = int(raters.max()) + 1 if len(raters) else 0
    per_rater = np.maximum(np.bincount(raters, minlength=n_raters), 1)
    bias, sigma, truth = np.zeros(n_raters), np.ones(n_raters), np.zeros(n_items)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        w = 1.0 / sigma[raters] ** 2
        num = np.bincount(items, weights=w * (scores - bias[raters]), minlength=n_items)
        den = np.bincount(items, weights=w, minlength=n_items)
        truth = np.divide(num, den, out=np.zeros(n_items), where=den > 0)
        resid = scores - truth[items]
        new_bias = np.bincount(raters, weights=resid, minlength=n_raters) / per_rater
        new_bias -= new_bias.mean() if n_raters else 0.0
        new_sigma = _loo_sigma(items, raters, scores, new_bias, w, n_items, n_raters)
        done = np.allclose(new_bias, bias, atol=tol) and np.allclose(new_sigma, sigma, atol=tol)
        bias, sigma = new_bias, new_sigma
        if done:
            break
    return StarNoise(truth, bias, sigma, it)


def _codes(values: pd.Series) -> tuple[np.ndarray, list[str]]:
    codes, uniques = pd.factorize(values.astype(str), sort=True)
    return codes.astype(np.int64), [str(u) for u in uniques]


def _shared(df: pd.DataFrame) -> pd.DataFrame:
    """The ratings of items that at least two raters rated. An item rated once tells nothing
    about anyone's errors (its truth is the one rating), so the models are fitted on these; a
    rater with none of them has no figures (empty), rather than a prior dressed as one."""
    item = pd.factorize(df["item_id"])[0].astype(np.int64)
    rater = pd.factorize(df["rater_id"])[0].astype(np.int64)
    n_raters = int(rater.max()) + 1 if len(rater) else 1
    pairs = pd.unique(item * n_raters + rater)  # one per (item, rater)
    raters_per_item = np.bincount(
        pairs // n_raters, minlength=int(item.max()) + 1 if len(item) else 0
    )
    return df[raters_per_item[item] >= 2]


def _per_rater(names: list[str], n: np.ndarray, fitted: pd.DataFrame) -> pd.DataFrame:
    """Every rater with its rating count, the fitted figures where it has any (NaN else)."""
    out = pd.DataFrame({"rater_id": names, "n_ratings": n})
    return out.merge(fitted.astype({"rater_id": str}), on="rater_id", how="left")


def pair_reliability(pair_df: pd.DataFrame) -> pd.DataFrame:
    """Per rater of a pairwise frame (first ratings): n_ratings, Dawid-Skene reliability and
    agreement with the Dawid-Skene label of the items they rated (items rated by one rater
    are left out of both; ``_shared``)."""
    cols = ["rater_id", "n_ratings", "ds_reliability", "agrees_with_ds"]
    df = pair_df[~pair_df["is_repeat"].astype(bool)] if len(pair_df) else pair_df
    df = df[df["choice"].isin(PAIR_CLASSES)] if len(df) else df
    if df.empty:
        return pd.DataFrame(columns=cols)
    everyone, names = _codes(df["rater_id"])
    df = _shared(df)
    fitted = pd.DataFrame(columns=["rater_id", "ds_reliability", "agrees_with_ds"])
    if len(df):
        items, _ = _codes(df["item_id"])
        raters, fit_names = _codes(df["rater_id"])
        labels = df["choice"].map({c: i for i, c in enumerate(PAIR_CLASSES)}).to_numpy(np.int64)
        fit = dawid_skene(items, raters, labels)
        agree = np.bincount(raters, weights=(fit.labels[items] == labels).astype(float))
        fitted = pd.DataFrame(
            {
                "rater_id": fit_names,
                "ds_reliability": fit.reliability,
                "agrees_with_ds": agree / np.bincount(raters),
            }
        )
    return _per_rater(names, np.bincount(everyone), fitted)[cols].astype(
        {"ds_reliability": float, "agrees_with_ds": float}
    )


def star_reliability(star_df: pd.DataFrame) -> pd.DataFrame:
    """Per rater of a star frame (first ratings, mean over criteria per rating): n_ratings,
    bias and noise sigma of the bias + noise model."""
    cols = ["rater_id", "n_ratings", "star_bias", "star_sigma"]
    df = star_df[~star_df["is_repeat"].astype(bool)] if len(star_df) else star_df
    if df.empty:
        return pd.DataFrame(columns=cols)
    per = df.groupby(["rating_id", "rater_id", "item_id"], as_index=False)["score"].mean()
    everyone, names = _codes(per["rater_id"])
    per = _shared(per)
    fitted = pd.DataFrame(columns=["rater_id", "star_bias", "star_sigma"])
    if len(per):
        items, _ = _codes(per["item_id"])
        raters, fit_names = _codes(per["rater_id"])
        fit = star_noise(items, raters, per["score"].to_numpy(float))
        fitted = pd.DataFrame(
            {"rater_id": fit_names, "star_bias": fit.bias, "star_sigma": fit.sigma}
        )
    return _per_rater(names, np.bincount(everyone), fitted)[cols].astype(
        {"star_bias": float, "star_sigma": float}
    )
