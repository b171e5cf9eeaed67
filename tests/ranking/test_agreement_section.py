"""The judge-vs-human section on the report page, in the API, in the exports; judge-run costs
through the selector; the Bradley-Terry tie rule as a filter; the snapshot stamp."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from decimal import Decimal

import pytest
from django.urls import reverse
from openpyxl import load_workbook
from rest_framework.test import APIClient

from annotation.models import Rater
from evaluation.models import JudgeConfig, JudgeRun, PromptTemplate
from ranking import selectors
from ranking.services import ReportFilters, report_build
from ranking.stats.judge_report import JUDGE_KEYS
from ranking.templatetags.ranking_agreement import agreement_tables

from .conftest import T0, rate

pytestmark = pytest.mark.django_db

# The section's nine tables, as the statistics name them.
JUDGE_TABLES = JUDGE_KEYS
assert len(JUDGE_TABLES) == 9 and "judge_agreement" in JUDGE_TABLES


@pytest.fixture
def api(organizer) -> APIClient:
    c = APIClient()
    c.force_authenticate(organizer)
    return c


def _judge_run(built, *, cost="1.5", done=300, ok=290, failed=10, minutes=10) -> JudgeRun:
    template = PromptTemplate.objects.first() or PromptTemplate.objects.create(
        key="t", name="t", kind="star", system="s", user="u"
    )
    config = JudgeConfig.objects.create(
        name="GPT-4 config", rater=built.raters["judge"], template=template
    )
    return JudgeRun.objects.create(
        study=built.study,
        judge=config,
        template=template,
        price_in_per_1k=Decimal("0.03"),
        price_out_per_1k=Decimal("0.06"),
        n_done=done,
        n_ok=ok,
        n_parse_failed=failed,
        cost=Decimal(cost),
        started_at=T0,
        finished_at=T0 + dt.timedelta(minutes=minutes),
    )


def test_the_api_has_every_judge_table(api, star_study):
    body = api.get(reverse("ranking:api-report", args=[star_study.study.pk])).json()
    for name in JUDGE_TABLES:
        assert name in body["tables"], name
    rows = body["tables"]["judge_agreement"]
    judge = [r for r in rows if r["group_by"] == "judge"]
    assert judge and judge[0]["group"] == star_study.raters["judge"].pseudonym
    variants = {r["variant"] for r in body["tables"]["accuracy_variants"]}
    assert variants == {"paper", "leave_one_out", "humans_only"}


def test_judge_runs_give_price_time_and_parse_share_per_thousand(api, star_study):
    _judge_run(star_study)
    frame = selectors.judge_run_frame(star_study.study)
    assert frame.loc[0, "rater_id"] == star_study.raters["judge"].pseudonym
    report = report_build(study=star_study.study, use_cache=False)
    bias = report.table("judge_bias").set_index(["group_by", "group"])
    row = bias.loc[("judge", star_study.raters["judge"].pseudonym)]
    assert row["cost_per_1k"] == pytest.approx(1.5 / 300 * 1000)
    assert row["seconds_per_1k"] == pytest.approx(600 / 300 * 1000)
    assert row["share_parsed"] == pytest.approx(290 / 300)


def test_bt_ties_is_a_filter_in_the_api_and_bad_values_are_refused(api, pair_study):
    url = reverse("ranking:api-report-table", args=[pair_study.study.pk, "leaderboard_bt"])
    half = api.get(url).json()
    excl = api.get(url, {"bt_ties": "exclude"}).json()
    games = lambda body: sum(r["games"] for r in body["rows"])  # noqa: E731
    assert games(excl) < games(half)
    assert excl["filters"]["options"] == {"bt_ties": "exclude"}
    for bad in ("coinflip", "half\x00", "²"):
        response = api.get(url, {"bt_ties": bad})
        assert response.status_code == 400
        assert "bt_ties" in response.json()


def test_another_organizers_study_is_a_404_for_the_judge_tables(other_organizer, star_study):
    c = APIClient()
    c.force_authenticate(other_organizer)
    url = reverse("ranking:api-report-table", args=[star_study.study.pk, "judge_agreement"])
    assert c.get(url).status_code == 404


@pytest.mark.database_independent  # the page's wording and escaping: the same on any database
def test_the_report_page_shows_the_section_and_escapes_names(organizer_client, star_study):
    rater = star_study.raters["judge"]
    Rater.objects.filter(pk=rater.pk).update(pseudonym="<b>judge</b>")
    response = organizer_client.get(reverse("ranking:report", args=[star_study.study.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="judge-agreement"' in html
    assert "&lt;b&gt;judge&lt;/b&gt;" in html and "<b>judge</b>" not in html
    # The accuracy variants in words (the downloads keep leave_one_out, humans_only).
    assert "<td>leave one out</td>" in html and "<td>humans only</td>" in html


def test_the_tie_rule_links_keep_the_other_filters(organizer_client, pair_study):
    url = reverse("ranking:report", args=[pair_study.study.pk])
    html = organizer_client.get(url, {"pool": "crowd"}).content.decode()
    assert "pool=crowd&amp;bt_ties=exclude" in html
    bad = organizer_client.get(url, {"bt_ties": "sometimes"})
    assert bad.status_code == 400


def test_exports_carry_the_judge_tables_and_neutralise_formulas(organizer_client, star_study):
    Rater.objects.filter(pk=star_study.raters["judge"].pk).update(pseudonym="=HYPERLINK(1)")
    url = reverse("ranking:report-download", args=[star_study.study.pk, "xlsx"])
    wb = load_workbook(io.BytesIO(organizer_client.get(url).content))
    assert set(JUDGE_TABLES) <= set(wb.sheetnames)
    cells = [c for row in wb["judge_agreement"].iter_rows() for c in row]
    # Kept as given, stored as a text cell: never a formula when the file opens.
    assert {c.data_type for c in cells if c.value == "=HYPERLINK(1)"} == {"s"}
    assert all(c.data_type != "f" for c in cells)
    url = reverse("ranking:report-download", args=[star_study.study.pk, "csv"])
    names = zipfile.ZipFile(io.BytesIO(organizer_client.get(url).content)).namelist()
    assert {f"{n}.csv" for n in JUDGE_TABLES} <= set(names)


def test_a_new_rating_changes_the_stamp_and_the_snapshot(star_study):
    first = report_build(study=star_study.study, filters=ReportFilters())
    again = report_build(study=star_study.study, filters=ReportFilters())
    assert again.cached and again.cache_key == first.cache_key
    count, _ = selectors.study_rating_stamp(star_study.study)
    rate(
        star_study.study,
        star_study.items[1],
        Rater.objects.create(kind="human", pool="crowd", name="crowd-2"),
        at=T0 + dt.timedelta(days=2),
        scores={"correctness": 1, "explanation_correctness": 1},
    )
    assert selectors.study_rating_stamp(star_study.study)[0] == count + 1
    fresh = report_build(study=star_study.study, filters=ReportFilters())
    assert not fresh.cached and fresh.cache_key != first.cache_key


def test_the_report_command_takes_the_tie_rule(pair_study):
    import json

    from django.core.management import call_command
    from django.core.management.base import CommandError

    out = io.StringIO()
    call_command(
        "report", f"--study={pair_study.study.pk}", "--out=-", "--bt-ties=exclude", stdout=out
    )
    doc = json.loads(out.getvalue())
    assert doc["meta"]["options"]["bt_ties"] == "exclude"
    assert "judge_agreement" in doc["tables"]
    with pytest.raises(CommandError):
        call_command("report", "--study", str(pair_study.study.pk), "--bt-ties", "maybe")


@pytest.mark.parametrize(
    ("language", "title"),
    [("en", "with 95% bootstrap intervals"), ("zh-hans", "附 95% 自助法区间")],
)
@pytest.mark.database_independent  # the page's wording and escaping: the same on any database
def test_the_section_titles_show_one_percent_sign_in_each_language(
    organizer_client, star_study, language, title
):
    # Django doubles "%" in a template's _("...") literal for string formatting; a title passed
    # that way read "95%% bootstrap intervals" on the page.
    organizer_client.cookies["django_language"] = language
    url = reverse("ranking:report", args=[star_study.study.pk])
    html = organizer_client.get(url).content.decode()
    assert title in html
    assert "%%" not in html


@pytest.mark.database_independent  # the page's wording and escaping: the same on any database
def test_the_page_shows_the_kappa_and_alpha_intervals_the_api_returns(
    organizer_client, api, star_study
):
    # The page wrote every ci_low / ci_high as a whole number (the Elo rule): a kappa of 0.236
    # with the interval 0.21 to 0.26 read "0 to 0" next to the API's figures.
    study = star_study.study
    url = reverse("ranking:api-report-table", args=[study.pk, "chance_agreement"])
    rows = api.get(url).json()["rows"]
    assert any(r["ci_low"] is not None and 0 < abs(r["ci_low"]) < 1 for r in rows)
    page = organizer_client.get(reverse("ranking:report", args=[study.pk]))
    shown = agreement_tables(page.context["report"])["chance_agreement"]
    low, high = shown.columns.index("95% CI low"), shown.columns.index("95% CI high")
    for row, cells in zip(rows, shown.rows, strict=True):
        for key, i in (("ci_low", low), ("ci_high", high)):
            if row[key] is not None:
                assert float(cells[i]) == pytest.approx(row[key], abs=5e-3 * max(1, abs(row[key])))
