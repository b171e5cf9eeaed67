"""Bradley-Terry against a direct likelihood maximisation; report filters and rater exclusion."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from ranking.stats import bradley_terry as bt
from ranking.stats import build_report, synthetic
from ranking.stats.filters import filter_frame
from ranking.stats.schema import coerce_star


def test_bt_mm_matches_direct_likelihood_maximisation():
    rng = np.random.default_rng(7)
    m = 6
    true = np.linspace(1.0, -1.0, m)
    a = rng.integers(0, m, 5000)
    b = (a + rng.integers(1, m, 5000)) % m
    p = 1 / (1 + np.exp(true[b] - true[a]))
    s = np.where(rng.random(5000) < 0.1, 0.5, (rng.random(5000) < p).astype(float))
    w, n = bt.aggregate(a, b, s, m)
    est = bt.fit(w, n, prior=0.0)

    def nll(theta: np.ndarray) -> float:
        # Ties count half a win each way: sum_ij W_ij log sigmoid(theta_i - theta_j).
        d = theta[:, None] - theta[None, :]
        return float(-(w * -np.logaddexp(0.0, -d)).sum())

    ref = optimize.minimize(nll, np.zeros(m), method="BFGS", options={"gtol": 1e-10}).x
    ref -= ref.mean()
    np.testing.assert_allclose(est, ref, atol=1e-5)
    assert np.corrcoef(est, true)[0, 1] > 0.99


def test_bt_handles_a_model_that_never_wins():
    a = np.array([0, 0, 1, 1])
    b = np.array([2, 2, 2, 0])
    s = np.array([1.0, 1.0, 1.0, 0.5])
    w, n = bt.aggregate(a, b, s, 3)
    est = bt.fit(w, n)
    assert np.isfinite(est).all()
    assert est[2] == est.min()


@pytest.fixture(scope="module")
def study():
    return synthetic.generate(
        n_models=5, n_questions=30, n_pairs_per_question=4, n_public=30, seed=3
    )


def test_filters_by_pool_task_type_criterion_and_time(study):
    star = coerce_star(study.star_df)
    assert set(filter_frame(star, pools=["judge"])["pool"]) == {"judge"}
    assert set(filter_frame(star, criteria=["accuracy"])["criterion"]) == {"accuracy"}
    assert set(filter_frame(star, task_types=["type-1"])["task_type"]) == {"type-1"}
    mid = star["submitted_at"].median()
    early = filter_frame(star, end=mid)
    assert (early["submitted_at"] < mid).all()
    # A naive bound is read as UTC.
    naive = filter_frame(star, start=mid.tz_convert(None))
    assert (naive["submitted_at"] >= mid).all()


def test_report_filters_and_excludes_inaccurate_raters(study):
    r = build_report(
        study.star_df, study.pair_df, pools=["crowd", "public"], n_shuffles=2, n_bootstrap=2
    )
    assert r["leaderboard_star"].empty
    assert set(r["accuracy_by_rater"]["pool"]) <= {"crowd", "public"}
    full = build_report(study.star_df, study.pair_df, n_shuffles=2, n_bootstrap=2)
    acc = full["accuracy_by_rater"]
    threshold = float(acc["accuracy"].median())
    r2 = build_report(
        study.star_df, study.pair_df, min_accuracy=threshold, n_shuffles=2, n_bootstrap=2
    )
    excluded = set(r2["meta"]["excluded_raters"])
    assert excluded == set(acc.loc[acc["accuracy"] < threshold, "rater_id"])
    assert r2["accuracy_by_rater"].set_index("rater_id")["excluded"].loc[sorted(excluded)].all()
    diag = r2["annotator_diagnostics"]
    assert not set(diag["rater_id"]) & excluded
    pts_full = full["leaderboard_points"].query("rater_kind == 'all'")["games"].sum()
    pts_r2 = r2["leaderboard_points"].query("rater_kind == 'all'")["games"].sum()
    assert pts_r2 < pts_full


def test_time_range_filter_in_report(study):
    star = study.star_df
    mid = pd.Timestamp(star["submitted_at"].median())
    r = build_report(star, None, start=mid, n_shuffles=0, n_bootstrap=0)
    assert r["meta"]["n_star_rows"] == int((star["submitted_at"] >= mid).sum())


@pytest.mark.parametrize("m", [2, 5, 8, 9, 20, 33])
def test_bt_newton_compiled_system_equals_numpy_bit_for_bit(m):
    """The compiled Newton system (numpy's exp, numpy's row-sum order) is the numpy one."""
    rng = np.random.default_rng(m)
    n_rounds = 40
    n = rng.poisson(30.0, size=(n_rounds, m, m)).astype(float)
    n = n + n.transpose(0, 2, 1)
    n[:, np.arange(m), np.arange(m)] = 0.0
    n[rng.random((n_rounds, m, m)) < 0.1] = 0.0  # some pairs unplayed
    w = rng.binomial(n.astype(np.int64), 0.5) + 0.5 * (rng.random(n.shape) < 0.3)
    active = rng.random((n_rounds, m)) < 0.9
    n_act = np.maximum(active.sum(axis=1), 1)[:, None, None]
    fix = (active[:, :, None] & active[:, None, :]).astype(float) / n_act
    theta = rng.normal(scale=2.0, size=(n_rounds, m))
    theta[0, 0] = 800.0  # exp overflows to inf in some cells
    wins = w.sum(axis=2)
    if bt._system_fast is None:
        pytest.skip("numba is not installed")
    grad, lap = bt._system(theta, wins, n, active, fix)
    ref_grad, ref_lap = bt._system_numpy(theta, wins, n, active, fix)
    assert np.array_equal(grad, ref_grad)
    assert np.array_equal(lap, ref_lap)
