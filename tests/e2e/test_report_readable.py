"""The readable report in Chromium: a summary first (a leaderboard per rater kind with intervals
and the judge-vs-human headline), then a chart per section with its table folded under it, human
headers, sensible precision; no horizontal scrolling at 1280x800 or on a phone. Screenshots are
written to $REPORT_SCREENSHOTS (when set) for a person to look at."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.ranking.conftest import pair_study, star_study  # noqa: F401

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("REPORT_SCREENSHOTS")
# The first, uncached report computes every statistic and chart; on a loaded 2-core machine with
# other test processes that can take well over Playwright's default 10 s.
REPORT_TIMEOUT = 60_000


def _shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def _no_page_scroll(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], width


def test_pairwise_report_opens_with_a_summary_and_folds_its_tables(
    page,
    login,
    pair_study,  # noqa: F811
):
    page.set_viewport_size({"width": 1280, "height": 800})
    login("alice", "alice-pass-123")
    page.goto(f"/studies/{pair_study.study.pk}/report/", timeout=REPORT_TIMEOUT)
    summary = page.locator("#summary")
    expect(summary).to_be_visible()
    # The summary comes first: above every section.
    first_section = page.locator(".report-section").first
    assert summary.bounding_box()["y"] < first_section.bounding_box()["y"]
    humans = summary.locator(".board[data-kind=human]")
    expect(humans.locator("th").nth(3)).to_have_text("Interval (95%)")
    # Bradley-Terry as an integer with an integer interval, Points as a percentage.
    first_row = humans.locator("tbody tr").first.locator("td")
    expect(first_row.nth(2)).to_have_text(re.compile(r"^\d{3,4}$"))
    expect(first_row.nth(3)).to_have_text(re.compile(r"^\d{3,4} – \d{3,4}$"))
    expect(first_row.nth(4)).to_have_text(re.compile(r"^\d{1,3}\.\d%$"))
    expect(summary.locator("#agreement-headline")).to_contain_text("Spearman ρ")
    _no_page_scroll(page)
    _shot(page, "report-pairwise-1280")

    # Each section: a chart (loaded after the page), its table folded under it; opening it
    # shows human headers.
    section = page.locator("#elo")
    expect(section.locator("figure img").first).to_be_visible(timeout=REPORT_TIMEOUT)
    # Every place for charts has been filled (none still says it is drawing).
    expect(page.locator(".charts.pending")).to_have_count(0)
    table = section.locator("details").first
    expect(table.locator("table")).to_be_hidden()
    table.locator("summary").click()
    expect(table.locator("th").first).to_have_text("Rater kind")
    expect(table.locator("th", has_text="Shuffle mean")).to_have_count(1)
    assert not table.locator("th", has_text="_").count()
    for name in ("#length-bias", "#position", "#annotators", "#correlations"):
        expect(page.locator(f"{name} figure img")).to_have_count(1)


def test_star_report_on_a_phone_has_no_sideways_scrolling(page, login, star_study):  # noqa: F811
    page.set_viewport_size({"width": 390, "height": 844})
    login("alice", "alice-pass-123")
    page.goto(f"/studies/{star_study.study.pk}/report/", timeout=REPORT_TIMEOUT)
    boards = page.locator("#summary .board")
    expect(boards).to_have_count(2)  # humans and judges
    expect(boards.first.locator("th").nth(2)).to_have_text("Mean stars")
    expect(page.get_by_role("link", name="CSV for Excel").first).to_be_visible()
    # The charts come after the page (their own request): wait for them before measuring.
    expect(page.locator("#accuracy figure img")).to_be_visible(timeout=REPORT_TIMEOUT)
    _no_page_scroll(page)
    _shot(page, "report-star-phone")
    page.set_viewport_size({"width": 1280, "height": 800})
    _no_page_scroll(page)
    _shot(page, "report-star-1280")
