"""The report page in a real browser (Chromium): filters swap the report body in place with htmx,
and the same form works with JavaScript switched off."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

# The rated study comes from the ranking suite; the browser fixtures from this folder's conftest
# (one Playwright instance per test process: a second one in the same thread would fail).
from tests.ranking.conftest import star_study  # noqa: F401

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# An uncached report computes every statistic and chart: on a loaded 2-core machine that can take
# longer than Playwright's default timeouts.
REPORT_TIMEOUT = 60_000


def test_filtering_the_report_swaps_the_body_and_keeps_the_url(page, login, star_study):  # noqa: F811
    login("alice", "alice-pass-123")
    page.goto(f"/studies/{star_study.study.pk}/report/", timeout=REPORT_TIMEOUT)
    expect(page.locator("#summary")).to_contain_text("4 raters")
    # A marker on the window survives an htmx swap but not a full page load.
    page.evaluate("window.__sameDocument = true")
    page.locator(".filters-box > summary").click()  # the filters are folded under the title
    page.check("input[name=pool][value=judge]")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#summary")).to_contain_text(
        re.compile(r"\b1 rater(?!s)"), timeout=REPORT_TIMEOUT
    )
    expect(page).to_have_url(re.compile(r"pool=judge"))
    assert page.evaluate("window.__sameDocument === true")
    # The download links carry the filter.
    href = page.locator("#report-downloads").get_by_role("link", name="XLSX").get_attribute("href")
    assert "pool=judge" in href


def test_the_filter_form_works_without_javascript(browser, live_server, star_study):  # noqa: F811
    from django.test import Client

    client = Client()
    client.force_login(star_study.study.owner)
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    tab = context.new_page()
    tab.set_default_timeout(REPORT_TIMEOUT)
    tab.goto(f"/studies/{star_study.study.pk}/report/")
    tab.locator(".filters-box > summary").click()
    tab.check("input[name=pool][value=onsite]")
    tab.get_by_role("button", name="Apply").click()
    expect(tab).to_have_url(re.compile(r"pool=onsite"))
    expect(tab.locator("#summary")).to_contain_text(
        re.compile(r"\b1 rater(?!s)"), timeout=REPORT_TIMEOUT
    )
    context.close()
