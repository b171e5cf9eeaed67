"""The report page in words: the codes in its tables (rater kinds, pools, modes, groups) are shown
as translated words while the downloads keep them as data; counts agree in number ("1 rater");
the cost caption holds for imported judges too."""

from __future__ import annotations

import io
import json
import zipfile

import pandas as pd
import pytest
from django.urls import reverse

from ranking import presenters, summary
from tests.ranking.conftest import page_charts, pair_study, star_study  # noqa: F401

# Wording and formatting of the page: the same on any database (the PostgreSQL pass checks the
# report's frames, filters, snapshots and permissions in test_report_pages and the API tests).
pytestmark = [pytest.mark.django_db, pytest.mark.database_independent]


def _page(client, study, language: str, query: str = ""):
    client.cookies["django_language"] = language
    response = client.get(reverse("ranking:report", args=[study.pk]) + query)
    assert response.status_code == 200
    return response


def _column(table: presenters.Table, header: str) -> set[str]:
    i = table.columns.index(header)
    return {row[i] for row in table.rows}


def test_the_chinese_page_shows_pools_rater_kinds_and_modes_in_words(
    organizer_client,
    star_study,  # noqa: F811
):
    response = _page(organizer_client, star_study.study, "zh-hans")
    diagnostics = response.context["tables"]["annotator_diagnostics"]
    assert _column(diagnostics, "来源") == {"现场", "众包", "公众", "LLM 评审"}
    assert _column(diagnostics, "评分者类型") == {"人工", "LLM 评审"}
    accuracy = response.context["tables"]["accuracy_by_pool"]
    assert "众包" in _column(accuracy, "来源") and _column(accuracy, "方式") == {"星级"}
    html = response.content.decode()
    assert "<td>众包</td>" in html and "<td>crowd</td>" not in html
    assert "<td>onsite</td>" not in html and "<td>star</td>" not in html


def test_the_english_page_words_the_groups_and_the_rankings(organizer_client, pair_study):  # noqa: F811
    response = _page(organizer_client, pair_study.study, "en")
    html = response.content.decode()
    # judge_agreement: every human pooled, beside each judge and each pool.
    assert "<td>all humans</td>" in html and "<td>humans</td>" not in html
    assert "<td>crowd</td>" in html and "<td>pairwise</td>" in html
    matrix = response.context["correlation_matrix"]
    assert "Points / human" in matrix.columns and "points/human" not in matrix.columns
    assert "Points / human" in {row[0] for row in matrix.rows}
    # ranking_agreement: the ranking and the pooled judges in words.
    assert "<td>Points</td>" in html and "<td>points</td>" not in html
    assert "<td>all judges</td>" in html


def test_the_downloads_keep_the_codes(organizer_client, star_study):  # noqa: F811
    _page(organizer_client, star_study.study, "zh-hans")
    url = reverse("ranking:report-download", args=[star_study.study.pk, "json"])
    doc = json.loads(organizer_client.get(url).content)
    rows = doc["tables"]["annotator_diagnostics"]
    assert {r["pool"] for r in rows} == {"onsite", "crowd", "public", "judge"}
    assert {r["rater_kind"] for r in rows} == {"human", "judge"}
    url = reverse("ranking:report-download", args=[star_study.study.pk, "csv"])
    files = zipfile.ZipFile(io.BytesIO(organizer_client.get(url).content))
    name = next(n for n in files.namelist() if "annotator_diagnostics" in n)
    frame = pd.read_csv(io.BytesIO(files.read(name)))
    assert set(frame["pool"]) == {"onsite", "crowd", "public", "judge"}


def test_a_code_the_mapping_does_not_know_is_shown_as_it_is():
    df = pd.DataFrame({"pool": ["crowd", "night-shift"], "group": ["Zx81-pseudonym", "humans"]})
    table = presenters.table(df, "annotator_diagnostics")
    assert table.rows == [["crowd", "Zx81-pseudonym"], ["night-shift", "all humans"]]


@pytest.mark.parametrize(
    ("language", "one", "many"),
    [("en", "1 rater<", "4 raters<"), ("zh-hans", "1 位评分者<", "4 位评分者<")],
)
def test_the_summary_counts_one_rater_in_the_singular(
    organizer_client,
    star_study,  # noqa: F811
    language,
    one,
    many,
):
    everyone = _page(organizer_client, star_study.study, language).content.decode()
    assert many in everyone
    crowd = _page(organizer_client, star_study.study, language, "?pool=crowd").content.decode()
    assert one in crowd and "1 raters" not in crowd


def test_the_rank_correlation_line_counts_one_model_in_the_singular():
    row = pd.Series({"spearman_rho": float("nan"), "kendall_tau_b": float("nan"), "n_models": 1})
    line = summary._correlation_line(row, "bt")
    assert "over 1 model;" in line and "1 models" not in line


@pytest.mark.parametrize(
    ("language", "caption"),
    [("en", "imported judges have none"), ("zh-hans", "导入的评审没有运行")],
)
def test_the_cost_caption_holds_for_imported_judges(
    organizer_client,
    pair_study,  # noqa: F811
    language,
    caption,
):
    html = _page(organizer_client, pair_study.study, language).content.decode()
    assert caption in html


def test_chinese_pages_name_the_rubric_and_the_excel_download_in_chinese(
    organizer_client,
    star_study,  # noqa: F811
):
    # On zh pages the rubric stayed "LLMEval-2 objective and subjective" (it has a Chinese name),
    # the report's "CSV for Excel" link stayed English, and the language menu offered "英语"
    # (English in Chinese) to a reader looking for English.
    study = star_study.study
    html = _page(organizer_client, study, "zh-hans").content.decode()
    assert "LLMEval-2 客观题与主观题" in html and "LLMEval-2 objective and subjective" not in html
    assert "适用于 Excel 的 CSV" in html and "CSV for Excel" not in html
    assert ">English</option>" in html and "英语" not in html
    pages = [reverse("organize:study", args=[study.pk]), reverse("organize:study_new")]
    for url in pages:
        page = organizer_client.get(url).content.decode()
        assert "LLMEval-2 客观题与主观题" in page and "objective and subjective" not in page
    assert "说明" in page and "Instructions" not in page  # the new-study form's label
    html = _page(organizer_client, study, "en").content.decode()
    assert "LLMEval-2 objective and subjective" in html and ">简体中文</option>" in html
    # The total is LLMEval-2's method, over whatever rubric the study has (own rubrics too).
    assert "Ordered by the total out of 100 (each criterion scaled to its range" in html


def _chart_texts(client, study, language: str) -> str:
    """The text of every chart the page in this language loads (its htmx request)."""
    import base64

    client.cookies["django_language"] = language
    uris = [src for figures in page_charts(client, study).values() for src, _alt in figures]
    assert uris, "the report draws charts"
    return "\n".join(base64.b64decode(u.split(",", 1)[1]).decode("utf-8") for u in uris)


def test_the_charts_speak_the_pages_language(
    organizer_client,
    star_study,  # noqa: F811
):
    # The charts (SVG images) kept English titles, axes and legends on Chinese pages.
    study = star_study.study
    english = _chart_texts(organizer_client, study, "en")
    assert "Mean stars (overall)" in english and "Accuracy per pool" in english
    chinese = _chart_texts(organizer_client, study, "zh-hans")
    assert "平均星级（总体）" in chinese and "各来源准确率" in chinese and "平均星级" in chinese
    for words in ("Mean stars (overall)", "Accuracy per pool", ">human<", ">judge<"):
        assert words not in chinese
    # The rank-correlation matrix names rankings as the tables do, not by code.
    assert "Mean stars / human" in english and ">star/human<" not in english
    assert "平均星级 / 人工" in chinese
    # Each language keeps its own cached drawing.
    again = _chart_texts(organizer_client, study, "en")
    assert again == english
