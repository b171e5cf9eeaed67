"""The agreement tables over integer codes against the definitions, group by group."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from ranking.stats import synthetic
from ranking.stats.agreement import (
    agreement_tables,
    cohen_kappa,
    fleiss_kappa,
    judgements,
    krippendorff_alpha,
)
from ranking.stats.schema import coerce_pair, coerce_star
from ranking.stats.unit_agreement import mean_cohen_codes, within_item_pairs


def _mean_kappa_by_definition(g: pd.DataFrame, min_common: int) -> tuple[float, int]:
    """Cohen's kappa of every two raters on their common items, pair by pair."""
    by_rater = {r: s.set_index("item_id")["value"] for r, s in g.groupby("rater_id", sort=True)}
    kappas = []
    for a, b in itertools.combinations(sorted(by_rater), 2):
        common = by_rater[a].index.intersection(by_rater[b].index)
        if len(common) < min_common:
            continue
        x, y = by_rater[a][common].to_numpy(), by_rater[b][common].to_numpy()
        k = cohen_kappa(x, y)
        if not np.isnan(k):
            kappas.append(k)
    return (float(np.mean(kappas)) if kappas else float("nan")), len(kappas)


def _groups(f: pd.DataFrame):
    for (mode, crit), g in f.groupby(["mode", "criterion"], sort=True, observed=True):
        yield (str(mode), "all", str(crit)), g
        for pool, gp in g.groupby("pool", sort=True, observed=True):
            yield (str(mode), str(pool), str(crit)), gp


@pytest.mark.parametrize("min_common", [2, 5])
def test_agreement_tables_match_the_definitions(min_common):
    study = synthetic.generate(n_models=5, n_questions=12, seed=3)
    j = judgements(coerce_star(study.star_df), coerce_pair(study.pair_df))
    alpha, kappa = agreement_tables(j, min_common=min_common)
    f = j[j["is_first"]]
    seen = 0
    for (mode, pool, crit), g in _groups(f):
        g = g[g.groupby("item_id")["value"].transform("size") >= 2]
        if g.empty:
            continue
        seen += 1
        a = alpha.set_index(["mode", "pool", "criterion"]).loc[(mode, pool, crit)]
        k = kappa.set_index(["mode", "pool", "criterion"]).loc[(mode, pool, crit)]
        level = "ordinal" if mode == "star" else "nominal"
        assert a["alpha"] == pytest.approx(
            krippendorff_alpha(g["item_id"], g["value"], level), nan_ok=True
        )
        assert a["n_units"] == k["n_units"] == g["item_id"].nunique()
        assert a["n_values"] == len(g)
        counts = pd.crosstab(g["item_id"], g["value"]).to_numpy()
        assert k["fleiss_kappa"] == pytest.approx(fleiss_kappa(counts), nan_ok=True)
        mean, n_pairs = _mean_kappa_by_definition(g, min_common)
        assert k["n_rater_pairs"] == n_pairs
        assert k["mean_cohen_kappa"] == pytest.approx(mean, nan_ok=True)
    assert seen == len(kappa) > 4


def test_within_item_pairs_lists_every_two_ratings_of_an_item_once():
    item = np.array([7, 3, 7, 7, 3, 9])
    p, q = within_item_pairs(item)
    got = sorted(zip(p.tolist(), q.tolist(), strict=True))
    assert got == [(0, 2), (0, 3), (1, 4), (2, 3)]


def test_mean_cohen_codes_leaves_out_pairs_with_few_common_items():
    # Raters 0 and 1 share 4 items (agreeing on all, two labels): kappa 1; rater 2 shares 2.
    item = np.array([1, 2, 3, 4, 1, 2, 3, 4, 1, 2])
    rater = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2])
    value = np.array([1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 2.0, 1.0])
    assert mean_cohen_codes(item, rater, value, min_common=3) == (1.0, 1)
    mean, n = mean_cohen_codes(item, rater, value, min_common=2)
    assert n == 3
    assert mean == pytest.approx((1.0 - 1.0 - 1.0) / 3)


def test_rater_pairs_are_numbered_in_the_order_of_their_smallest_row_key():
    from ranking.stats.unit_agreement import _pair_numbers

    rng = np.random.default_rng(5)
    pair = rng.integers(0, 40, 5000)
    key = rng.permutation(5000).astype(np.int64) * 7
    number, count = _pair_numbers(pair, key)
    # The numbering a sort of the rows by key, then a factorisation, gives.
    order = np.argsort(key)
    expected = np.empty(len(pair), dtype=np.int64)
    expected[order] = pd.factorize(pair[order])[0]
    assert count == len(np.unique(pair))
    assert (number == expected).all()
