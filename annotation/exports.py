"""Raw exports of a study: its responses, and its ratings (one row per rating x criterion for star
studies, one row per rating for pairwise), as CSV, JSONL or XLSX. Shared by the export_data
command and the API. Raters appear only by pseudonym."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import IO, Any

from annotation.cells import escape_formula, xlsx_row
from annotation.generic_export import CSV_COLUMNS, generic_csv_rows, generic_records
from annotation.models import Study
from annotation.selectors import (
    RESPONSE_COLUMNS,
    rating_columns,
    rating_export_rows,
    response_export_rows,
)

FORMATS = ("csv", "jsonl", "xlsx")
WHATS = ("ratings", "responses", "generic")
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}


def export_rows(study: Study, what: str) -> tuple[list[str], Iterator[dict[str, Any]]]:
    if what == "ratings":
        return rating_columns(study), rating_export_rows(study)
    if what == "responses":
        return RESPONSE_COLUMNS, response_export_rows(study)
    if what == "generic":  # the import format, one row per record (per criterion for stars)
        return CSV_COLUMNS, generic_csv_rows(generic_records(study))
    raise ValueError(f"unknown export {what!r}: use ratings, responses or generic")


def _text(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


class _Echo:
    def write(self, value: str) -> str:
        return value


def iter_csv(
    columns: list[str], rows: Iterable[dict[str, Any]], *, spreadsheet: bool = False
) -> Iterator[str]:
    """CSV lines; for a spreadsheet, text that would run as a formula gets an apostrophe."""
    writer = csv.writer(_Echo())
    yield writer.writerow(columns)
    for row in rows:
        cells = [_text(row.get(c)) for c in columns]
        yield writer.writerow(map(escape_formula, cells) if spreadsheet else cells)


def iter_jsonl(columns: list[str], rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    for row in rows:
        yield json.dumps({c: _text(row.get(c)) for c in columns}, ensure_ascii=False) + "\n"


def xlsx_bytes(columns: list[str], rows: Iterable[dict[str, Any]], *, title: str) -> bytes:
    """Every text cell is a string cell, never a formula, whatever it starts with (cells.py)."""
    from openpyxl import Workbook

    wb = Workbook(write_only=True)
    ws = wb.create_sheet(title=title[:31])
    ws.append(xlsx_row(ws, columns))
    for row in rows:
        ws.append(xlsx_row(ws, [row.get(c) for c in columns]))
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def export_iter(study: Study, *, what: str, fmt: str, spreadsheet: bool = False) -> Iterator[bytes]:
    """The export as chunks of bytes (CSV and JSONL stream; XLSX is built whole). `spreadsheet`:
    a CSV to open in Excel, its formula-like text escaped (docs/decisions/data.md)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: use csv, jsonl or xlsx")
    columns, rows = export_rows(study, what)
    if fmt == "xlsx":
        yield xlsx_bytes(columns, rows, title=what)
        return
    if fmt == "jsonl" and what == "generic":  # each record type has its own fields
        lines: Iterator[str] = (
            json.dumps(r, ensure_ascii=False) + "\n" for r in generic_records(study)
        )
    else:
        lines = (
            iter_csv(columns, rows, spreadsheet=spreadsheet)
            if fmt == "csv"
            else iter_jsonl(columns, rows)
        )
    buf: list[str] = []
    size = 0
    for line in lines:
        buf.append(line)
        size += len(line)
        if size > 64_000:
            yield "".join(buf).encode("utf-8")
            buf, size = [], 0
    if buf:
        yield "".join(buf).encode("utf-8")


def export_write(study: Study, *, what: str, fmt: str, out: IO[bytes]) -> int:
    """Write the export to a binary stream; returns the number of bytes written."""
    n = 0
    for chunk in export_iter(study, what=what, fmt=fmt):
        out.write(chunk)
        n += len(chunk)
    return n


def export_filename(study: Study, *, what: str, fmt: str) -> str:
    return f"study-{study.pk}-{what}.{fmt}"
