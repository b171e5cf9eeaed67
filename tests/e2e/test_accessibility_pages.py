"""The organizer's pages on a phone and under axe-core: the report and the study page fit a 390 px
screen (the study page was 710 px wide) and have no serious or critical WCAG 2.2 AA violation."""

from __future__ import annotations

import pytest

from tests.e2e.axe import axe_violations

# The rated study comes from the ranking suite, as in test_report_browser.py.
from tests.ranking.conftest import star_study  # noqa: F401

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}


@pytest.mark.parametrize("viewport", [None, PHONE], ids=["laptop", "phone"])
def test_report_and_study_pages_fit_a_phone_and_pass_axe(page, login, star_study, viewport):  # noqa: F811
    if viewport:
        page.set_viewport_size(viewport)
    login("alice", "alice-pass-123")
    pk = star_study.study.pk
    paths = (
        f"/studies/{pk}/report/",
        f"/organize/studies/{pk}/",
        "/organize/studies/",
        "/organize/rubrics/",
        f"/judges/studies/{pk}/run/",
        f"/organize/studies/{pk}/quality/",
        "/reports/statistics/",
        "/organize/api-token/",
    )
    for path in paths:
        page.goto(path)
        width = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], (path, width)
        assert axe_violations(page) == [], path
