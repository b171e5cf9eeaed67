from __future__ import annotations

import base64
import io
import json
import re
import xml.etree.ElementTree as ET
import zipfile

import pytest
from django.urls import reverse
from openpyxl import load_workbook

from annotation.models import LLM
from ranking.services import table_names

from .conftest import page_charts

pytestmark = pytest.mark.django_db
# Rendering, downloads and snapshots of a report whose frames are read alike on any database
# (tests/ranking/test_frames_copy.py compares them cell for cell): the SQLite pass only. The
# filters, which become SQL, and the permissions run on both.
_same_on_any_database = pytest.mark.database_independent


def report_url(study, **kw):
    return reverse("ranking:report", args=[study.pk])


def download_url(study, fmt):
    return reverse("ranking:report-download", args=[study.pk, fmt])


# --------------------------------------------------------------------------- the page


@_same_on_any_database
def test_owner_sees_every_section_of_the_report(organizer_client, star_study):
    response = organizer_client.get(report_url(star_study.study))
    assert response.status_code == 200
    html = response.content.decode()
    for anchor in (
        "leaderboards",
        "correlations",
        "accuracy",
        "consistency",
        "length-bias",
        "gaps",
        "discrimination",
        "hints",
        "elo",
        "agreement",
        "position",
        "annotators",
    ):
        assert f'id="{anchor}"' in html
    # Leaderboards side by side: human and judge star means, model names, the judge's generosity
    # on model-z puts it first in the judge's column.
    table = response.context["leaderboards"]
    assert table.columns[:3] == ["Model", "Mean stars / human", "Mean stars / judge"]
    judge_col = {row[0]: row[2] for row in table.rows}
    assert judge_col["model-z"].endswith("(1)")
    # The page draws no chart itself: an htmx request fetches them once it is shown, and each
    # group lands in its empty place on the page (out-of-band swaps).
    assert "data:image/svg" not in html
    loader = re.search(r'<div id="report-charts-loader" hx-get="([^"]+)" hx-trigger="load"', html)
    assert loader and loader.group(1) == reverse(
        "ranking:report-charts", args=[star_study.study.pk]
    )
    charts = page_charts(organizer_client, star_study.study)
    for group in charts:
        assert f'<div class="charts pending" id="charts-{group}" data-loading=' in html
    assert {"leaderboards", "accuracy", "annotators", "judge-assisted", "quality"} <= set(charts)
    # Charts are SVG images in data URIs; accuracy per pool is drawn.
    assert charts["accuracy"][0][0].startswith("data:image/svg+xml;base64,")
    assert charts["accuracy"][0][1] == "Box plot of accuracy per pool"
    # Per-annotator tables show pseudonyms, never rater names.
    assert star_study.raters["onsite"].pseudonym in html
    assert "onsite-1" not in html


@_same_on_any_database
def test_the_report_body_alone_comes_back_to_htmx(organizer_client, star_study):
    response = organizer_client.get(
        report_url(star_study.study), {"pool": "onsite"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="report-body">')
    assert "<html" not in html
    assert "pool=onsite" in html  # download links keep the filters


def test_filters_change_the_results(organizer_client, star_study):
    all_raters = organizer_client.get(report_url(star_study.study)).context["report"]
    judge_only = organizer_client.get(report_url(star_study.study), {"pool": "judge"}).context[
        "report"
    ]
    kinds = set(all_raters.table("leaderboard_star")["rater_kind"].astype(str))
    assert {"human", "judge"} <= kinds
    assert set(judge_only.table("leaderboard_star")["rater_kind"].astype(str)) <= {"all", "judge"}
    assert judge_only.meta["n_raters"] == 1
    crit = organizer_client.get(report_url(star_study.study), {"criterion": "correctness"})
    stars = crit.context["report"].table("leaderboard_star")
    assert set(stars["criterion"].astype(str)) == {"correctness", "overall"}


def test_a_time_range_keeps_only_the_ratings_inside_it(organizer_client, star_study):
    # Every first rating is on 2024-03-01, the onsite repeat two days later.
    report = organizer_client.get(
        report_url(star_study.study), {"start": "2024-03-03", "end": "2024-03-03"}
    ).context["report"]
    assert report.meta["n_star_ratings"] == 1
    report = organizer_client.get(report_url(star_study.study), {"end": "2024-03-01"}).context[
        "report"
    ]
    assert report.meta["n_star_ratings"] == 24


def test_an_accuracy_threshold_leaves_out_the_raters_below_it(organizer_client, star_study):
    base = organizer_client.get(report_url(star_study.study), {"min_accuracy": "0"})
    # min_ratings is 5 and every rater has 3 first ratings here, so nobody is measured and
    # nobody is left out; lower the bar through the service to see the threshold act.
    assert base.context["report"].meta["excluded_raters"] == []
    from ranking.services import ReportFilters, report_build

    r = report_build(
        study=star_study.study,
        filters=ReportFilters.build(min_accuracy=0.99, min_ratings=1),
        use_cache=False,
    )
    acc = r.table("accuracy_by_rater")
    below = set(acc.loc[acc["accuracy"] < 0.99, "rater_id"])
    assert below and set(r.meta["excluded_raters"]) == below


def test_invalid_filters_are_reported_not_ignored(organizer_client, star_study):
    response = organizer_client.get(report_url(star_study.study), {"pool": "martians"})
    assert response.status_code == 400
    assert "report" not in response.context
    response = organizer_client.get(
        report_url(star_study.study), {"start": "2024-03-05", "end": "2024-03-01"}
    )
    assert response.status_code == 400


@_same_on_any_database
def test_model_names_are_escaped_on_the_page_and_in_charts(organizer_client, star_study):
    LLM.objects.filter(name="model-x").update(name="<script>alert(1)</script>")
    response = organizer_client.get(report_url(star_study.study))
    html = response.content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    uris = [src for figures in page_charts(organizer_client, star_study.study).values()
            for src, _alt in figures]  # fmt: skip
    assert len(uris) >= 5
    for uri in uris:
        svg = base64.b64decode(uri.split(",", 1)[1]).decode()
        ET.fromstring(svg)  # well-formed: the name is escaped inside the SVG too
        assert "<script" not in svg


# --------------------------------------------------------------------------- downloads


@_same_on_any_database
def test_json_download_parses_back_with_every_table(organizer_client, star_study):
    response = organizer_client.get(download_url(star_study.study, "json"), {"pool": "onsite"})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert "attachment" in response["Content-Disposition"]
    doc = json.loads(response.content)
    assert doc["study"]["id"] == star_study.study.pk
    assert doc["filters"]["pools"] == ["onsite"]
    assert set(doc["tables"]) == set(table_names())
    rows = doc["tables"]["leaderboard_star"]
    assert {r["rater_kind"] for r in rows} == {"all", "human"}


@_same_on_any_database
def test_csv_download_is_a_zip_of_one_csv_per_table(organizer_client, star_study):
    response = organizer_client.get(download_url(star_study.study, "csv"))
    assert response.status_code == 200
    zf = zipfile.ZipFile(io.BytesIO(response.content))
    names = set(zf.namelist())
    assert {f"{t}.csv" for t in table_names()} | {"meta.csv"} == names
    import csv

    rows = list(csv.DictReader(io.StringIO(zf.read("leaderboard_star.csv").decode())))
    judge_z = [
        r
        for r in rows
        if r["rater_kind"] == "judge"
        and r["model"] == "model-z"
        and r["criterion"] == "correctness"
    ]
    assert float(judge_z[0]["mean"]) == 3.0


@_same_on_any_database
def test_xlsx_download_has_one_sheet_per_table(organizer_client, star_study):
    response = organizer_client.get(download_url(star_study.study, "xlsx"))
    assert response.status_code == 200
    wb = load_workbook(io.BytesIO(response.content), read_only=True)
    assert set(wb.sheetnames) == {"meta", *(t[:31] for t in table_names())}
    ws = wb["leaderboard_star"]
    header = [c.value for c in next(ws.iter_rows(max_row=1))]
    assert header[:4] == ["rater_kind", "model", "criterion", "mean"]
    rows = list(ws.iter_rows(min_row=2, values_only=True))
    judge_z = [r for r in rows if r[0] == "judge" and r[1] == "model-z" and r[2] == "correctness"]
    assert judge_z[0][3] == 3.0


@_same_on_any_database
def test_spreadsheet_exports_do_not_turn_names_into_formulas(organizer_client, star_study):
    LLM.objects.filter(name="model-x").update(name='=HYPERLINK("http://evil","x")')
    xlsx = organizer_client.get(download_url(star_study.study, "xlsx")).content
    wb = load_workbook(io.BytesIO(xlsx))
    ws = wb["leaderboard_star"]
    values = [c.value for row in ws.iter_rows() for c in row]
    # XLSX keeps the name exactly, as a string cell; only the CSV table escapes it.
    assert '=HYPERLINK("http://evil","x")' in values
    assert all(c.data_type != "f" for row in ws.iter_rows() for c in row)
    zipped = organizer_client.get(download_url(star_study.study, "csv")).content
    text = zipfile.ZipFile(io.BytesIO(zipped)).read("leaderboard_star.csv").decode()
    assert not re.search(r"(^|,)=HYPERLINK", text, re.M)


def test_unknown_download_format_is_404(organizer_client, star_study):
    assert organizer_client.get(download_url(star_study.study, "pdf")).status_code == 404


def test_download_with_invalid_filters_is_400(organizer_client, star_study):
    response = organizer_client.get(download_url(star_study.study, "json"), {"pool": "nope"})
    assert response.status_code == 400


# --------------------------------------------------------------------------- forbidden paths


@pytest.mark.parametrize("fmt", [None, "json", "csv", "xlsx"])
def test_anonymous_visitors_are_sent_to_log_in(client, star_study, fmt):
    url = report_url(star_study.study) if fmt is None else download_url(star_study.study, fmt)
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("fmt", [None, "json", "csv", "xlsx"])
def test_annotators_are_forbidden(annotator_client, star_study, fmt):
    url = report_url(star_study.study) if fmt is None else download_url(star_study.study, fmt)
    assert annotator_client.get(url).status_code == 403


@pytest.mark.parametrize("fmt", [None, "json", "csv", "xlsx"])
def test_another_organizer_gets_404_for_alices_study(client, other_organizer, star_study, fmt):
    client.force_login(other_organizer)
    url = report_url(star_study.study) if fmt is None else download_url(star_study.study, fmt)
    assert client.get(url).status_code == 404
    # The htmx partial is the same view, with the same check.
    assert client.get(url, headers={"HX-Request": "true"}).status_code == 404


def test_the_home_page_links_each_study_to_its_report(organizer_client, star_study):
    html = organizer_client.get("/").content.decode()
    assert report_url(star_study.study) in html
    assert reverse("ranking:compare") in html


@_same_on_any_database
def test_a_study_without_ratings_still_has_a_report_page(
    organizer_client, organizer, small_dataset, star_rubric
):
    from annotation.services import study_create

    study = study_create(
        name="Nothing yet", dataset=small_dataset, mode="star", rubric=star_rubric, owner=organizer
    )
    response = organizer_client.get(report_url(study))
    assert response.status_code == 200
    assert "No data for this table" in response.content.decode()
    assert not any(page_charts(organizer_client, study).values())


@_same_on_any_database
def test_the_report_is_served_from_the_snapshot_until_a_rating_changes(
    organizer_client, star_study
):
    from .conftest import new_rating

    first = organizer_client.get(report_url(star_study.study)).context["report"]
    again = organizer_client.get(report_url(star_study.study)).context["report"]
    assert not first.cached and again.cached
    new_rating(star_study)
    fresh = organizer_client.get(report_url(star_study.study)).context["report"]
    assert not fresh.cached
    assert fresh.meta["n_star_ratings"] == again.meta["n_star_ratings"] + 1


@_same_on_any_database
def test_the_page_survives_tables_missing_or_reshaped(organizer_client, star_study, monkeypatch):
    """The statistics package may drop or reshape a table; the page shows what is left."""
    import pandas as pd

    from ranking import services

    real = services.build_report

    def fewer_tables(*args, **kwargs):
        tables = real(*args, **kwargs)
        tables.pop("leaderboard_bt", None)
        tables.pop("elo_trajectory", None)
        tables["correlations"] = pd.DataFrame({"something": [1]})
        tables["accuracy_by_rater"] = pd.DataFrame()
        return tables

    monkeypatch.setattr(services, "build_report", fewer_tables)
    response = organizer_client.get(report_url(star_study.study))
    assert response.status_code == 200
    assert response.context["leaderboards"].rows
    charts = page_charts(organizer_client, star_study.study)
    assert charts["accuracy"] == [] and charts["leaderboards"]


@_same_on_any_database
def test_htmx_gets_the_filter_errors_in_a_swappable_response(organizer_client, star_study):
    response = organizer_client.get(
        report_url(star_study.study),
        {"start": "2024-03-05", "end": "2024-03-01"},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="report-body">')
    assert "The start date is after the end date." in html
