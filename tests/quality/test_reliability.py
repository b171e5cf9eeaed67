"""Reliability on simulated crowds with known spammers: Dawid-Skene and the star noise model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ranking.stats.reliability import (
    dawid_skene,
    majority_labels,
    pair_reliability,
    star_noise,
    star_reliability,
)


def _auc(scores_good: np.ndarray, scores_bad: np.ndarray) -> float:
    """Probability that a good annotator scores above a spammer (ties count half)."""
    diff = scores_good[:, None] - scores_bad[None, :]
    return float(((diff > 0) + 0.5 * (diff == 0)).mean())


def _spammers(rng, n_raters: int, spam: float) -> np.ndarray:
    """Which of the raters spam: a share `spam` of them, drawn at random."""
    spammer = np.zeros(n_raters, bool)
    spammer[rng.choice(n_raters, int(spam * n_raters), replace=False)] = True
    return spammer


def _rate_all(rng, n_items: int, n_raters: int, per_item: int, rate):
    """Each item rated by `per_item` distinct raters drawn at random; rate(item, rater) gives the
    label. The arrays items, raters, labels."""
    items, raters, labels = [], [], []
    for i in range(n_items):
        for r in rng.choice(n_raters, per_item, replace=False):
            items.append(i), raters.append(r), labels.append(rate(i, r))
    return np.array(items), np.array(raters), np.array(labels)


def _pair_crowd(seed: int, *, n_items=300, n_raters=30, per_item=5, spam=0.3, k=4):
    rng = np.random.default_rng(seed)
    truth = rng.choice(k, size=n_items, p=[0.4, 0.35, 0.15, 0.1])
    spammer = _spammers(rng, n_raters, spam)
    accuracy = rng.uniform(0.65, 0.9, n_raters)

    def rate(i, r):
        if spammer[r]:
            # Half the spammers click at random, half always pick one side.
            return rng.integers(k) if r % 2 else 0
        if rng.random() < accuracy[r]:
            return truth[i]
        return rng.choice([c for c in range(k) if c != truth[i]])

    items, raters, labels = _rate_all(rng, n_items, n_raters, per_item, rate)
    return items, raters, labels, truth, spammer, accuracy


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_dawid_skene_separates_spammers_from_good_annotators(seed):
    items, raters, labels, _truth, spammer, _acc = _pair_crowd(seed)
    fit = dawid_skene(items, raters, labels)
    assert _auc(fit.reliability[~spammer], fit.reliability[spammer]) > 0.9
    assert np.allclose(fit.posteriors.sum(axis=1), 1.0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_dawid_skene_labels_items_better_than_majority_vote_with_30_percent_spammers(seed):
    items, raters, labels, truth, _spammer, _acc = _pair_crowd(seed)
    fit = dawid_skene(items, raters, labels)
    ds_acc = (fit.labels == truth).mean()
    mv_acc = (majority_labels(items, labels, len(truth), 4, seed=seed) == truth).mean()
    assert ds_acc > mv_acc


def test_dawid_skene_reliability_estimates_each_annotators_true_accuracy():
    items, raters, labels, _truth, _spammer, accuracy = _pair_crowd(7, n_items=600, spam=0.0)
    fit = dawid_skene(items, raters, labels)
    # Without spammers, expected accuracy Σ p_k pi_r[k, k] is the simulated accuracy.
    assert np.abs(fit.reliability - accuracy).mean() < 0.05
    assert np.corrcoef(fit.reliability, accuracy)[0, 1] > 0.8


def _star_crowd(seed: int, *, n_items=200, n_raters=20, per_item=5, spam=0.3):
    rng = np.random.default_rng(seed)
    truth = rng.uniform(1.5, 4.5, n_items)
    spammer = _spammers(rng, n_raters, spam)
    bias = rng.normal(0, 0.5, n_raters)

    def rate(i, r):
        if spammer[r]:
            return rng.integers(1, 6)
        return np.clip(np.round(truth[i] + bias[r] + rng.normal(0, 0.4)), 1, 5)

    items, raters, scores = _rate_all(rng, n_items, n_raters, per_item, rate)
    return items, raters, scores.astype(float), truth, spammer, bias


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_star_noise_model_separates_random_clickers_and_recovers_bias(seed):
    items, raters, scores, truth, spammer, bias = _star_crowd(seed)
    fit = star_noise(items, raters, scores)
    assert _auc(fit.reliability[~spammer], fit.reliability[spammer]) > 0.9
    good = ~spammer
    # A harsh or lenient but careful rater is told apart from a noisy one: biases track truth.
    assert np.corrcoef(fit.bias[good], bias[good])[0, 1] > 0.8
    # Truth weighted by reliability is closer than the plain mean of the scores.
    plain = np.bincount(items, weights=scores) / np.bincount(items)
    assert np.corrcoef(fit.truth, truth)[0, 1] > np.corrcoef(plain, truth)[0, 1]


def test_frame_helpers_name_raters_and_skip_repeats():
    items, raters, labels, _truth, _spammer, _acc = _pair_crowd(4, n_items=100)
    choices = np.array(["A", "B", "tie", "both_bad"])[labels]
    pair = pd.DataFrame(
        {"item_id": items, "rater_id": [f"r{r:02d}" for r in raters], "choice": choices}
    )
    pair["is_repeat"] = False
    repeat = pair.iloc[:1].assign(is_repeat=True, choice="both_bad")
    table = pair_reliability(pd.concat([pair, repeat]))
    assert table["n_ratings"].sum() == len(pair)
    assert set(table["rater_id"]) == {f"r{r:02d}" for r in np.unique(raters)}
    assert table["agrees_with_ds"].between(0, 1).all()

    s_items, s_raters, scores, *_ = _star_crowd(4, n_items=50)
    star = pd.DataFrame(
        {
            "rating_id": np.arange(len(s_items)),
            "item_id": s_items,
            "rater_id": s_raters,
            "score": scores,
            "is_repeat": False,
        }
    )
    assert star_reliability(star)["n_ratings"].sum() == len(s_items)


def test_empty_frames_give_empty_tables():
    empty = pd.DataFrame(
        columns=["item_id", "rater_id", "choice", "is_repeat", "score", "rating_id"]
    )
    assert pair_reliability(empty).empty
    assert star_reliability(empty).empty


def test_worked_examples_of_docs_statistics():
    classes = ["A", "B", "tie", "both_bad"]
    answers = [list("ABAB") + ["tie"], list("ABBB") + ["tie"], ["A"] * 5]
    items = np.array([i for _ in answers for i in range(5)])
    raters = np.repeat(np.arange(3), 5)
    labels = np.array([classes.index(a) for row in answers for a in row])
    fit = dawid_skene(items, raters, labels)
    assert fit.reliability.round(2).tolist() == [0.87, 0.89, 0.29]
    assert [classes[k] for k in fit.labels] == ["A", "B", "B", "B", "tie"]
    assert fit.posteriors[2, :2].round(2).tolist() == [0.44, 0.56]
    assert [classes[k] for k in majority_labels(items, labels, 5, 4)][2] == "A"

    scores = np.array([4, 2, 5, 3, 3, 1, 4, 2, 1, 5, 2, 4], dtype=float)
    star = star_noise(np.tile(np.arange(4), 3), np.repeat(np.arange(3), 4), scores)
    assert star.bias.round(2).tolist() == [0.5, -0.5, 0.0]
    assert star.sigma.round(2).tolist() == [0.6, 0.6, 2.2]
    assert star.truth.round(2).tolist() == [3.41, 1.62, 4.41, 2.55]
