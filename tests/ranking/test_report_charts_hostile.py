"""Hostile requests to the report's charts (ranking:report-charts): a stale snapshot's charts
never outlive it, odd filters are a 400, the fragment and the page never mix."""

from __future__ import annotations

import pytest
from django.urls import reverse

from ranking import chart_groups, services
from ranking.services import StudyReport

from .conftest import new_rating, page_charts
from .test_report_refresh import large, queued  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def _drawn_afresh(report) -> dict[str, str | None]:
    """The report's charts drawn from its tables, without any cache."""
    return chart_groups.svgs(StudyReport(report.study, report.filters, report.tables))


def test_charts_of_a_stale_snapshot_are_not_kept_for_the_fresh_one(
    organizer_client, star_study, large, queued  # noqa: F811
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
    assert page.context["report"].meta["n_star_ratings"] == (
        everything.context["report"].meta["n_star_ratings"]
    )
    assert page_charts(organizer_client, star_study.study, last_day) == page_charts(
        organizer_client, star_study.study
    )
