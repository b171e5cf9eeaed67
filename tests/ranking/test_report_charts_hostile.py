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
