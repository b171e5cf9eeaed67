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
    # Small pools: each rater rates many items, so most groups have rater pairs with enough
    # common items at either threshold (with the generator's default pools of 3,000 raters,
    # most groups had none at 5), and the pair-by-pair reference stays quick.
    study = synthetic.generate(n_models=5, n_questions=12, seed=3, n_onsite=6, n_crowd=20,
                               n_public=40)  # fmt: skip
    j = judgements(coerce_star(study.star_df), coerce_pair(study.pair_df))
    alpha, kappa = agreement_tables(j, min_common=min_common)
    assert (kappa["n_rater_pairs"] > 0).sum() >= 9
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


def _self_merge_mean(item, rater, value, min_common):
    """The mean kappa as the frame formula listed the pairs: the group merged with itself on the
    item, the rater seen first on the left, pairs in the order of their first merged row."""
    v, cats = pd.factorize(value, sort=True)
    g = pd.DataFrame({"item": item, "rater": pd.factorize(rater)[0], "v": v})
    m = g.merge(g, on="item")
    m = m[m["rater_x"] < m["rater_y"]]
    kappas = []
    k = len(cats)
    for _, h in m.groupby(["rater_x", "rater_y"], sort=False):
        n = float(len(h))
        po = float((h["v_x"] == h["v_y"]).sum()) / n
        pe = (np.bincount(h["v_x"], minlength=k) * np.bincount(h["v_y"], minlength=k)).sum() / n**2
        if n >= min_common and pe < 1.0:
            kappas.append((po - pe) / (1.0 - pe))
    return (float(np.mean(kappas)) if kappas else float("nan")), len(kappas)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mean_cohen_takes_the_pairs_in_the_self_merge_order(seed):
    rng = np.random.default_rng(seed)
    n_items, n_raters = 300, 25
    rows = [(i, r) for i in range(n_items) for r in rng.choice(n_raters, 4, replace=False)]
    rows = [rows[i] for i in rng.permutation(len(rows))]
    item = np.array([i for i, _ in rows])
    rater = np.array([f"r{r}" for _, r in rows], dtype=object)
    value = rng.integers(0, 3, len(rows)).astype(float)
    got = mean_cohen_codes(item, rater, value, min_common=3)
    want = _self_merge_mean(item, rater, value, 3)
    assert got[1] == want[1] > 20
    assert got[0] == want[0]  # the same float: the same kappas summed in the same order


@pytest.mark.parametrize("whole", [True, False])
def test_pool_rows_equal_each_pool_computed_alone(whole):
    """A pool's mean kappa from the "all" group's pairs (every rater in one pool) or computed
    anew (a rater in two pools) is the float the pool's own rows give."""
    from ranking.stats.unit_agreement import agreement_rows

    rng = np.random.default_rng(4)
    rows = [(i, r) for i in range(200) for r in rng.choice(30, 5, replace=False)]
    rows = [rows[i] for i in rng.permutation(len(rows))]
    rater = np.array([r for _, r in rows])
    pool = np.where(rater % 3 == 0, "p0", np.where(rater % 3 == 1, "p1", "p2"))
    if not whole:
        pool[: len(pool) // 2] = "p0"
    f = pd.DataFrame(
        {
            "mode": "star",
            "criterion": "c",
            "pool": pool,
            "rater_id": [f"r{r:02d}" for r in rater],
            "item_id": [i for i, _ in rows],
            "value": rng.integers(1, 4, len(rows)).astype(float),
        }
    )
    _, k_rows = agreement_rows(f, min_common=3)
    assert [r[1] for r in k_rows] == ["all", "p0", "p1", "p2"]
    for row in k_rows:
        g = f if row[1] == "all" else f[f["pool"] == row[1]]
        g = g[g.groupby("item_id")["value"].transform("size") >= 2]
        want = mean_cohen_codes(
            g["item_id"].to_numpy(), g["rater_id"].to_numpy(), g["value"].to_numpy(), min_common=3
        )
        assert (row[5], row[6]) == want or (np.isnan(row[5]) and np.isnan(want[0]))
        assert (
            row[6]
            == _self_merge_mean(
                g["item_id"].to_numpy(), g["rater_id"].to_numpy(), g["value"].to_numpy(), 3
            )[1]
        )
