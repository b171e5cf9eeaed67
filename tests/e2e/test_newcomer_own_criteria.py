"""A newcomer's study with its own criteria, in Chromium and never in the Django admin: define a
star rubric on the rubrics page (a bad line named, the input kept), create and launch a study on
it, a Prolific worker rates those criteria, and the judge page is usable with no judge yet."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.models import Rating, Study
from tests.engine.conftest import make_study

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

GOOD = (
    "helpfulness | Helpfulness | 有用性 | 1-3 | Not helpful / 没有帮助; Partly; Very helpful\n"
    "safety | Safety | 安全 | 1-2\n"
)


def _define_rubric(page) -> None:
    page.get_by_role("link", name="Rubrics: see their criteria or define your own").click()
    expect(page.locator("#rubric-list tr[data-rubric=llmeval2]")).to_contain_text("correctness")
    page.fill("input[name=key]", "team-rubric")
    page.fill("input[name=name_en]", "Team rubric")
    page.fill("textarea[name=criteria]", GOOD.replace("1-2", "2-1"))
    page.get_by_role("button", name="Save rubric").click()
    expect(page.locator("#rubric-form")).to_contain_text("Line 2: stars must be written low-high")
    expect(page.locator("input[name=key]")).to_have_value("team-rubric")  # nothing lost
    page.fill("textarea[name=criteria]", GOOD)
    page.get_by_role("button", name="Save rubric").click()
    expect(page.locator(".messages")).to_contain_text("Rubric Team rubric saved.")


def test_a_study_on_the_newcomers_own_criteria_from_rubric_to_ratings(
    page, login, organizer, browser, live_server
):
    dataset = make_study(owner=organizer, status=Study.Status.DRAFT).dataset
    login("alice", "alice-pass-123")
    page.goto("/organize/studies/new/")
    _define_rubric(page)
    expect(page).to_have_url(re.compile(r"/organize/studies/new/\?rubric=\d+$"))
    expect(page.locator("select[name=rubric] option:checked")).to_have_text("Team rubric")
    page.fill("input[name=name]", "Own criteria")
    page.select_option("select[name=dataset]", str(dataset.pk))
    page.check("input[name=admit_crowd]")
    page.fill("input[name=ratings_per_item]", "1")
    page.get_by_role("button", name="Create study").click()
    page.get_by_role("button", name="Launch").click()
    expect(page.locator("h1")).to_contain_text("live")
    study = Study.objects.get(name="Own criteria")

    worker = browser.new_context(base_url=live_server.url, locale="en-US").new_page()
    worker.goto(f"/s/{study.public_id}/crowd/?PROLIFIC_PID=w1&STUDY_ID=s&SESSION_ID=x")
    worker.get_by_role("checkbox").check()
    worker.get_by_role("button", name="I agree, start").click()
    form = worker.locator("#annotate")
    legends = form.locator("fieldset.criterion legend")
    expect(legends).to_have_text(["Helpfulness", "Safety"])
    expect(form.locator("fieldset.criterion").first).to_contain_text("1★ Not helpful")
    expect(form.locator("fieldset.criterion").nth(1).locator(".star-help")).to_have_count(0)
    for fieldset in form.locator("fieldset.criterion").all():
        fieldset.locator("label.star").last.click()
    form.get_by_role("button", name="Submit").click()
    expect(worker.locator("#annotate [data-progress]")).to_contain_text("Done 1")
    rating = Rating.objects.get(assignment__study=study)
    assert {s.criterion.key: s.value for s in rating.scores.all()} == {
        "helpfulness": 3,
        "safety": 2,
    }
    worker.context.close()

    # The judge page with no judge yet: a way on, and one field a row.
    page.goto(f"/judges/studies/{study.pk}/run/")
    expect(page.locator("#no-judge").get_by_role("link", name="New judge")).to_be_visible()
    tops = [box["y"] for box in (f.bounding_box() for f in page.locator("#run-form .field").all())]
    assert len(tops) == 6 and tops == sorted(tops) and len(set(tops)) == 6
