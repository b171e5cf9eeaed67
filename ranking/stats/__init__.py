"""Statistics and rankings of ratings: pure Python, numpy, pandas and scipy; no Django.

Entry point: :func:`ranking.stats.report.build_report`. The input frames' columns are in
:mod:`ranking.stats.schema`; the definitions of every statistic in docs/statistics.md.
"""

from __future__ import annotations

from .report import REPORT_KEYS, build_report, report_to_jsonable
from .schema import (
    PAIR_COLUMNS,
    STAR_COLUMNS,
    coerce_pair,
    coerce_star,
    empty_pair_df,
    empty_star_df,
)

__all__ = [
    "PAIR_COLUMNS",
    "REPORT_KEYS",
    "STAR_COLUMNS",
    "build_report",
    "coerce_pair",
    "coerce_star",
    "empty_pair_df",
    "empty_star_df",
    "report_to_jsonable",
]
