"""A refusal names the file and the record; in Chinese the record's words are translated
("line 2" -> "第 2 行") but never the file's name, even one that starts like a place ("line 3.jsonl",
"question bank.csv") nor a record's id (annotation/importers/bundle.py: Place)."""

from __future__ import annotations

import json
import pickle

import pytest
from django.utils import translation

from annotation.importers import dataset_preview
from annotation.importers.bundle import message

pytestmark = pytest.mark.django_db


def _errors(tmp_path, name: str, text: str, fmt: str = "jsonl") -> list[str]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with translation.override("zh-hans"):
        preview = dataset_preview(format=fmt, paths=[path], dataset="tiny", progress=False)
    assert not preview["ok"]
    return preview["errors"]


@pytest.mark.parametrize("name", ["line 3.jsonl", "question bank.jsonl", "record 7.jsonl"])
def test_a_file_named_like_a_place_keeps_its_name_in_chinese(tmp_path, name):
    good = json.dumps({"type": "question", "question_id": "q1", "text": "T"})
    (error,) = _errors(tmp_path, name, f"{good}\nnot json\n")
    assert error.startswith(f"{name}, 第 2 行")
    assert "第 3 行" not in error and "问题 bank" not in error and "第 7 条记录" not in error


def test_a_csv_file_named_like_a_place_keeps_its_name_in_chinese(tmp_path):
    text = "type,question_id,text\nquestion,,Q\n"
    (error,) = _errors(tmp_path, "line 9.csv", text, fmt="csv")
    assert error.startswith("line 9.csv, 第 2 行") and "第 9 行" not in error


def test_a_places_words_are_translated_and_its_values_kept():
    from annotation.importers.bundle import Place, place

    where = place("line 3.jsonl", Place("line 5 (question_id %(qid)s)", qid="a, line 4"))
    said = message("%(where)s: expected an object", where=where)
    assert str(where) == "line 3.jsonl, line 5 (question_id a, line 4)"
    with translation.override("zh-hans"):
        shown = str(said)
    assert shown.startswith("line 3.jsonl, 第 5 行 (question_id a, line 4)")
    assert str(said).startswith("line 3.jsonl, line 5 (question_id a, line 4): ")
    assert str(message("%(where)s: x", where=place("question 1.json"))).startswith(
        "question 1.json"
    )
    copy = pickle.loads(pickle.dumps(where))
    assert isinstance(copy, Place) and copy.shown() == where.shown() and copy == where
