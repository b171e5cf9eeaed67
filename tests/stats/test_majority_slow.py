"""The majority table (counted per group code) equals a slow loop over the judgements written
from the definition: the other humans' votes of each first rating, group by group."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest

from ranking.stats import synthetic
from ranking.stats.agreement import judgements
from ranking.stats.majority import _PAIR_CODE, majority_agreement
from ranking.stats.schema import coerce_pair, coerce_star


def _slow(j):
    f = j[j["is_first"]]
    out = defaultdict(lambda: defaultdict(int))
    raters = defaultdict(set)
    for (mode, crit), g in f.groupby(["mode", "criterion"], observed=True):
        rows = list(g.itertuples())
        label = {
            r.Index: int(_PAIR_CODE[int(r.value)]) if mode == "pairwise" else r.value for r in rows
        }
        by_item = defaultdict(list)
        for r in rows:
            by_item[r.item_id].append(r)
        for r in rows:
            others = Counter(
                label[o.Index]
                for o in by_item[r.item_id]
                if o.rater_kind == "human" and o.Index != r.Index
            )
            top = others.most_common()
            unique = bool(top) and (len(top) == 1 or top[0][1] > top[1][1])
            x = label[r.Index]
            groups = (
                [("judge", r.rater_id)]
                if r.rater_kind == "judge"
                else [("pool", r.pool), ("humans", "all")]
            )
            for group_by, grp in groups:
                o = out[(mode, crit, group_by, str(grp))]
                raters[(mode, crit, group_by, str(grp))].add(r.rater_id)
                o["n_judgements"] += unique
                o["n_no_majority"] += not unique
                o["hits"] += unique and top[0][0] == x
                o["n_pairs"] += sum(others.values())
                o["agree"] += others[x]
                if mode == "pairwise" and x != 2:
                    o["n_pairs_no_ties"] += sum(others.values()) - others[2]
                    o["agree_nt"] += others[x]
    return out, raters


@pytest.mark.parametrize("seed", [1, 4])
def test_majority_table_equals_a_slow_loop(seed):
    study = synthetic.generate(n_models=4, n_questions=10, seed=seed)
    j = judgements(coerce_star(study.star_df), coerce_pair(study.pair_df))
    table, _ = majority_agreement(j)
    want, raters = _slow(j)
    kept = {k: v for k, v in want.items() if v["n_pairs"] > 0}
    assert len(table) == len(kept) > 0
    for row in table.itertuples():
        key = (row.mode, row.criterion, row.group_by, row.group)
        w = kept[key]
        assert row.n_raters == len(raters[key])
        assert (row.n_judgements, row.n_no_majority) == (w["n_judgements"], w["n_no_majority"])
        assert row.n_pairs == w["n_pairs"] and row.n_pairs_no_ties == w["n_pairs_no_ties"]
        assert row.agreement == w["agree"] / w["n_pairs"]
        if w["n_judgements"]:
            assert row.accuracy == w["hits"] / w["n_judgements"]
        if w["n_pairs_no_ties"]:
            assert row.agreement_no_ties == w["agree_nt"] / w["n_pairs_no_ties"]
        else:
            assert np.isnan(row.agreement_no_ties)
