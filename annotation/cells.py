"""Spreadsheet-safe cell values, shared by every export that writes XLSX or a spreadsheet CSV.

A spreadsheet runs text that starts with ``= + - @`` (or a tab / carriage return, which some
programs strip first) as a formula. LLM answers, model names and pseudonyms come from uploads, so
they may start that way on purpose. Two tools, one rule each:

- ``xlsx_cell``: XLSX stores every text value as a string cell (type ``s``), never a formula. The
  text is kept exactly (nothing is prefixed), apart from what XML cannot carry.
- ``escape_formula``: for CSV meant to be opened in a spreadsheet, which has no cell types, text
  that would run as a formula gets a leading apostrophe (OWASP's advice). This changes the data,
  so exports meant for analysis or re-import do not use it (docs/decisions/data.md).

Plain module: openpyxl only, no Django. openpyxl (with Pillow and numpy, about 0.3 CPU s) is
loaded on first use: the quality pages need only ``escape_formula``, and an XLSX writer has
loaded it already.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from config.lazy import lazy_module

if TYPE_CHECKING:
    import openpyxl
    import openpyxl.cell.cell
else:
    openpyxl = lazy_module("openpyxl")

# ASCII operators, then their full-width and small forms (spreadsheets set up for East Asian
# input may read those as the ASCII operator; escaping them costs an apostrophe).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠", "﹦", "﹢", "﹣", "﹫")
XLSX_CELL_MAX = 32767  # Excel's limit on characters in a cell
TRUNCATED = " [truncated: xlsx]"


def looks_like_formula(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(FORMULA_PREFIXES)


def escape_formula(value: Any) -> Any:
    """The value with a leading apostrophe when a spreadsheet would run it as a formula."""
    return "'" + value if looks_like_formula(value) else value


def xlsx_value(value: Any) -> Any:
    """A Python value openpyxl can store: naive UTC datetimes, finite numbers, XML-legal text."""
    if isinstance(value, datetime):
        # Excel has no time zones: UTC, naive.
        if value.utcoffset() is not None:
            value = value.astimezone(UTC)
        return value.replace(tzinfo=None)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        # XML 1.0 cannot carry most control characters; they are the only change made to text.
        value = openpyxl.cell.cell.ILLEGAL_CHARACTERS_RE.sub("", value)
        if len(value) > XLSX_CELL_MAX:
            value = value[: XLSX_CELL_MAX - len(TRUNCATED)] + TRUNCATED
    return value


def xlsx_cell(ws: Any, value: Any, *, font: Any = None) -> openpyxl.cell.WriteOnlyCell:
    """A write-only cell; text is always a string cell, even when it looks like a formula."""
    cell = openpyxl.cell.WriteOnlyCell(ws, value=xlsx_value(value))
    if isinstance(cell.value, str):
        cell.data_type = "s"
    if font is not None:
        cell.font = font
    return cell


def xlsx_row(ws: Any, values: Any, *, font: Any = None) -> list[openpyxl.cell.WriteOnlyCell]:
    return [xlsx_cell(ws, value, font=font) for value in values]
