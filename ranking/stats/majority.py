"""Agreement of each judge and each human with the majority of the *other* human raters.

This is how judge papers report a judge (MT-Bench, PandaLM, AlpacaEval's evaluator leaderboard):
every rater is compared with the humans who rated the same item, never with itself. A judge's
reference is all humans on the item; a human's reference is the *other* humans (leave one out),
so a "humans" row sits next to each judge's row and the two are measured the same way.

Labels: pairwise choices A, B, tie (both-bad counts as a tie: neither answer is preferred, as
everywhere else in the report); star ratings: the stars given, per criterion.

For each first-rating judgement x of rater r on item i (O = the other humans' label counts):

* majority(i, r)  = the label with the most votes in O; no majority when O is empty or the top
  count is shared (such judgements are counted in ``n_no_majority`` and left out);
* accuracy        = share of judgements with x == majority; macro precision / recall / F1 over
  the labels that occur as truth or prediction (a label never predicted has precision 0, as
  scikit-learn's ``zero_division=0``); the confusion matrix is in its own table;
* agreement       = MT-Bench's: the share of (x, other human's label) pairs that agree, over all
  pairs on all items; without ties: only pairs where neither label is a tie (pairwise only).

Rows: ``group_by`` "judge" (one row per judge), "pool" (the humans of a pool, pooled) and
"humans" (every human, pooled).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .arrays import first_ratings, mode_criterion_groups
from .schema import codes_and_names, empty_frame

PAIR_LABELS = ("A", "B", "tie")
_PAIR_CODE = np.array([0, 1, 2, 2])  # A, B, tie, both_bad -> A, B, tie

MAJORITY_COLS = {
    "mode": "str",
    "criterion": "str",
    "group_by": "str",
    "group": "str",
    "n_raters": "int64",
    "n_judgements": "int64",
    "n_no_majority": "int64",
    "accuracy": "float64",
    "macro_precision": "float64",
    "macro_recall": "float64",
    "macro_f1": "float64",
    "agreement": "float64",
    "n_pairs": "int64",
    "agreement_no_ties": "float64",
    "n_pairs_no_ties": "int64",
}
CONFUSION_COLS = {
    "mode": "str",
    "criterion": "str",
    "group_by": "str",
    "group": "str",
    "truth": "str",
    "predicted": "str",
    "n": "int64",
}


def label_codes(values: np.ndarray, mode: str) -> tuple[np.ndarray, list[str]]:
    """Integer labels of one (mode, criterion)'s judgement values and their names."""
    if mode == "pairwise":
        return _PAIR_CODE[values.astype(np.int64)], list(PAIR_LABELS)
    cats, codes = np.unique(values, return_inverse=True)
    return codes.astype(np.int64), [f"{c:g}" for c in cats]


def other_counts(
    item: np.ndarray, code: np.ndarray, human: np.ndarray, n_labels: int
) -> np.ndarray:
    """Per judgement: label counts of the *other* humans on its item (n x K)."""
    return other_counts_by_label(item, code, human, n_labels).T


def other_counts_by_label(
    item: np.ndarray, code: np.ndarray, human: np.ndarray, n_labels: int
) -> np.ndarray:
    """``other_counts`` label by label (K x n, C order): the reductions over the labels are then
    K vector operations, not n short rows."""
    # Items numbered by a hash, not a sort: each row reads its own item's counts either way.
    inv, u = pd.factorize(item)
    h = np.bincount(inv[human] * n_labels + code[human], minlength=len(u) * n_labels).reshape(
        len(u), n_labels
    )
    # 32-bit counts (an item has fewer than 2**31 ratings): half the memory the reductions read.
    others: np.ndarray = np.ascontiguousarray(h.T, dtype=np.int32)[:, inv]  # a new array
    others[code[human], np.flatnonzero(human)] -= 1
    return others


def macro_prf(conf: np.ndarray) -> tuple[float, float, float]:
    """Macro precision, recall, F1 from a truth x predicted count matrix."""
    conf = np.asarray(conf, dtype=float)
    true_n, pred_n, tp = conf.sum(axis=1), conf.sum(axis=0), np.diag(conf)
    present = (true_n > 0) | (pred_n > 0)
    if not present.any():
        return (float("nan"),) * 3
    with np.errstate(all="ignore"):
        p = np.where(pred_n > 0, tp / pred_n, 0.0)
        r = np.where(true_n > 0, tp / true_n, 0.0)
        f = np.where(p + r > 0, 2 * p * r / (p + r), 0.0)
    return float(p[present].mean()), float(r[present].mean()), float(f[present].mean())


# (code per row, name per code) of a label column: ``schema.codes_and_names``.
Coded = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class _Group:
    """One (mode, criterion)'s first-rating judgements as arrays (rows in the frame's order)."""

    value: np.ndarray
    item: np.ndarray
    human: np.ndarray
    judge: np.ndarray
    rater: Coded
    pool: Coded


@dataclass(frozen=True)
class _Votes:
    """Per judgement of one (mode, criterion): its label code, the majority label of the other
    humans and whether there is one, and the other humans' pairs (all, agreeing; without ties)."""

    code: np.ndarray
    truth: np.ndarray
    has_truth: np.ndarray
    sums: list[np.ndarray]  # pairs, agreeing pairs (and without ties: pairs, agreeing pairs)


def _votes(mode: str, code: np.ndarray, g: _Group, k: int) -> _Votes:
    others = other_counts_by_label(g.item, code, g.human, k)  # K x n
    n_others, top = others[0].copy(), others[0].copy()
    for c in range(1, k):
        n_others += others[c]
        np.maximum(top, others[c], out=top)
    # The label with the top count, when it is the only one (else no truth: never read).
    n_top = np.zeros(len(code), dtype=np.int32)
    truth = np.zeros(len(code), dtype=np.int64)
    for c in range(k):
        at = others[c] == top
        n_top += at
        truth[at] = c
    agree = others.reshape(-1)[code * len(code) + np.arange(len(code))]
    sums = [n_others, agree]
    if mode == "pairwise":
        tie = PAIR_LABELS.index("tie")
        no_tie = code != tie
        sums += [np.where(no_tie, n_others - others[tie], 0), np.where(no_tie, agree, 0)]
    return _Votes(code, truth, (n_others > 0) & (n_top == 1), sums)


@dataclass(frozen=True)
class _Tally:
    """Per group of one group_by: judgements, confusion matrices (truth x predicted), the
    integer sums of ``_Votes.sums`` and distinct raters."""

    size: np.ndarray
    confs: np.ndarray
    sums: list[np.ndarray]
    raters: np.ndarray


def _tallies(g: _Group, v: _Votes, k: int) -> list[tuple[str, np.ndarray, _Tally]]:
    """(group_by, name per group, tally) of the judges, the human pools and all humans: one
    bincount per figure over one code per row (judge: its rater; human: its pool), the humans'
    figures the sums of their pools' (every figure is a count or an integer sum)."""
    rater, raters = g.rater
    pool, pools = g.pool
    nr, npl = len(raters), len(pools)
    n = nr + npl + 1  # the last code: neither judge nor human
    lab = np.where(g.judge, rater, np.where(g.human, nr + pool, n - 1))
    ok = v.has_truth
    cell = (lab[ok] * k + v.truth[ok]) * k + v.code[ok]
    confs = np.bincount(cell, minlength=n * k * k).reshape(n, k, k)
    sums = [
        np.rint(np.bincount(lab, x.astype(float), minlength=n)).astype(np.int64) for x in v.sums
    ]
    size = np.bincount(lab, minlength=n)
    in_pool = np.bincount(pool[g.human] * nr + rater[g.human], minlength=npl * nr) > 0
    per_pool = in_pool.reshape(npl, nr).sum(axis=1)
    human = slice(nr, nr + npl)
    all_humans = _Tally(
        size[human].sum(keepdims=True),
        confs[human].sum(axis=0, keepdims=True),
        [s[human].sum(keepdims=True) for s in sums],
        np.array([np.count_nonzero(in_pool.reshape(npl, nr).any(axis=0))]),
    )
    return [
        ("judge", raters, _Tally(size[:nr], confs[:nr], [s[:nr] for s in sums], size[:nr] > 0)),
        ("pool", pools, _Tally(size[human], confs[human], [s[human] for s in sums], per_pool)),
        ("humans", np.array(["all"], dtype=object), all_humans),
    ]


def _rows_for(
    mode: str, crit: str, g: _Group
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    code, names = label_codes(g.value, mode)
    k = len(names)
    v = _votes(mode, code, g, k)
    rows, conf_rows = [], []
    for group_by, uniq, t in _tallies(g, v, k):
        for grp, c in sorted((str(uniq[c]), c) for c in np.flatnonzero(t.size > 0)):
            conf = t.confs[c]
            n_ok = int(conf.sum())
            # Star ratings have no ties: no pairs without ties.
            n_pairs, n_agree, n_nt, n_agree_nt = [*(int(s[c]) for s in t.sums), 0, 0][:4]
            if n_pairs == 0:
                # Nobody to compare with (e.g. one human per item): no row rather than NaNs.
                continue
            rows.append(
                (
                    mode,
                    crit,
                    group_by,
                    str(grp),
                    int(t.raters[c]),  # distinct raters
                    n_ok,
                    int(t.size[c]) - n_ok,
                    float(np.trace(conf) / n_ok) if n_ok else np.nan,
                    *macro_prf(conf),
                    n_agree / n_pairs,
                    n_pairs,
                    n_agree_nt / n_nt if n_nt else np.nan,
                    n_nt,
                )
            )
            ti, pi = np.nonzero(conf)
            conf_rows += [
                (mode, crit, group_by, str(grp), names[a], names[b], int(conf[a, b]))
                for a, b in zip(ti, pi, strict=True)
            ]
    return rows, conf_rows


def majority_agreement(j: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(agreement table, confusion table) over first ratings; see the module docstring."""
    # Only the columns used, coded once for all groups.
    cols = ["mode", "criterion", "value", "rater_kind", "item_id", "rater_id", "pool"]
    f = first_ratings(j, cols)
    rows: list[tuple[Any, ...]] = []
    conf: list[tuple[Any, ...]] = []
    # The label compared on the column as it is (a categorical compares its codes): no string
    # per row.
    if len(f) and bool((f["rater_kind"] == "human").any()):
        rater, pool = codes_and_names(f["rater_id"]), codes_and_names(f["pool"])
        value, item = f["value"].to_numpy(dtype=float), f["item_id"].to_numpy()
        human = (f["rater_kind"] == "human").to_numpy(bool)
        judge = (f["rater_kind"] == "judge").to_numpy(bool)
        # Row positions per (mode, criterion), not a frame split per group.
        for mode, crit, at in mode_criterion_groups(f):
            g = _Group(
                value[at],
                item[at],
                human[at],
                judge[at],
                (rater[0][at], rater[1]),
                (pool[0][at], pool[1]),
            )
            r, c = _rows_for(mode, crit, g)
            rows += r
            conf += c
    table = pd.DataFrame(rows, columns=list(MAJORITY_COLS)) if rows else empty_frame(MAJORITY_COLS)
    confusion = (
        pd.DataFrame(conf, columns=list(CONFUSION_COLS)) if conf else empty_frame(CONFUSION_COLS)
    )
    return table, confusion
