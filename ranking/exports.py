"""The report as files: JSON (one document), CSV (one file per table, zipped or in a folder) and
XLSX (one sheet per table). Used by the download views and the ``report`` command.

Spreadsheet safety: a cell whose text starts with ``= + - @`` (or a tab / carriage return) would be
run as a formula by Excel or LibreOffice; model names, pseudonyms and task types come from uploaded
files. XLSX stores such text as a string cell, unchanged; the CSV tables, which have no cell types
and are meant for reading in a spreadsheet, give it a leading apostrophe (OWASP's advice for CSV
injection). Numbers are never touched. See ``annotation/cells.py``.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
from openpyxl import Workbook
from openpyxl.styles import Font

from annotation.cells import escape_formula, xlsx_row
from ranking.services import StudyReport, table_names
from ranking.stats.report import jsonable

# "excel-csv": the same zip of CSVs, each starting with a UTF-8 byte-order mark so that Excel
# reads Chinese text as UTF-8 instead of the system code page.
FORMATS = ("json", "csv", "excel-csv", "xlsx")
UTF8_BOM = "\ufeff"
CONTENT_TYPES = {
    "json": "application/json",
    "csv": "application/zip",
    "excel-csv": "application/zip",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}
EXTENSIONS = {"json": "json", "csv": "zip", "excel-csv": "zip", "xlsx": "xlsx"}


def safe_cell(value: Any) -> Any:
    """The value as a CSV table for spreadsheets should hold it (see the module docstring)."""
    return escape_formula(value)


def report_document(report: StudyReport) -> dict[str, Any]:
    """The whole report as one JSON-ready dict: study, filters, meta and every table."""
    tables = report.tables
    return {
        "study": {"id": report.study.pk, "name": report.study.name, "mode": report.study.mode},
        "filters": report.filters.as_dict(),
        "meta": jsonable(tables.get("meta", {})),
        "elo_variance": jsonable(tables.get("elo_variance", {})),
        "tables": {name: jsonable(report.table(name)) for name in table_names()},
    }


def to_json(report: StudyReport) -> bytes:
    return json.dumps(report_document(report), ensure_ascii=False, indent=1).encode("utf-8")


def _meta_rows(report: StudyReport) -> list[tuple[str, str]]:
    doc = report_document(report)
    rows = [("study", doc["study"]["name"]), ("study_id", str(doc["study"]["id"]))]
    rows += [(f"filter.{k}", json.dumps(v, ensure_ascii=False)) for k, v in doc["filters"].items()]
    rows += [(f"meta.{k}", json.dumps(v, ensure_ascii=False)) for k, v in doc["meta"].items()]
    rows += [
        (f"elo_variance.{k}", json.dumps(v, ensure_ascii=False))
        for k, v in doc["elo_variance"].items()
    ]
    return rows


def _csv_text(df: pd.DataFrame) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([safe_cell(str(c)) for c in df.columns])
    for row in jsonable(df):
        writer.writerow(["" if v is None else safe_cell(v) for v in row.values()])
    return buf.getvalue()


def _csv_files(report: StudyReport) -> dict[str, str]:
    files = {}
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["key", "value"])
    writer.writerows((k, safe_cell(v)) for k, v in _meta_rows(report))
    files["meta.csv"] = buf.getvalue()
    for name in table_names():
        files[f"{name}.csv"] = _csv_text(report.table(name))
    return files


def to_csv_zip(report: StudyReport, *, bom: bool = False) -> bytes:
    """A zip of one UTF-8 CSV per table plus ``meta.csv`` (study, filters, options, counts);
    with ``bom`` each file starts with a byte-order mark (for Excel)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for filename, text in _csv_files(report).items():
            zf.writestr(filename, ((UTF8_BOM if bom else "") + text).encode("utf-8"))
    return out.getvalue()


def write_csv_dir(report: StudyReport, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for filename, text in _csv_files(report).items():
        path = folder / filename
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def to_xlsx(report: StudyReport) -> bytes:
    """One sheet per table (sheet names are the table names, at most 31 characters) plus ``meta``."""
    wb = Workbook(write_only=True)
    bold = Font(bold=True)

    ws = wb.create_sheet("meta")
    ws.append(xlsx_row(ws, ["key", "value"], font=bold))
    for row in _meta_rows(report):
        ws.append(xlsx_row(ws, row))
    for name in table_names():
        df = report.table(name)
        ws = wb.create_sheet(name[:31])
        ws.append(xlsx_row(ws, [str(c) for c in df.columns], font=bold))
        for row in jsonable(df):
            ws.append(xlsx_row(ws, row.values()))
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def render(report: StudyReport, fmt: str) -> bytes:
    if fmt == "json":
        return to_json(report)
    if fmt == "csv":
        return to_csv_zip(report)
    if fmt == "excel-csv":
        return to_csv_zip(report, bom=True)
    if fmt == "xlsx":
        return to_xlsx(report)
    raise ValueError(f"Unknown format {fmt!r}: use one of {', '.join(FORMATS)}.")


def filename(report: StudyReport, fmt: str) -> str:
    suffix = "-excel" if fmt == "excel-csv" else ""
    return f"study-{report.study.pk}-report{suffix}.{EXTENSIONS[fmt]}"
