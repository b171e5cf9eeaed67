"""The judge-assisted section's width curve (``ppi_curve``, see ``ppi_section``): the mean 95%
interval width over the models if humans had rated only a random share of the labelled items,
human-only against combined (PPI++), from sums over the random subsets.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from . import ppi
from .ppi_groups import group_numbers, positions

MIN_ITEMS = 10
CURVE_SHARES = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
CURVE_REPEATS = 20


def width_curve(
    items: pd.DataFrame, judge: str, statistic: str, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """Mean 95% interval width over the models if humans had rated only a random ``share`` of
    the labelled items (the judge keeps rating everything): human-only against combined.

    Each of ``CURVE_REPEATS`` random orders of the labelled item ids gives the humans its first
    k items (one subset serves every model, as a real budget would; the shares are nested)."""
    y, f = items["y"].to_numpy(dtype=float), items["f"].to_numpy(dtype=float)
    item_ids = items["item_id"].to_numpy()
    lab = ~np.isnan(y)
    # The labelled items in sorted order, and each labelled row's item among them.
    where, lab_ids = pd.factorize(item_ids[lab], sort=True)
    if len(lab_ids) < MIN_ITEMS:
        return []
    n = len(lab_ids)
    # Human ratings per item: its first labelled row's count.
    first_row = ~pd.Series(where).duplicated().to_numpy()
    per_item = np.zeros(n)
    per_item[where[first_row]] = items["n_ratings"].to_numpy()[lab][first_row]
    order = random_orders(rng, n, CURVE_REPEATS)
    ks = [max(2, round(share * n)) for share in CURVE_SHARES]
    # The first share each item enters (the shares are nested), per repeat: the share of its
    # position in the repeat's order, scattered to the item.
    at_position = np.searchsorted(np.asarray(ks), np.arange(n), side="right").astype(np.int8)
    first = np.empty(order.shape, np.int8)
    first[np.arange(CURVE_REPEATS)[:, None], order] = at_position
    group, keys = group_numbers(items, "model")
    moments = _subset_moments(first, where, y, f, lab, group, len(keys), len(ks))
    w_h, w_p = _curve_widths(moments)
    # Ratings per share and repeat: whole counts, so exact in any order.
    ratings_so_far = _share_sums(first, None, np.zeros(n, np.int64), [per_item], 1, len(ks))
    return [
        {
            "judge": judge,
            "statistic": statistic,
            "share": share,
            "n_human_items": k,
            "n_human_ratings": float(ratings_so_far[i, 0, :, 0].mean()),
            "width_human": w_h[i],
            "width_ppi": w_p[i],
        }
        for i, (share, k) in enumerate(zip(CURVE_SHARES, ks, strict=True))
    ]


def random_orders(rng: np.random.Generator, n: int, repeats: int) -> npt.NDArray[np.int64]:
    """``repeats`` random orders of 0..n-1, one per row: what
    ``rng.permuted(np.broadcast_to(np.arange(n), (repeats, n)), axis=1)`` draws (the same
    Fisher-Yates stream, row by row), through ``Generator.shuffle``'s faster path for a
    contiguous int64 row (a third less CPU)."""
    order = np.empty((repeats, n), np.int64)
    for row in order:
        row[:] = np.arange(n)
        rng.shuffle(row)
    return order


def _share_sums(
    first: np.ndarray,
    where: np.ndarray | None,
    group: np.ndarray,
    cols: list[np.ndarray | None],
    n_groups: int,
    n_shares: int,
) -> npt.NDArray[np.float64]:
    """(shares, groups, repeats, columns): per random order and group, the sums of ``cols``
    (None: the row count) over the rows in each share's subset. A row (item ``where``, all items
    when None) is added once, to the first share it enters (``first``: one bincount per repeat
    and column, in row order), and the shares, nested, are cumulative sums of those."""
    n_rep, width = first.shape[0], n_shares + 1
    base = group.astype(np.intp) * width
    size = n_groups * width
    out = np.empty((n_rep, size, len(cols)))
    share, slot = np.empty(len(base), first.dtype), np.empty(len(base), np.intp)
    for r in range(n_rep):
        np.add(base, first[r] if where is None else np.take(first[r], where, out=share), out=slot)
        for c, col in enumerate(cols):
            out[r, :, c] = np.bincount(slot, col, size)
    per_slot = out.reshape(n_rep, n_groups, width, len(cols))[:, :, :n_shares]
    sums: npt.NDArray[np.float64] = np.cumsum(per_slot, axis=2).transpose(2, 1, 0, 3)
    return sums


def _subset_moments(
    first: np.ndarray,
    where: np.ndarray,
    y: np.ndarray,
    f: np.ndarray,
    lab: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    n_shares: int,
) -> ppi.Moments:
    """The PPI++ sufficient statistics of every (share, model, repeat): the labelled sums over
    the humans' subset, the judge-only ones over the rest of the model's items and its f~."""
    in_group = group[lab] >= 0
    g_lab, y_lab, f_lab = group[lab][in_group], y[lab][in_group], f[lab][in_group]
    cols = [None, y_lab, f_lab, y_lab * y_lab, f_lab * f_lab, y_lab * f_lab]  # None: counts
    sums = _share_sums(first, where[in_group], g_lab, cols, n_groups, n_shares)
    # Per model, all its labelled rows: the count and the sums of f and f^2, added in row order
    # (one bincount each: what the sum over axis 0 of the model's (rows, columns) array gives).
    n_lab, sf_lab, sff_lab = (np.bincount(g_lab, c, n_groups)[:, None] for c in cols[0:5:2])
    n_u, su, suu = _judge_only(f, lab, group, n_groups)
    n, sy, sf, syy, sff, syf = np.moveaxis(sums, -1, 0)
    return ppi.Moments(
        n, sy, sf, syy, sff, syf,
        n_u=n_lab - n + n_u[:, None],
        su=sf_lab - sf + su[:, None],
        suu=sff_lab - sff + suu[:, None],
    )  # fmt: skip


def _judge_only(
    f: np.ndarray, lab: np.ndarray, group: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per model: the count, sum and sum of squares of its judge-only f~ (each model's array
    in row order, summed as numpy sums it)."""
    unl = ~lab & (group >= 0)
    f_unl = f[unl]
    n_u, su, suu = np.zeros(n_groups), np.zeros(n_groups), np.zeros(n_groups)
    for g, pos in enumerate(positions(group[unl], n_groups)):
        fu = f_unl[pos]
        n_u[g], su[g], suu[g] = len(fu), fu.sum(), (fu * fu).sum()
    return n_u, su, suu


def _curve_widths(m: ppi.Moments) -> tuple[list[float], list[float]]:
    """Mean widths (human-only, combined) over the models and repeats, per share."""
    r = ppi.mean_from_moments(m)
    widths_h, widths_p = 2 * ppi.Z95 * r.human_se, 2 * ppi.Z95 * r.se
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a model no subset reached
        return (
            [float(np.nanmean(np.ascontiguousarray(w))) for w in widths_h],
            [float(np.nanmean(np.ascontiguousarray(w))) for w in widths_p],
        )
