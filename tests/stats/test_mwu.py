"""The Mann-Whitney p from value counts (``mwu``) is scipy's ``mannwhitneyu`` p, bit for bit,
and the hint-effect table that uses it matches scipy on every row."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from ranking.stats import synthetic
from ranking.stats.agreement import accuracy_flags, judgements
from ranking.stats.bias import hint_effect
from ranking.stats.mwu import asymptotic, mannwhitney_p, value_codes
from ranking.stats.schema import coerce_pair, coerce_star


def _scipy_p(x: np.ndarray, y: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)


def _samples(rng: np.random.Generator, kind: int, n1: int, n2: int) -> tuple[np.ndarray, ...]:
    if kind == 0:  # few categories (0/1 flags, stars)
        k = int(rng.integers(1, 7))
        return rng.integers(0, k, n1) * 1.0, rng.integers(0, k, n2) * 1.0
    if kind == 1:  # shifted stars
        return rng.integers(1, 6, n1) * 1.0, rng.integers(1, 6, n2) + (rng.random(n2) < 0.3) * 1.0
    if kind == 2:  # many distinct non-integer values, negatives and signed zeros
        x = rng.normal(size=n1).round(1)
        x[:3] = -0.0
        return x, rng.normal(0.2, size=n2).round(1)
    return np.full(n1, 3.0), np.full(n2, 3.0)  # all tied: nan, as scipy


@pytest.mark.parametrize("kind", [0, 1, 2, 3])
def test_p_from_counts_is_scipys_p_bit_for_bit(kind):
    rng = np.random.default_rng(kind)
    sizes = [(9, 9), (10, 300), (2000, 1500), (250_000, 300_001)]
    sizes += [tuple(rng.integers(9, 5000, 2)) for _ in range(40)]
    for n1, n2 in sizes:
        x, y = _samples(rng, kind, int(n1), int(n2))
        assert asymptotic(len(x), len(y))
        codes, k = value_codes(np.concatenate([x, y]))
        got = mannwhitney_p(
            np.bincount(codes[: len(x)], minlength=k), np.bincount(codes[len(x) :], minlength=k)
        )
        want = _scipy_p(x, y)
        assert got == want or (np.isnan(got) and np.isnan(want)), (n1, n2, got, want)


def test_value_codes_order_the_values():
    v = np.array([2.5, -1.0, 2.5, 0.0, -0.0, 7.0])
    codes, k = value_codes(v)
    assert k == 4 and codes.tolist() == [2, 0, 2, 1, 1, 3]
    codes, k = value_codes(np.array([5.0, 1.0, 3.0]))
    assert (k, codes.tolist()) == (5, [4, 0, 2])


def test_hint_effect_rows_match_scipy_on_the_samples():
    study = synthetic.generate(n_models=4, n_questions=30, seed=3)
    star, pair = coerce_star(study.star_df), coerce_pair(study.pair_df)
    flags = accuracy_flags(judgements(star, pair))
    table = hint_effect(star, flags)
    assert len(table) > 2
    s = star[star["hint_shown"].notna() & star["score"].notna()]
    for _, row in table[table["metric"] == "score"].iterrows():
        g = s if row["criterion"] == "overall" else s[s["criterion"] == row["criterion"]]
        hint = g["hint_shown"].astype(bool)
        x, y = g.loc[hint, "score"].to_numpy(float), g.loc[~hint, "score"].to_numpy(float)
        assert (row["n_hint"], row["n_no_hint"]) == (len(x), len(y))
        assert row["mean_hint"] == x.mean() and row["mean_no_hint"] == y.mean()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = float(stats.ttest_ind(x, y, equal_var=False).statistic)
        for got, want in ((row["mannwhitney_p"], _scipy_p(x, y)), (row["welch_t"], t)):
            assert got == want or (np.isnan(got) and np.isnan(want))
