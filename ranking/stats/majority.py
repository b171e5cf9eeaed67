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
    # Items numbered by a hash, not a sort: each row reads its own item's counts either way.
    inv, u = pd.factorize(item)
    h = np.bincount(inv[human] * n_labels + code[human], minlength=len(u) * n_labels).reshape(
        len(u), n_labels
    )
    others: np.ndarray = h[inv]  # a new array (fancy indexing copies)
    others[np.flatnonzero(human), code[human]] -= 1
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


def _group_keys(g: _Group) -> list[tuple[str, Coded, np.ndarray]]:
    """(group_by, (group code per row, name per code), row mask) for judges, human pools and all
    humans: integer codes, not a string per row."""
    return [
        ("judge", g.rater, g.judge),
        ("pool", g.pool, g.human),
        ("humans", (np.zeros(len(g.value), np.int64), np.array(["all"], dtype=object)), g.human),
    ]


def _rows_for(
    mode: str, crit: str, g: _Group
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    code, names = label_codes(g.value, mode)
    k = len(names)
    human = g.human
    others = other_counts(g.item, code, human, k)
    n_others = others.sum(axis=1)
    top = others.max(axis=1)
    has_truth = (n_others > 0) & ((others == top[:, None]).sum(axis=1) == 1)
    truth = others.argmax(axis=1)
    agree = others[np.arange(len(code)), code]
    tie = PAIR_LABELS.index("tie")
    no_tie = (mode == "pairwise") & (code != tie)
    pairs_nt = np.where(no_tie, n_others - others[:, tie], 0) if mode == "pairwise" else 0 * code
    agree_nt = np.where(no_tie, agree, 0)
    rows, conf_rows = [], []
    for group_by, (lab, uniq), mask in _group_keys(g):
        present = np.bincount(lab[mask], minlength=len(uniq)) > 0
        for grp, c in sorted((str(uniq[c]), c) for c in np.flatnonzero(present)):
            sel = mask & (lab == c)
            ok = sel & has_truth
            conf = np.bincount(truth[ok] * k + code[ok], minlength=k * k).reshape(k, k)
            n_ok = int(ok.sum())
            n_pairs, n_nt = int(n_others[sel].sum()), int(pairs_nt[sel].sum())
            if n_pairs == 0:
                # Nobody to compare with (e.g. one human per item): no row rather than NaNs.
                continue
            rows.append(
                (
                    mode,
                    crit,
                    group_by,
                    str(grp),
                    int(np.count_nonzero(np.bincount(g.rater[0][sel]))),  # distinct raters
                    n_ok,
                    int((sel & ~has_truth).sum()),
                    float(np.trace(conf) / n_ok) if n_ok else np.nan,
                    *macro_prf(conf),
                    float(agree[sel].sum() / n_pairs) if n_pairs else np.nan,
                    n_pairs,
                    float(agree_nt[sel].sum() / n_nt) if n_nt else np.nan,
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
