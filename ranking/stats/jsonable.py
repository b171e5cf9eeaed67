"""JSON-ready versions of report tables: lists of records, NaN/NA/inf as None, ISO timestamps."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd


def _scalar(v: Any) -> Any:
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, (pd.Timestamp, dt.datetime, dt.date)):
        return v.isoformat()
    if isinstance(v, np.datetime64):
        return None if np.isnat(v) else pd.Timestamp(v).isoformat()
    if isinstance(v, str):
        return v
    return str(v)


def jsonable(obj: Any) -> Any:
    """Plain JSON-ready version of a table, dict, list or scalar."""
    if isinstance(obj, pd.DataFrame):
        cols = [str(c) for c in obj.columns]
        return [
            dict(zip(cols, (_scalar(v) for v in row), strict=True))
            for row in obj.itertuples(index=False)
        ]
    if isinstance(obj, pd.Series):
        return {str(k): _scalar(v) for k, v in obj.items()}
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    return _scalar(obj)


def report_to_jsonable(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report with every table as a list of records and every missing value as None."""
    return {str(k): jsonable(v) for k, v in report.items()}
