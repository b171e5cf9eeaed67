"""Small array helpers shared by the statistics.

``np.unique(x)`` without ``return_*`` arguments takes numpy's hash-based path (numpy >= 2.3),
which on this project's numpy is several times slower than sorting: 0.2 s for 429k integer ids
with 176k distinct values, 1.1 s for 1M distinct ones (docs/decisions/report-speed.md, "Seventh
round, kernels"). ``distinct`` gives the same array through pandas' hash table and a sort of
the distinct values only.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd


def distinct(values: npt.ArrayLike) -> np.ndarray:
    """The sorted distinct values of a 1-D array: ``np.unique(values)``, element for element
    (a NaN, if any, once and last)."""
    out: np.ndarray = np.sort(pd.unique(np.asarray(values).ravel()))
    return out
