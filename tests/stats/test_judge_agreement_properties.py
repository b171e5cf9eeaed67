"""Properties: each new agreement formula equals a second implementation on random data
(scikit-learn, the krippendorff package, scipy, or a slow loop written here)."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_recall_fscore_support

from ranking.stats.intervals import alpha_batch, cohen_from_tables, fleiss_batch, patterns
from ranking.stats.majority import macro_prf, other_counts
from ranking.stats.ranking_agreement import rank_corr_rows

labels_pairs = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=2, max_size=60)


@settings(max_examples=80, deadline=None)
@given(labels_pairs)
def test_cohen_kappa_from_the_joint_table_equals_sklearn(pairs):
    x = np.array([p[0] for p in pairs])
    y = np.array([p[1] for p in pairs])
    table = np.zeros((4, 4))
    np.add.at(table, (x, y), 1)
    ours = cohen_from_tables(table[None])[0]
    if np.isnan(ours):
        # Both raters used one and the same label: chance agreement 1, kappa undefined.
        assert len(set(x) | set(y)) == 1
        return
    assert ours == pytest.approx(cohen_kappa_score(x, y), abs=1e-9)


@settings(max_examples=80, deadline=None)
@given(labels_pairs)
def test_macro_precision_recall_f1_equal_sklearn(pairs):
    truth = np.array([p[0] for p in pairs])
    pred = np.array([p[1] for p in pairs])
    conf = confusion_matrix(truth, pred, labels=[0, 1, 2, 3])
    p, r, f, _ = precision_recall_fscore_support(truth, pred, average="macro", zero_division=0)
    assert macro_prf(conf) == pytest.approx((p, r, f), abs=1e-9)


units_strategy = st.lists(
    st.lists(st.one_of(st.none(), st.integers(1, 5)), min_size=3, max_size=3),
    min_size=3,
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(units_strategy, st.sampled_from(["nominal", "ordinal", "interval"]))
def test_alpha_over_patterns_equals_the_krippendorff_package(rows, level):
    data = np.array([[np.nan if v is None else v for v in r] for r in rows], dtype=float)
    cats = np.unique(data[~np.isnan(data)])
    counts = np.stack([(data == c).sum(axis=1) for c in cats], axis=1) if len(cats) else None
    if counts is None or len(cats) < 2 or (counts.sum(axis=1) >= 2).sum() == 0:
        return
    pairable = data[(~np.isnan(data)).sum(axis=1) >= 2]
    if len(np.unique(pairable[~np.isnan(pairable)])) < 2:
        return
    uniq, freq = patterns(counts)
    ours = alpha_batch(uniq, cats, freq[None].astype(float), level)[0]
    theirs = krippendorff.alpha(
        reliability_data=data.T, level_of_measurement=level, value_domain=cats
    )
    assert ours == pytest.approx(theirs, abs=1e-9)


def _fleiss_slow(counts: np.ndarray) -> float:
    """Fleiss (1971) written out with loops, for units of any size >= 2."""
    units = [c for c in counts if c.sum() >= 2]
    p_i = [(sum(v * v for v in c) - c.sum()) / (c.sum() * (c.sum() - 1)) for c in units]
    total = sum(c.sum() for c in units)
    p_j = [sum(c[k] for c in units) / total for k in range(counts.shape[1])]
    pe = sum(p * p for p in p_j)
    return (sum(p_i) / len(p_i) - pe) / (1 - pe)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=3, max_size=3), min_size=2, max_size=40))
def test_fleiss_over_patterns_equals_a_slow_loop(rows):
    counts = np.array(rows)
    if (counts.sum(axis=1) >= 2).sum() == 0:
        return
    p_j = counts[counts.sum(axis=1) >= 2].sum(axis=0)
    if (p_j > 0).sum() < 2:
        return
    uniq, freq = patterns(counts)
    assert fleiss_batch(uniq, freq[None].astype(float))[0] == pytest.approx(
        _fleiss_slow(counts), abs=1e-9
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 2), st.booleans()), min_size=1, max_size=50
    )
)
def test_other_counts_equal_a_slow_leave_one_out(rows):
    item = np.array([r[0] for r in rows])
    code = np.array([r[1] for r in rows])
    human = np.array([r[2] for r in rows])
    fast = other_counts(item, code, human, 3)
    for i in range(len(rows)):
        slow = np.zeros(3, int)
        for k in range(len(rows)):
            if k != i and human[k] and item[k] == item[i]:
                slow[code[k]] += 1
        assert (fast[i] == slow).all()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=3, max_size=12),
)
def test_row_rank_correlations_equal_scipy(pairs):
    x = np.array([[p[0] for p in pairs]], dtype=float)
    y = np.array([[p[1] for p in pairs]], dtype=float)
    rho, tau = rank_corr_rows(x, y)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert np.isnan(rho[0])
        return
    assert rho[0] == pytest.approx(stats.spearmanr(x[0], y[0]).statistic, abs=1e-9)
    assert tau[0] == pytest.approx(stats.kendalltau(x[0], y[0], variant="b").statistic, abs=1e-9)


def _slow_variant_accuracy(rows, variant):
    """Accuracy within sigma of the judge "j" under ``variant``, with plain loops."""
    hits = total = 0
    for rater, item, score in rows:
        if rater != "j":
            continue
        if variant == "paper":
            ref = [s for _, i, s in rows if i == item]
            if len(ref) < 2:
                continue
        elif variant == "leave_one_out":
            ref = [s for r, i, s in rows if i == item and r != rater]
        else:
            ref = [s for r, i, s in rows if i == item and r != "j"]
        if not ref:
            continue
        mean = sum(ref) / len(ref)
        sigma = (sum((s - mean) ** 2 for s in ref) / len(ref)) ** 0.5
        ok = abs(score - mean) <= 1e-9 if sigma <= 1e-9 else abs(score - mean) < sigma
        hits += ok
        total += 1
    return hits / total if total else None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["h1", "h2", "h3", "j"]), st.integers(0, 4), st.integers(1, 3)),
        min_size=2,
        max_size=40,
        unique_by=lambda r: (r[0], r[1]),
    )
)
def test_accuracy_variants_equal_a_slow_loop(rows):
    from ranking.stats.agreement import judgements
    from ranking.stats.judge_accuracy import accuracy_variants
    from ranking.stats.schema import coerce_pair, coerce_star

    from .helpers import star_frame

    frame = star_frame(
        [(r, i, "m", "c", s, False, "judge" if r == "j" else "onsite") for r, i, s in rows]
    )
    j = judgements(coerce_star(frame), coerce_pair(None))
    t = accuracy_variants(j)
    t = t[t["group_by"] == "judge"].set_index("variant")["accuracy"]
    for variant in ("paper", "leave_one_out", "humans_only"):
        slow = _slow_variant_accuracy(rows, variant)
        if slow is None:
            assert variant not in t.index
        else:
            assert t[variant] == pytest.approx(slow)
    # With min_ratings: a rater with fewer items rated is not scored; the others' figures and
    # everyone's truth are unchanged.
    t3 = accuracy_variants(j, min_ratings=3)
    n_judged = {r: len({i for q, i, _ in rows if q == r}) for r, _, _ in rows}
    assert set(t3["group"]) <= {r for r, n in n_judged.items() if n >= 3} | {"onsite", "all"}
    if n_judged.get("j", 0) >= 3:
        judged = t3[t3["group_by"] == "judge"].set_index("variant")["accuracy"]
        assert judged.to_dict() == pytest.approx(t.to_dict())


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_length_glm_equals_a_generic_optimiser(seed):
    from scipy.optimize import minimize

    from ranking.stats.length_control import fit_length_glm

    rng = np.random.default_rng(seed)
    n, m = 300, 4
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    z = np.tanh(rng.normal(size=n))
    y = rng.choice([0.0, 0.5, 1.0], size=n)
    theta, gamma = fit_length_glm(a, b, y, z, m)

    def loss(beta):
        eta = beta[a] - beta[b] + beta[m] * z
        ll = y * eta - np.logaddexp(0.0, eta)
        return -ll.sum() + 0.5e-4 * (beta[:m] ** 2).sum()

    ref = minimize(loss, np.zeros(m + 1), method="BFGS", options={"gtol": 1e-10}).x
    assert gamma == pytest.approx(ref[m], abs=1e-4)
    assert theta == pytest.approx(ref[:m] - ref[:m].mean(), abs=1e-4)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_question_bootstrap_equals_rebuilding_the_resampled_data(seed):
    import pandas as pd

    from ranking.stats.ranking_agreement import _star_scores, _star_sums, question_weights

    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "question_id": rng.integers(0, 6, 80).astype(str),
            "model": rng.choice(["m1", "m2", "m3"], 80),
            "criterion": rng.choice(["c1", "c2"], 80),
            "score": rng.integers(1, 6, 80).astype(float),
        }
    )
    q, qs = pd.factorize(df["question_id"])
    w = question_weights(len(qs), 1, np.random.default_rng(seed))
    s, n = _star_sums(df, q, len(qs), ["m1", "m2", "m3"], ["c1", "c2"])
    fast = _star_scores(w, s, n, 2)[1]
    # Slow: copy each question's rows as often as it was drawn, then criterion means per model.
    parts = [df[q == i] for i in range(len(qs)) for _ in range(int(w[1, i]))]
    if not parts:
        return
    res = pd.concat(parts)
    slow = res.groupby(["model", "criterion"])["score"].mean().groupby("model").mean()
    for k, model in enumerate(["m1", "m2", "m3"]):
        if model in slow.index:
            assert fast[k] == pytest.approx(slow[model])
        else:
            assert np.isnan(fast[k])


def test_the_compiled_pair_bootstrap_matches_numpys_multinomial():
    from ranking.stats.intervals import cohen_intervals
    from ranking.stats.kappa_kernel import HAVE_NUMBA, cohen_intervals_fast

    if not HAVE_NUMBA:
        pytest.skip("numba is not installed: the numpy path is the only one")
    rng = np.random.default_rng(0)
    # Small tables (drawn item by item), middling ones (inversion binomials) and a large one.
    tables = np.stack(
        [rng.multinomial(n, rng.dirichlet(np.ones(9))).reshape(3, 3) for n in (12, 60, 400, 5000)]
    )
    fast_lo, fast_hi = cohen_intervals_fast(tables, 4000, np.random.default_rng(1))
    slow_lo, slow_hi = cohen_intervals(tables, 4000, np.random.default_rng(2))
    # Two independent 4,000-draw bootstraps of the same tables: bounds agree to a tenth of the
    # interval's width (a biased sampler would shift them by far more on the large table).
    tol = 0.1 * (slow_hi - slow_lo) + 0.005
    assert (np.abs(fast_lo - slow_lo) <= tol).all(), (fast_lo, slow_lo)
    assert (np.abs(fast_hi - slow_hi) <= tol).all(), (fast_hi, slow_hi)


@pytest.mark.parametrize("missing", [False, True])
def test_question_codes_are_the_selections_factorisation(missing):
    import pandas as pd

    from ranking.stats.ranking_agreement import question_codes

    rng = np.random.default_rng(1)
    values = np.array([f"q{i}" for i in rng.integers(0, 30, 400)], dtype=object)
    if missing:
        values[7] = None
    questions = pd.Series(values, dtype="str")
    rows = rng.random(400) < 0.6
    q, qs = question_codes(questions, rows)
    want_q, want_qs = pd.factorize(questions[rows])
    np.testing.assert_array_equal(q, want_q)
    assert list(qs) == list(want_qs)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_length_glm_compiled_sums_equal_numpy_bit_for_bit(seed):
    """The compiled Newton system (one pass, numpy's exp) is the numpy one, bit for bit."""
    from ranking.stats import length_control as lc

    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 3000)), int(rng.integers(2, 9))
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    z = np.tanh(rng.normal(size=n) * 2)
    y = rng.choice([0.0, 0.5, 1.0], size=n)
    beta = rng.normal(scale=3.0, size=m + 1)
    ab = a * m + b
    grad, h = lc._system(beta, a, b, ab, y, z)
    ref_grad, ref_h = lc._system_py(beta, a, b, ab, y, z)
    assert np.array_equal(grad, ref_grad)
    assert np.array_equal(h, ref_h)
