"""The organizer's pages in Chinese show no English of the product's own (data such as model
names and question texts stay as given): studies, a study, import, judges, prompt templates, run
start and the report. Importer refusals speak the reader's language on the import page and in the
API, and English in `manage.py import_dataset`: one message serves all three."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import translation

from tests.ranking.conftest import star_study  # noqa: F401

pytestmark = pytest.mark.django_db

# English the pages showed on Chinese pages (placeholders, score folders, report headers).
ENGLISH = (
    "the question text",
    "the answer shown first (pairwise)",
    "human-score (LLMEval-2 human panel)",
    "gpt-score (GPT-4 judge)",
    "Agrees with ds",
    "Star sigma",
    "Star bias",
    "Importing data",  # the import formats document
    "Format:",  # the quality page's gold upload form
)
BAD_JSONL = b'{"type": "question", "text": "Q?"}\n{"type": "nope", "question_id": "1"}\n'


def test_the_organizer_pages_in_chinese_show_no_english(
    organizer_client,
    star_study,  # noqa: F811
    make_judge,
    make_study,
):
    make_judge(name="alice-gpt4")
    study = make_study(["Fine?"], n_llms=1)
    organizer_client.cookies["django_language"] = "zh-hans"
    urls = [
        reverse("organize:studies"),
        reverse("organize:study", args=[star_study.study.pk]),
        reverse("organize:import"),
        reverse("organize:import_formats"),
        reverse("judges:list"),
        reverse("judges:templates"),
        reverse("judges:run_start", args=[study.pk]),
        reverse("ranking:report", args=[star_study.study.pk]),
        reverse("organize:study_quality", args=[star_study.study.pk]),
    ]
    pages = {}
    for url in urls:
        response = organizer_client.get(url)
        assert response.status_code == 200, url
        pages[url] = response.content.decode()
    shown = "\n".join(pages.values())
    assert "问题文本" in shown and "human-score（LLMEval-2 人工评分组）" in shown
    for words in ENGLISH:
        assert words not in shown, words


def _upload(client):
    data = {"format": "jsonl", "dataset": "mine"}
    data["files"] = SimpleUploadedFile("bad.jsonl", BAD_JSONL, content_type="application/jsonl")
    return data


def test_import_refusals_speak_the_readers_language(organizer_client, tmp_path):
    organizer_client.cookies["django_language"] = "zh-hans"
    page = organizer_client.post(reverse("organize:import"), _upload(organizer_client))
    assert page.status_code == 400
    html = page.content.decode()
    assert "bad.jsonl, 第 1 行：缺少 question_id" in html
    assert "bad.jsonl, 第 2 行：type 必须是 question, response, rating, pairwise 之一" in html
    assert "is missing" not in html and "line 1" not in html and "must be one of" not in html
    api = organizer_client.post(reverse("api-imports"), _upload(organizer_client))
    assert api.status_code == 400
    body = api.json()
    assert body["detail"] == (
        "已拒绝，没有写入任何内容：bad.jsonl, 第 1 行：缺少 question_id（另有 1 处错误）"
    )
    assert body["errors"][0] == "bad.jsonl, 第 1 行：缺少 question_id"
    # The command, in its own process, runs in the default language (English) and says the same.
    translation.activate(settings.LANGUAGE_CODE)
    path = tmp_path / "bad.jsonl"
    path.write_bytes(BAD_JSONL)
    err = io.StringIO()
    with pytest.raises(CommandError) as refused:
        args = ["--format", "jsonl", "--dataset", "mine", "--no-progress", str(path)]
        call_command("import_dataset", *args, stdout=io.StringIO(), stderr=err)
    said = str(refused.value) + err.getvalue()
    assert "bad.jsonl, line 1: question_id is missing" in said and "缺少" not in said


# The import formats document: one per language, the Chinese one a translation of the English.
DOCS = Path(settings.BASE_DIR) / "docs"
ENGLISH_HEADINGS = ("Importing data", "Defects found in the real files", "Full import figures")


def test_the_import_formats_page_follows_the_pages_language(organizer_client):
    url = reverse("organize:import_formats")
    english = organizer_client.get(url).content.decode()
    assert "<h1>Importing data</h1>" in english and "导入数据</h1>" not in english
    organizer_client.cookies["django_language"] = "zh-hans"
    chinese = organizer_client.get(url).content.decode()
    assert "<h1>导入数据</h1>" in chinese and "<h2>真实文件中发现的缺陷及处理方式</h2>" in chinese
    for heading in ENGLISH_HEADINGS:
        assert heading not in chinese, heading
    # Commands and field names stay as they are.
    assert "python manage.py import_dataset --format FORMAT PATH..." in chinese


def _shape(text: str) -> dict:
    """What a translation keeps: the heading levels in order, the code in the headings, the
    code blocks verbatim, every inline code span, the tables' sizes and the list items."""
    fences = re.findall(r"^```.*?^```", text, re.M | re.S)
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    headings = re.findall(r"^(#+) (.*)$", prose, re.M)
    tables = [
        (len(rows), rows[0].count("|"))
        for rows in (b.split("\n") for b in re.findall(r"(?:^\|.*\n?)+", prose, re.M))
    ]
    return {
        "headings": [len(level) for level, _ in headings],
        "heading code": [re.findall(r"`[^`]+`", title) for _, title in headings],
        "code blocks": fences,
        "code spans": sorted(" ".join(s.split()) for s in re.findall(r"`([^`]+)`", prose)),
        "tables": tables,
        "list items": len(re.findall(r"^\s*- ", prose, re.M)),
    }


def test_the_chinese_import_formats_document_keeps_every_section_of_the_english():
    english = _shape((DOCS / "import-formats.md").read_text("utf-8"))
    chinese = _shape((DOCS / "import-formats.zh-hans.md").read_text("utf-8"))
    assert len(english["headings"]) > 5 and english["code blocks"] and english["tables"]
    for part, value in english.items():
        assert chinese[part] == value, f"{part} differs: update docs/import-formats.zh-hans.md"
