"""Hostile requests to the report's charts (ranking:report-charts): a stale snapshot's charts
never outlive it, odd filters are a 400, the fragment and the page never mix."""

from __future__ import annotations

import base64

import pytest
from django.urls import reverse

from annotation.models import LLM
from ranking import chart_groups, services
from ranking.services import StudyReport

from . import test_report_refresh
from .conftest import new_rating, page_charts

# database_independent: pages, permissions and cache keys: the same on any database.
pytestmark = [pytest.mark.django_db, pytest.mark.database_independent]
queued = test_report_refresh.queued  # fixtures: the task queue recorded, every study large
large = test_report_refresh.large


def _drawn_afresh(report) -> dict[str, str | None]:
    """The report's charts drawn from its tables, without any cache."""
    return chart_groups.svgs(StudyReport(report.study, report.filters, report.tables))


def test_charts_of_a_stale_snapshot_are_not_kept_for_the_fresh_one(
    organizer_client, star_study, large, queued
):
    study = star_study.study
    before = page_charts(organizer_client, study)
    new_rating(star_study)
    stale = services.report_build(study=study, stale_ok=True)
    assert stale.stale
    assert page_charts(organizer_client, study) == before  # the old snapshot's charts, at once
    from ranking.tasks import report_refresh

    report_refresh.call(*queued[0][1])
    fresh = services.report_build(study=study, stale_ok=True)
    assert fresh.cached and not fresh.stale
    expected = _drawn_afresh(fresh)
    assert expected != _drawn_afresh(stale)  # the new rating shows in some chart
    assert chart_groups.svgs(fresh) == expected
    assert page_charts(organizer_client, study) != before


def test_the_last_day_there_is_as_the_end_date_bounds_nothing(organizer_client, star_study):
    """end=9999-12-31 was a 500 (the next midnight is past datetime's range) on the report,
    its charts, its downloads and the API; it is the same as no end date."""
    pk = star_study.study.pk
    last_day = {"end": "9999-12-31"}
    for name, args in [
        ("ranking:report-charts", [pk]),
        ("ranking:report", [pk]),
        ("ranking:report-download", [pk, "json"]),
        ("ranking:api-report", [pk]),
    ]:
        for headers in ({}, {"HX-Request": "true"}):
            response = organizer_client.get(reverse(name, args=args), last_day, headers=headers)
            assert response.status_code == 200, (name, headers)
    page = organizer_client.get(reverse("ranking:report", args=[pk]), last_day)
    everything = organizer_client.get(reverse("ranking:report", args=[pk]))
    assert (
        page.context["report"].meta["n_star_ratings"]
        == (everything.context["report"].meta["n_star_ratings"])
    )
    assert page_charts(organizer_client, star_study.study, last_day) == page_charts(
        organizer_client, star_study.study
    )


def test_names_are_drawn_as_text_never_as_mathtext(organizer_client, star_study):
    """A model named "$\\frac$" made the charts a 500 (matplotlib parsed it as mathtext); a name
    with two dollar signs was drawn as a formula."""
    names = ["$\\frac$", "a $5 and $10 b"]
    for llm, name in zip(LLM.objects.order_by("pk"), names, strict=False):
        llm.name = name
        llm.save(update_fields=["name"])
    charts = page_charts(organizer_client, star_study.study)
    svgs = [
        base64.b64decode(src.split(",", 1)[1]).decode()
        for figures in charts.values()
        for src, _alt in figures
    ]
    for name in names:
        assert any(name in svg for svg in svgs), name
