"""Position bias: left / right / tie / both-bad shares per rater kind, pool and judge, and position
consistency on items rated in both orders (``bias.position_bias``), over integer codes.

Every figure is a count or a share of counts, so the groups are counted with ``np.bincount`` on
the label columns' codes (in name order, as the groupby of the names listed them) instead of
splitting a side table per group; the shares are the same floats (a bool column's mean is its
integer sum divided by the count)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .schema import codes_and_names, empty_frame, time_ordered

POS_COLS = {
    "group_by": "str",
    "group": "str",
    "n": "int64",
    "left_share": "float64",
    "right_share": "float64",
    "tie_share": "float64",
    "both_bad_share": "float64",
    "left_of_decisive": "float64",
    "binom_p": "float64",
    "n_both_orders": "int64",
    "position_consistency": "float64",
}


SIDES = ("left", "right", "tie", "both_bad")


def side_codes(sides: dict[str, np.ndarray]) -> np.ndarray:
    """Per row the index of its side in ``SIDES`` (4 when none: a choice outside the four)."""
    code = np.full(len(sides["left"]), len(SIDES), dtype=np.int64)
    for i, name in enumerate(SIDES):
        code[sides[name]] = i
    return code


def side_flags(pair_df: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per row: whether the left or the right answer was chosen, a tie, both bad (one
    comparison per label on the column: category codes when categorical)."""
    c = pair_df["choice"]
    is_a, is_b = (c == "A").to_numpy(bool), (c == "B").to_numpy(bool)
    left_a = pair_df["left_is_a"].to_numpy(bool)
    return {
        "left": (is_a & left_a) | (is_b & ~left_a),
        "right": (is_b & left_a) | (is_a & ~left_a),
        "tie": (c == "tie").to_numpy(bool),
        "both_bad": (c == "both_bad").to_numpy(bool),
    }


def same_labels(x: pd.Series, y: pd.Series) -> np.ndarray:
    """Row by row, whether the two label columns are the same as strings (a missing label equals
    nothing). Two categoricals with the same categories (one column merged with itself) compare
    their codes: no string per row."""
    if (
        isinstance(x.dtype, pd.CategoricalDtype)
        and isinstance(y.dtype, pd.CategoricalDtype)
        and x.cat.categories.equals(y.cat.categories)
    ):
        cx = x.cat.codes.to_numpy()
        return np.asarray((cx == y.cat.codes.to_numpy()) & (cx >= 0))
    return np.asarray((x.astype(str) == y.astype(str)).to_numpy())


def _order_keys(pair_df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(key, pair): one dense integer per (rater, item, order) and per (rater, item);
    key = pair * 2 + order (``left_is_a`` is a flag in the coerced frames). One hash pass over
    the (rater, item) pairs."""
    rater = pd.factorize(pair_df["rater_id"], use_na_sentinel=False)[0].astype(np.int64)
    item = pair_df["item_id"].to_numpy()
    lo, hi = (int(item.min()), int(item.max())) if len(item) else (0, 0)
    if item.dtype.kind in "iu" and (hi - lo + 1) * (int(rater.max(initial=0)) + 1) < 2**62:
        pair = rater * (hi - lo + 1) + (item - lo)
    else:
        codes, uniq = pd.factorize(pair_df["item_id"], use_na_sentinel=False)
        pair = rater * max(len(uniq), 1) + codes
    pair = pd.factorize(pair)[0].astype(np.int64)
    return pair * 2 + pair_df["left_is_a"].to_numpy(bool), pair


def first_in_each_order(pair_df: pd.DataFrame, key: np.ndarray | None = None) -> np.ndarray | None:
    """Positions of the earliest rating (by ``submitted_at``, then ``rating_id``) of each
    (rater, item, order), in frame order: a key rated once is its own first, so only the keys
    rated again (a few percent of the rows) are time-sorted. None when a time is missing (NaT
    sorts last in pandas but first as an integer). ``key``: ``_order_keys``' key, if known."""
    at = pair_df["submitted_at"]
    if at.isna().any() or not hasattr(at.array, "asi8"):
        return None
    key = _order_keys(pair_df)[0] if key is None else key
    again = np.bincount(key)[key] > 1  # dense keys: a count per key
    keep = ~again
    rows = np.flatnonzero(again)
    if len(rows):
        order = rows[np.lexsort((pair_df["rating_id"].to_numpy()[rows], at.array.asi8[rows]))]
        _, first = np.unique(key[order], return_index=True)
        keep[order[first]] = True
    return np.flatnonzero(keep)


def both_orders(pair_df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per (rater, item) judged with A on the left and A on the right, from the first rating in
    each order: the row (A on the left) and whether the canonical choice agrees (in no
    particular order: the tables only count them)."""
    key, pair = _order_keys(pair_df)
    first = first_in_each_order(pair_df, key)
    if first is None:
        cols = ["rater_id", "item_id", "left_is_a", "submitted_at", "rating_id"]
        d = pair_df[cols].reset_index(drop=True)
        first = time_ordered(d).drop_duplicates(["rater_id", "item_id", "left_is_a"]).index
        first = np.sort(first.to_numpy())
    # One row per (rater, item, order) is left: the (rater, item) pairs seen twice are the ones
    # rated in both orders; sorted by pair and order, A on the right comes first.
    left = pair_df["left_is_a"].to_numpy(bool)
    twice = np.bincount(pair[first], minlength=int(pair.max(initial=-1)) + 1) == 2
    rows = first[twice[pair[first]]]
    rows = rows[np.lexsort((left[rows], pair[rows]))]
    a_right, a_left = rows[0::2], rows[1::2]
    choice = pair_df["choice"]
    return a_left, same_labels(choice.take(a_left), choice.take(a_right))


def _rater_counts(
    pair_df: pd.DataFrame, rater: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per rater code: the (rater, item) keys rated in both orders and the consistent ones."""
    rows, same = both_orders(pair_df)
    return np.bincount(rater[rows], minlength=n), np.bincount(rater[rows], same, minlength=n)


def position_bias(
    pair_df: pd.DataFrame, *, per_rater_kinds: Sequence[str] = ("judge",)
) -> pd.DataFrame:
    """Share of left / right / tie / both-bad choices per rater kind, pool and judge, a binomial
    test of left vs right among decisive choices, and position consistency on items judged in
    both orders (same canonical choice both times); a rater's both-order items count in the
    kind and pool of the rater's first row."""
    if pair_df.empty:
        return empty_frame(POS_COLS)
    sides = side_codes(side_flags(pair_df))
    rater, raters = codes_and_names(pair_df["rater_id"])
    bo_n, bo_c = _rater_counts(pair_df, rater, len(raters))
    # Each rater's first row (its kind and pool, as the merge on the rater's first row read).
    first_row = np.full(len(raters), len(rater), dtype=np.int64)
    np.minimum.at(first_row, rater, np.arange(len(rater)))
    seen = first_row < len(rater)
    rows: list[tuple[Any, ...]] = []
    for group_by in ("rater_kind", "pool"):
        codes, names = codes_and_names(pair_df[group_by])
        of_rater = codes[first_row[seen]]
        both = (
            np.bincount(of_rater, bo_n[seen], len(names)),
            np.bincount(of_rater, bo_c[seen], len(names)),
        )
        rows += _pos_rows(group_by, codes, names, sides, both)
    kind, kinds = codes_and_names(pair_df["rater_kind"])
    wanted = np.isin(kinds, list(per_rater_kinds))
    per = np.where(wanted[kind], rater, -1)
    rows += _pos_rows("rater_id", per, raters, sides, (bo_n, bo_c))
    return pd.DataFrame(rows, columns=list(POS_COLS))


def _pos_rows(
    group_by: str,
    codes: np.ndarray,
    names: np.ndarray,
    sides: np.ndarray,
    both: tuple[np.ndarray, np.ndarray],
) -> list[tuple[Any, ...]]:
    """One row per code used (codes < 0 are left out), in code order (the names' order);
    ``sides``: ``side_codes``."""
    ok = codes >= 0
    m, k = len(names), len(SIDES) + 1
    counts = np.bincount(codes[ok] * k + sides[ok], minlength=m * k).reshape(m, k)
    size = counts.sum(axis=1)
    count = dict(zip(SIDES, counts.T, strict=False))
    bo_n, bo_c = both
    out = []
    for c in np.flatnonzero(size):
        n, left, right = int(size[c]), int(count["left"][c]), int(count["right"][c])
        dec = left + right
        nb = int(bo_n[c])
        out.append(
            (
                group_by,
                str(names[c]),
                n,
                left / n,
                right / n,
                int(count["tie"][c]) / n,
                int(count["both_bad"][c]) / n,
                left / dec if dec else np.nan,
                float(stats.binomtest(left, dec, 0.5).pvalue) if dec else np.nan,
                nb,
                float(bo_c[c]) / nb if nb else np.nan,
            )
        )
    return out
