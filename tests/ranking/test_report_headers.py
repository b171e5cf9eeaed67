"""Report column headers: every header the report shows can be translated, the Chinese page shows
the translations, and the downloads keep the English column names. Also how the side-by-side
leaderboard writes its cells."""

from __future__ import annotations

import pandas as pd
import pytest
from django.urls import reverse
from django.utils import translation

from ranking import exports, formatting, presenters
from ranking.services import report_build
from ranking.stats.report import build_report
from ranking.stats.synthetic import generate

# Headers and their translations: the same on any database (SQLite pass only).
pytestmark = pytest.mark.database_independent


def _columns(value) -> set[str]:
    """Column names of every table in a report (and the keys of its dicts of figures)."""
    if isinstance(value, pd.DataFrame):
        return {str(c) for c in value.columns}
    if isinstance(value, dict):
        if value and all(not isinstance(v, dict | pd.DataFrame) for v in value.values()):
            return {str(k) for k in value}
        return set().union(*(_columns(v) for v in value.values()))
    return set()


def test_every_report_column_has_a_header_the_catalog_can_translate():
    s = generate(n_models=4, n_questions=30, n_task_types=2, n_pairs_per_question=6,
                 n_onsite=4, n_crowd=8, n_public=12, seed=3)  # fmt: skip
    report = build_report(s.star_df, s.pair_df, n_bootstrap=10)
    columns = _columns({k: v for k, v in report.items() if k != "meta"})
    assert len(columns) > 100
    with translation.override("en"):
        explicit = {str(h) for h in formatting.HEADERS.values()}
        untranslatable = sorted(
            c
            for c in columns
            if formatting.header(c) not in explicit | set(formatting.GENERIC_HEADERS)
        )
    assert untranslatable == []


@pytest.mark.parametrize(
    ("column", "english", "chinese"),
    [
        ("win_share", "Win share", "胜占比"),
        ("n_at_least_k", "N at least k", "至少相差 k 的数量"),
        ("rater_kind", "Rater kind", "评分者类型"),
        # Abbreviations and intervals as a reader writes them, not "Mae", "Spearman ci low".
        ("mae", "MAE", "平均绝对误差（MAE）"),
        ("spearman_ci_low", "Spearman 95% CI low", "Spearman 95% 置信下限"),
        ("kendall_ci_high", "Kendall 95% CI high", "Kendall 95% 置信上限"),
    ],
)
def test_a_header_follows_the_active_language(column, english, chinese):
    with translation.override("en"):
        assert formatting.header(column) == english
    with translation.override("zh-hans"):
        assert formatting.header(column) == chinese


def test_an_unknown_column_keeps_its_generic_english_header():
    with translation.override("zh-hans"):
        assert formatting.header("brand_new_figure") == "Brand new figure"
        assert formatting.header("x<y") == "x<y"


def test_the_csv_download_keeps_the_english_column_names():
    df = pd.DataFrame({"win_share": [0.5], "rater_kind": ["human"]})
    with translation.override("zh-hans"):
        text = exports._csv_text(df)
    assert text.splitlines()[0] == "win_share,rater_kind"


@pytest.mark.django_db
def test_the_chinese_report_page_shows_translated_headers(organizer_client, star_study):
    organizer_client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    response = organizer_client.get(reverse("ranking:report", args=[star_study.study.pk]))
    assert response.status_code == 200
    boards = response.context["leaderboards"]
    assert boards.columns[:3] == ["模型", "平均星级 / 人工", "平均星级 / 评审"]
    length = response.context["tables"]["length_bias"]
    assert {"胜占比", "平局占比", "负占比"} <= set(length.columns)
    # A table with rows is on the page with its translated headers.
    assert "discrimination" in response.context["tables"]
    assert "<th>最佳模型</th>" in response.content.decode()


@pytest.mark.django_db
def test_each_leaderboard_column_keeps_its_own_precision(star_study):
    """Mean stars keep three significant digits and Total /100 is whole: each column is written
    the way its own leaderboard needs, not the way the last leaderboard does."""
    report = report_build(study=star_study.study)
    with translation.override("en"):  # a page request before may have left another active
        boards = presenters.side_by_side(report)
    star = report.table("leaderboard_star")
    star = star[(star["rater_kind"] == "human") & (star["criterion"] == "overall")]
    means = dict(zip(star["model"].astype(str), star["mean"], strict=True))
    column = boards.columns.index("Mean stars / human")
    for row in boards.rows:
        shown = row[column].split(" ")[0]
        assert shown == formatting.number(means[row[0]]), row
    assert any("." in row[column] for row in boards.rows)


@pytest.mark.django_db
def test_star_tables_name_criteria_as_the_rubric_does_in_the_pages_language(
    organizer_client, star_study
):
    """The per-criterion tables head their columns with the rubric's own labels (its Chinese
    ones on a Chinese page), not with the keys made into words ("Logicality", "Overall")."""
    url = reverse("ranking:report", args=[star_study.study.pk])
    with translation.override("en"):
        human = organizer_client.get(url).context["star_tables"][0]
    assert {"Logicity", "Explanation Correctness", "Overall"} <= set(human.columns)
    assert "Logicality" not in human.columns
    organizer_client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    human = organizer_client.get(url).context["star_tables"][0]
    assert {"逻辑性", "总体"} <= set(human.columns)
    assert "Overall" not in human.columns and "Logicity" not in human.columns
