"""The readable report without a browser: headers and precision on the page, full precision in
the downloads, the summary's leaderboards and agreement headline, a chart per section, the
"CSV for Excel" download."""

from __future__ import annotations

import io
import json
import zipfile

import pandas as pd
import pytest
from django.urls import reverse
from django.utils import translation

from ranking import charts_sections, formatting
from ranking.services import report_build
from ranking.summary import report_summary

# Wording and formatting of the page: the same on any database (the PostgreSQL pass checks the
# report's frames, filters, snapshots and permissions in test_report_pages and the API tests).
pytestmark = pytest.mark.database_independent


@pytest.mark.parametrize(
    ("column", "value", "table", "text"),
    [
        ("elo", 1536.896180, "", "1537"),
        ("rating", 1399.5, "", "1400"),
        ("score", 0.714286, "", "71.4%"),
        ("win_share", 1.0, "", "100.0%"),
        ("mean", 0.722222, "accuracy_by_pool", "72.2%"),
        ("mean", 2.6, "leaderboard_star", "2.6"),
        ("total", 85.964286, "", "85.96"),  # the paper's two decimals, not three digits
        ("total", 77.3, "", "77.30"),
        ("spearman_rho", -0.333333, "", "-0.333"),
        ("kendall_p", 0.0004, "", "<0.001"),
        ("kendall_p", 0.333333, "", "0.333"),
        ("n_models", 3.0, "", "3"),
        ("games", 7, "", "7"),
        ("strength", 6.104339e-11, "", "0"),
        ("strength", 0.000123456, "", "0.000123"),
        ("alpha", float("nan"), "", ""),
        ("alpha", float("inf"), "", "∞"),
        ("excluded", True, "", "yes"),
        ("model", "GPT4", "", "GPT4"),
        # An interval keeps the scale of its table: Elo for Bradley-Terry only.
        ("ci_low", 1399.5, "leaderboard_bt", "1400"),
        ("ci_low", 0.213456, "chance_agreement", "0.213"),
        ("ci_high", 0.262, "kappa_pairs", "0.262"),
        ("ci_low", 2.4567, "leaderboard_star", "2.46"),
    ],
)
def test_values_are_written_with_the_precision_of_their_kind(column, value, table, text):
    assert formatting.number(value, formatting.kind_of(column, table)) == text


@pytest.mark.parametrize(
    ("column", "header"),
    [
        ("rater_kind", "Rater kind"),
        ("spearman_rho", "Spearman ρ"),
        ("n_at_least_k", "N at least k"),
        ("left_of_decisive", "Left of decisive"),
        ("ci_low", "95% CI low"),
        ("正确性", "正确性"),
    ],
)
def test_headers_are_human(column, header):
    assert formatting.header(column) == header


def test_the_page_rounds_but_the_downloads_keep_full_precision(organizer_client, pair_study):  # noqa: F811
    study = pair_study.study
    response = organizer_client.get(reverse("ranking:report", args=[study.pk]))
    elo = response.context["tables"]["elo_stability"]
    assert "Shuffle mean" in elo.columns and "shuffle_mean" not in elo.columns
    report = response.context["report"]
    exact = float(report.table("elo_stability")["elo"].iloc[0])
    assert elo.rows[0][2] == f"{exact:.0f}"
    doc = json.loads(
        organizer_client.get(reverse("ranking:report-download", args=[study.pk, "json"])).content
    )
    assert doc["tables"]["elo_stability"][0]["elo"] == pytest.approx(exact, abs=1e-9)
    assert doc["tables"]["elo_stability"][0]["elo"] != round(exact)
    # Ranks are whole numbers in the downloads and the API, points_rank as elo_rank (not 1.0).
    api = organizer_client.get(
        reverse("ranking:api-report-table", args=[study.pk, "elo_stability"])
    ).json()
    for row in [*doc["tables"]["elo_stability"], *api["rows"]]:
        assert type(row["points_rank"]) is int and type(row["elo_rank"]) is int


def test_the_report_says_its_csv_download_is_a_zip(organizer_client, pair_study):  # noqa: F811
    """The link said "CSV" and gave study-N-report.zip: the page now says so beside it."""
    study = pair_study.study
    html = organizer_client.get(reverse("ranking:report", args=[study.pk])).content.decode()
    assert "CSV: a zip of one file per table" in html
    body = organizer_client.get(reverse("ranking:report-download", args=[study.pk, "csv"]))
    assert zipfile.is_zipfile(io.BytesIO(body.content))
    organizer_client.cookies["django_language"] = "zh-hans"
    html = organizer_client.get(reverse("ranking:report", args=[study.pk])).content.decode()
    assert "CSV 为 zip 压缩包，每个表一个文件" in html


def test_the_summary_has_a_leaderboard_per_rater_kind_with_intervals(pair_study):  # noqa: F811
    report = report_build(study=pair_study.study)
    summary = report_summary(report)
    assert [b.kind for b in summary.boards] == ["human", "judge"]
    human = summary.boards[0]
    bt = report.table("leaderboard_bt")
    bt = bt[bt["rater_kind"].astype(str) == "human"].sort_values("rating", ascending=False)
    best = bt.iloc[0]
    assert human.rows[0][:4] == [
        "1",
        str(best["model"]),
        f"{best['rating']:.0f}",
        f"{best['ci_low']:.0f} – {best['ci_high']:.0f}",
    ]
    assert any("Spearman ρ" in line for line in summary.agreement)


def test_star_summary_ranks_ties_alike(star_study):  # noqa: F811
    summary = report_summary(report_build(study=star_study.study))
    judge = next(b for b in summary.boards if b.kind == "judge")
    # The judge gives model-x and model-z the same mean: both rank first, the next is third.
    assert [r[0] for r in judge.rows] == ["1", "1", "3"]
    assert judge.columns[:3] == ["Rank", "Model", "Mean stars"]


def test_star_summary_follows_the_total_where_criteria_ranges_differ(star_study):  # noqa: F811
    """Criteria on 1-3 and 1-2 ranges: the plain mean of stars can order models unlike the
    LLMEval-2 total (each criterion scaled to its range), which is the paper's ranking."""
    report = report_build(study=star_study.study)
    total = report.table("leaderboard_total")
    for board in report_summary(report).boards:
        col = board.columns.index("Total /100")
        shown = [row[1] for row in board.rows]
        mine = total[total["rater_kind"].astype(str) == board.kind]
        exact = mine.set_index(mine["model"].astype(str))["total"].astype(float)
        assert [exact[m] for m in shown] == sorted(exact[shown], reverse=True), board.kind
        assert all(row[col] for row in board.rows)
        assert "LLMEval-2 total" in board.note


def test_the_agreement_headline_reads_the_judge_agreement_table(pair_study):  # noqa: F811
    report = report_build(study=pair_study.study)
    report.tables["judge_agreement"] = pd.DataFrame(
        {
            "group_by": ["judge", "judge", "humans"],
            "group": ["gpt-4", "gpt-4", "all"],
            "agreement": [0.8, 0.6, 0.7],
            "n_pairs": [10, 30, 40],
        }
    )
    lines = report_summary(report).agreement
    assert lines[0] == (
        "Judge gpt-4 agrees with the human majority on 65.0% of pairs "
        "(humans with each other: 70.0%)."
    )
    with translation.override("zh-hans"):
        chinese = report_summary(report).agreement[0]
    assert chinese.startswith("评审模型 gpt-4") and chinese.endswith("（人工之间：70.0%）。")


def test_each_section_of_a_pairwise_report_has_a_chart(pair_study):  # noqa: F811
    svgs = charts_sections.section_charts(report_build(study=pair_study.study).tables)
    for name in ("correlations", "length_bias", "discrimination", "agreement", "position_bias"):
        assert svgs[name] and svgs[name].lstrip().startswith("<?xml"), name
    assert svgs["gaps"] is None  # no star ratings in a pairwise study


def test_section_charts_survive_empty_and_reshaped_tables():
    tables = {
        "correlations": pd.DataFrame({"x": [1]}),
        "length_bias": pd.DataFrame(),
        "position_bias": None,
        "annotator_diagnostics": pd.DataFrame({"rater_id": ["<script>"], "n_ratings": [3]}),
    }
    svgs = charts_sections.section_charts(tables)
    assert svgs["correlations"] is None and svgs["length_bias"] is None
    assert "<script>" not in svgs["annotators"] and "&lt;script&gt;" in svgs["annotators"]


def test_report_csv_for_excel_starts_every_file_with_a_bom(organizer_client, star_study):  # noqa: F811
    study = star_study.study
    url = reverse("ranking:report-download", args=[study.pk, "excel-csv"])
    response = organizer_client.get(url)
    assert response.status_code == 200
    assert response["Content-Disposition"].endswith('-report-excel.zip"')
    plain = organizer_client.get(reverse("ranking:report-download", args=[study.pk, "csv"]))
    excel_zip, plain_zip = (zipfile.ZipFile(io.BytesIO(r.content)) for r in (response, plain))
    assert excel_zip.namelist() == plain_zip.namelist()
    for name in plain_zip.namelist():
        assert excel_zip.read(name) == b"\xef\xbb\xbf" + plain_zip.read(name)


def test_the_report_page_links_the_raw_ratings(organizer_client, star_study):  # noqa: F811
    study = star_study.study
    html = organizer_client.get(reverse("ranking:report", args=[study.pk])).content.decode()
    for fmt in ("csv", "excel", "xlsx"):
        assert reverse("organize:study_download", args=[study.pk, "ratings", fmt]) in html
    assert reverse("ranking:report-download", args=[study.pk, "excel-csv"]) in html


def test_the_report_command_writes_the_excel_csv_zip(star_study, tmp_path):  # noqa: F811
    from django.core.management import call_command

    out = tmp_path / "r.zip"
    call_command(
        "report", "--study", str(star_study.study.pk), "--format", "excel-csv", "--out", str(out)
    )
    with zipfile.ZipFile(out) as zf:
        assert zf.read("meta.csv").startswith(b"\xef\xbb\xbfkey,value")


def test_the_headline_prefers_rank_agreement_with_intervals(pair_study):  # noqa: F811
    report = report_build(study=pair_study.study)
    report.tables["ranking_agreement"] = pd.DataFrame(
        {
            "judge": ["judge", "gpt-4"],
            "ranking": ["points", "points"],
            "spearman_rho": [0.7, 0.8],
            "spearman_ci_low": [0.3, 0.4],
            "spearman_ci_high": [0.9, 1.0],
        }
    )
    lines = report_summary(report).agreement
    assert "Human ranking vs judge gpt-4 (Points): Spearman ρ 0.8 (95% interval 0.4 to 1)." in lines
    # The row of all judges pooled (named "judge" in the table) is not "judge judge".
    pooled = (
        "Human ranking vs all judges together (Points): Spearman ρ 0.7 (95% interval 0.3 to 0.9)."
    )
    assert pooled in lines
    assert not any("judge judge" in line for line in lines)
    # The interval version replaces the plain rank correlation.
    assert not any(line.startswith("Human and judge rankings") for line in lines)


def test_star_intervals_show_when_the_statistics_give_them(star_study):  # noqa: F811
    report = report_build(study=star_study.study)
    star = report.tables["leaderboard_star"].copy()
    star["ci_low"], star["ci_high"] = star["mean"] - 0.25, star["mean"] + 0.25
    report.tables["leaderboard_star"] = star
    board = report_summary(report).boards[0]
    assert board.columns[3] == "Interval (95%)"
    mean = float(board.rows[0][2])
    assert (
        board.rows[0][3] == f"{formatting.number(mean - 0.25)} – {formatting.number(mean + 0.25)}"
    )


def test_an_undefined_rank_correlation_is_said_not_left_blank(pair_study):  # noqa: F811
    """Humans who rate every model alike give no rank correlation (NaN): the headline says so
    instead of "Spearman ρ , Kendall τ-b over 4 models"."""
    report = report_build(study=pair_study.study)
    report.tables["ranking_agreement"] = pd.DataFrame()
    nan = float("nan")
    report.tables["correlations"] = pd.DataFrame(
        {
            "ranking_a": ["points/human"],
            "ranking_b": ["points/judge"],
            "spearman_rho": [nan],
            "kendall_tau_b": [nan],
            "n_models": [4],
        }
    )
    lines = report_summary(report).agreement
    assert any("no rank correlation over 4 models" in line for line in lines)
    assert not any("ρ ," in line or "τ-b  " in line for line in lines)


def test_the_rank_agreement_headline_names_the_ranking_in_words(star_study):  # noqa: F811
    """Not the table's code "star_mean" but the page's "mean stars"."""
    report = report_build(study=star_study.study)
    report.tables["ranking_agreement"] = pd.DataFrame(
        {
            "judge": ["judge"],
            "ranking": ["star_mean"],
            "spearman_rho": [0.5],
            "spearman_ci_low": [0.1],
            "spearman_ci_high": [0.9],
        }
    )
    lines = report_summary(report).agreement
    assert any("all judges together (mean stars): Spearman ρ 0.5" in line for line in lines)
    assert not any("star_mean" in line for line in lines)


def test_the_agreement_headline_names_a_judge_by_its_name_beside_the_pseudonym(star_study):  # noqa: F811
    """Tables name raters by pseudonym; the headline adds a judge's own name (a model the
    organizer named, not a person), so "Judge b3pu7ZPiXINKykU5" is not all the page says."""
    judge = star_study.raters["judge"]
    judge.name = "GPT-4 <judge>"
    judge.save(update_fields=["name"])
    report = report_build(study=star_study.study)
    report.tables["judge_agreement"] = pd.DataFrame(
        {"group_by": ["judge"], "group": [judge.pseudonym], "agreement": [0.5], "n_pairs": [4]}
    )
    lines = report_summary(report).agreement
    assert lines[0].startswith(f"Judge GPT-4 <judge> ({judge.pseudonym}) agrees")
