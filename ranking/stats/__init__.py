"""Statistics and rankings of ratings: pure Python, numpy, pandas and scipy; no Django.

Entry point: :func:`ranking.stats.report.build_report`. The input frames' columns are in
:mod:`ranking.stats.schema`; the definitions of every statistic in docs/statistics.md.
"""

from __future__ import annotations

import importlib
from typing import Any

from .schema import (
    PAIR_COLUMNS,
    STAR_COLUMNS,
    coerce_pair,
    coerce_star,
    empty_pair_df,
    empty_star_df,
)

# The report's names are loaded on first use (PEP 562), not when the package is imported: the
# report's modules import their siblings through this package (`from . import elo`), so importing
# the report here would make the package and the report import each other.
_REPORT_NAMES = frozenset({"REPORT_KEYS", "build_report", "report_to_jsonable"})


def __getattr__(name: str) -> Any:
    if name in _REPORT_NAMES:
        return getattr(importlib.import_module(f"{__name__}.report"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
