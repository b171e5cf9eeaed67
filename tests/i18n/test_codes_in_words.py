"""Chinese pages show words, not codes: the Bradley-Terry tie rule links on the report page,
the question kinds a criterion applies to, and JSON errors (Python's English decoder text) on
the API and in uploads. The codes stay where they are data: in the links' URLs and the API."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.services import study_create
from tests.ranking.conftest import pair_study  # noqa: F401

# database_independent: wording in two languages: the same on any database.
pytestmark = [pytest.mark.django_db, pytest.mark.database_independent]


def _zh(client):
    client.cookies["django_language"] = "zh-hans"
    return client


def test_the_tie_rule_links_are_words_and_keep_the_codes_in_their_urls(
    organizer_client,
    pair_study,  # noqa: F811
):
    url = reverse("ranking:report", args=[pair_study.study.pk])
    html = _zh(organizer_client).get(url).content.decode()
    line = re.search(r"Bradley-Terry 平局处理：(.*?)</p>", html, re.S).group(1)
    assert "平局 = 半胜" in line and "不计平局" in line  # the rules' words
    assert "bt_ties=exclude" in line  # the code stays in the link
    assert not re.search(r">\s*(half|exclude)\s*<", line) and "half：" not in line
    organizer_client.cookies["django_language"] = "en"
    english = organizer_client.get(url).content.decode()
    assert "tie = half a win" in english and "ties left out" in english


def test_question_kinds_are_words_on_the_rubrics_and_quality_pages(
    organizer, organizer_client, small_dataset, star_rubric
):
    rubrics = _zh(organizer_client).get(reverse("organize:rubrics")).content.decode()
    row = re.search(r'<tr data-rubric="llmeval2">.*?</tr>', rubrics, re.S).group(0)
    assert "（客观题）" in row or "(客观题)" in row
    assert "(objective)" not in row and "(subjective)" not in row
    study = study_create(
        name="S", dataset=small_dataset, mode="star", rubric=star_rubric, owner=organizer
    )
    quality = organizer_client.get(reverse("organize:study_quality", args=[study.pk]))
    keys = re.search(r'id="criterion-keys">(.*?)</p>', quality.content.decode(), re.S).group(1)
    assert "客观题" in keys and "主观题" in keys and "objective" not in keys


@pytest.mark.parametrize(
    ("body", "line", "column", "zh_reason"),
    [
        ("[", 1, 2, "此处应有一个值"),
        ('{"name": "s",\n "mode": }', 2, 10, "此处应有一个值"),
        ('{"name": "s" "mode": "star"}', 1, 14, "此处应有逗号"),
        ('{"name": "s"} x', 1, 15, "JSON 值之后还有多余内容"),
    ],
)
def test_an_api_json_error_is_a_translated_400_naming_line_and_column(
    organizer_client, body, line, column, zh_reason
):
    url = reverse("api-studies")
    zh = _zh(organizer_client).post(url, body, content_type="application/json")
    assert zh.status_code == 400
    detail = zh.json()["detail"]
    assert detail == f"不是有效的 JSON：第 {line} 行第 {column} 列，{zh_reason}。"
    organizer_client.cookies["django_language"] = "en"
    en = organizer_client.post(url, body, content_type="application/json").json()["detail"]
    assert en.startswith(f"Not valid JSON at line {line}, column {column}: ")
    assert "JSON parse error" not in en and "(char " not in en


def test_an_api_body_that_is_not_utf8_is_a_translated_400(organizer_client):
    url = reverse("api-studies")
    r = _zh(organizer_client).post(url, b'{"name": "\xff"}', content_type="application/json")
    assert r.status_code == 400 and r.json()["detail"] == "不是有效的 JSON：文本不是 UTF-8 编码。"


def test_a_gold_upload_json_error_is_translated(
    organizer, organizer_client, small_dataset, star_rubric
):
    study = study_create(
        name="S", dataset=small_dataset, mode="star", rubric=star_rubric, owner=organizer
    )
    url = reverse("organize:study_gold_upload", args=[study.pk])
    r = _zh(organizer_client).post(url, {"format": "json", "text": '[{"item_id": 1,}]'})
    page = r.content.decode()
    assert r.status_code == 400
    assert "不是有效的 JSON：第 1 行第 15 列，对象末尾多了一个逗号。" in page
    assert "Illegal trailing comma" not in page


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", ["Items without a majority", "Share won by the longer answer",
                "Length coefficient", "Length-controlled win rate"]),
        ("zh-hans", ["无多数意见的条目", "较长回答胜出占比", "长度系数", "长度控制胜率"]),
    ],
)  # fmt: skip
def test_the_judge_section_notes_name_columns_by_their_headers_not_their_codes(
    organizer_client,
    pair_study,  # noqa: F811
    language,
    words,
):
    """The notes said "(n_no_majority)", "p_longer: ...", "lc_win_rate: ..." in the prose; they
    now use the words the tables head those columns with. The API keeps the codes."""
    from django.utils import translation

    from ranking import formatting

    organizer_client.cookies["django_language"] = language
    html = organizer_client.get(reverse("ranking:report", args=[pair_study.study.pk]))
    section = re.search(
        r'<section class="report-section" id="judge-agreement">(.*?)</section>',
        html.content.decode(),
        re.S,
    ).group(1)
    notes = " ".join(re.findall(r'<p class="muted">(.*?)</p>', section, re.S))
    codes = ("n_no_majority", "p_longer", "length_coef", "lc_win_rate")
    for code, word in zip(codes, words, strict=True):
        assert code not in notes
        assert f"“{word}”" in notes
        with translation.override(language):
            assert formatting.header(code) == word  # the tables' headers, the same words
    assert f"<th>{words[1]}</th>" in section  # the judge_bias table heads the column so
    api = organizer_client.get(
        reverse("ranking:api-report-table", args=[pair_study.study.pk, "judge_bias"])
    ).json()
    assert {"p_longer", "length_coef"} <= set(api["columns"])
