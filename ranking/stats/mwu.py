"""The two-sided Mann-Whitney U p-value of scipy's ``mannwhitneyu`` from value counts.

``scipy.stats.mannwhitneyu(x, y, alternative="two-sided")`` ranks the concatenated samples (one
argsort of up to a million values per call in the hint-effect table). Its asymptotic p-value only
needs, per distinct value in sorted order, how often it occurs in x and in y: the rank sum of x is
a sum of half-integers (exact in float64 below 2**53, whatever the order), and the tie term is
summed over the same array scipy builds (a count at each tied group's first sorted position, zeros
elsewhere), so the p-value is the same float. Test: tests/stats/test_mwu.py compares it with
scipy bit for bit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special


def value_codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Each value's position among the distinct values in ascending order (no NaN allowed), and
    the number of distinct values: one hash pass, not a sort of the column. -0.0 counts as 0.0
    (they rank as ties)."""
    v = np.asarray(values, dtype=float)
    lo, hi = (v.min(), v.max()) if len(v) else (0.0, np.inf)
    # Whole numbers in a short range (stars, 0/1 flags): the offsets are the codes, no hashing.
    if np.isfinite(lo) and np.isfinite(hi) and hi - lo < 1e6 and np.array_equal(v, np.floor(v)):
        return (v - lo).astype(np.int64), int(hi - lo) + 1
    codes, uniq = pd.factorize(v + 0.0, sort=True)
    return codes.astype(np.int64), len(uniq)


def asymptotic(n1: int, n2: int) -> bool:
    """Whether scipy's ``method="auto"`` takes the normal approximation for sample sizes n1, n2
    whatever the ties (both above 8); otherwise call scipy itself."""
    return n1 > 8 and n2 > 8


def mannwhitney_p(count_x: np.ndarray, count_y: np.ndarray) -> float:
    """Two-sided asymptotic p (continuity-corrected, tie-corrected) of x vs y from the counts of
    each distinct value (ascending) in x and in y; the sizes must pass ``asymptotic``."""
    cx = np.asarray(count_x, dtype=np.int64)
    cy = np.asarray(count_y, dtype=np.int64)
    c = cx + cy
    seen = c > 0
    cx, c = cx[seen], c[seen]
    n1, n2 = int(cx.sum()), int(cy.sum())
    n = n1 + n2
    start = np.cumsum(c) - c  # 0-based sorted position of each tied group
    # Average rank of a group: start + (c + 1) / 2; twice the rank sum of x is an integer.
    r1 = np.float64(int((cx * (2 * start + c + 1)).sum())) / 2
    u1 = r1 - n1 * (n1 + 1) / 2
    # scipy's array of tie counts (a count at each group's first position, else 0) and its
    # sum of t**3 - t, computed where t is not 0 (0**3 - 0 is 0).
    cf = c.astype(float)
    t = np.zeros(n)
    t[start] = cf**3 - cf
    tie_term = np.sum(t, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        numerator = u1 - n1 * n2 / 2
        numerator -= 0.5 * np.sign(numerator)
        z = numerator / s
        p = 2 * special.ndtr(-np.abs(z))
    return float(np.clip(p, 0.0, 1.0))
