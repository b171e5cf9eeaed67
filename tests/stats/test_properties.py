"""Hypothesis properties: Points ignores order, relabelling models permutes every ranking."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from ranking.stats import bradley_terry as bt
from ranking.stats import elo
from ranking.stats.rankings import points_arrays, points_table
from ranking.stats.schema import coerce_pair

from .helpers import pair_frame

N_MODELS = 5
matches = st.lists(
    st.tuples(
        st.integers(0, N_MODELS - 1),
        st.integers(1, N_MODELS - 1),
        st.sampled_from(["A", "B", "tie", "both_bad"]),
    ),
    min_size=1,
    max_size=60,
)


def _arrays(ms):
    a = np.array([m[0] for m in ms])
    b = (a + np.array([m[1] for m in ms])) % N_MODELS
    s = np.array([{"A": 1.0, "B": 0.0, "tie": 0.5, "both_bad": 0.5}[m[2]] for m in ms])
    return a, b, s


@given(matches, st.randoms(use_true_random=False))
@settings(max_examples=60, deadline=None)
def test_points_do_not_depend_on_order(ms, random):
    a, b, s = _arrays(ms)
    perm = list(range(len(a)))
    random.shuffle(perm)
    p1 = points_arrays(a, b, s, N_MODELS)
    p2 = points_arrays(a[perm], b[perm], s[perm], N_MODELS)
    for key in p1:
        np.testing.assert_allclose(p1[key], p2[key])


@given(matches, st.permutations(range(N_MODELS)))
@settings(max_examples=60, deadline=None)
def test_relabelling_models_permutes_points_elo_and_bt(ms, relabel):
    a, b, s = _arrays(ms)
    relabel = np.array(relabel)
    p1 = points_arrays(a, b, s, N_MODELS)["score"]
    p2 = points_arrays(relabel[a], relabel[b], s, N_MODELS)["score"]
    np.testing.assert_allclose(p2[relabel], p1)
    e1 = elo.elo_ratings(a, b, s, N_MODELS)
    e2 = elo.elo_ratings(relabel[a], relabel[b], s, N_MODELS)
    np.testing.assert_allclose(e2[relabel], e1, atol=1e-9)
    w1, n1 = bt.aggregate(a, b, s, N_MODELS)
    w2, n2 = bt.aggregate(relabel[a], relabel[b], s, N_MODELS)
    np.testing.assert_allclose(bt.fit(w2, n2)[relabel], bt.fit(w1, n1), atol=1e-6, equal_nan=True)


@given(matches, st.permutations(range(N_MODELS)))
@settings(max_examples=30, deadline=None)
def test_relabelling_model_names_permutes_the_points_table(ms, relabel):
    names = [f"m{i}" for i in range(N_MODELS)]
    rows = [("r", i, names[a], names[(a + d) % N_MODELS], c) for i, (a, d, c) in enumerate(ms)]
    new = {names[i]: f"z{relabel[i]}" for i in range(N_MODELS)}
    rows2 = [(r, i, new[x], new[y], c) for r, i, x, y, c in rows]
    t1 = points_table(coerce_pair(pair_frame(rows))).query("rater_kind == 'all'").set_index("model")
    t2 = (
        points_table(coerce_pair(pair_frame(rows2))).query("rater_kind == 'all'").set_index("model")
    )
    t2.index = pd.Index([{v: k for k, v in new.items()}[m] for m in t2.index])
    t2 = t2.loc[t1.index]
    np.testing.assert_allclose(t2["score"], t1["score"])
    np.testing.assert_array_equal(t2["rank"].to_numpy(), t1["rank"].to_numpy())
