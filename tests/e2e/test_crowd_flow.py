"""A Prolific worker's whole visit in Chromium: the link, the instructions and consent, the
items with the guidelines one click away, and a completion code only once the work is done."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, Rater, Rating
from tests.engine.conftest import make_study

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

INSTRUCTIONS = "Rate **accuracy** first, then fluency. Ignore the length of the answer."


def test_crowd_worker_reads_consents_rates_and_leaves_with_the_code(page, organizer):
    study = make_study(
        owner=organizer, admit_onsite=False, admit_crowd=True, quota_crowd=2,
        instructions=INSTRUCTIONS, completion_code="CC-2468", no_more_work_code="NMW-1357",
    )  # fmt: skip
    page.goto(f"/s/{study.public_id}/crowd/?PROLIFIC_PID=6a7b8c&STUDY_ID=st&SESSION_ID=se")
    start = page.locator("#crowd-start")
    expect(start.locator("strong", has_text="accuracy")).to_be_visible()
    assert not Assignment.objects.exists()  # nothing reserved before consent

    # Without the box ticked the browser itself refuses; with it, the first item opens.
    start.get_by_role("button", name="I agree, start").click()
    expect(page).to_have_url(re.compile(r"/crowd/"))
    assert not Assignment.objects.exists()
    start.get_by_role("checkbox").check()
    start.get_by_role("button", name="I agree, start").click()
    expect(page).to_have_url(re.compile(r"/a/[0-9a-f-]{36}/$"))

    # The guidelines are one click away on the item page.
    guidelines = page.locator("details.guidelines")
    expect(guidelines.locator("strong", has_text="accuracy")).not_to_be_visible()
    guidelines.locator("summary").click()
    expect(guidelines.locator("strong", has_text="accuracy")).to_be_visible()

    # Halfway, the end page opened by hand shows no code and says what is left.
    item_url = page.url
    page.goto(f"/s/{study.public_id}/done/")
    expect(page.locator("#done [data-left]")).to_contain_text("2 of 2 ratings are still to do")
    expect(page.locator("[data-completion-code]")).to_have_count(0)
    page.get_by_role("link", name="Back to your open item").click()
    expect(page).to_have_url(item_url)

    for i in range(2):
        form = page.locator("#annotate")
        expect(form.locator("[data-progress]")).to_contain_text(f"Done {i} / 2")
        for fieldset in form.locator("fieldset.criterion").all():
            fieldset.locator("label.star").nth(1).click()
        form.get_by_role("button", name="Submit").click()
    expect(page.locator("[data-completion-code]")).to_have_text("CC-2468")
    expect(page.locator("body")).not_to_contain_text("NMW-1357")
    rater = Rater.objects.get(external_id="6a7b8c")
    assert Rating.objects.filter(rater=rater).count() == 2
    assert study.public_id in rater.meta["consent"]


def test_an_item_held_past_the_maximum_sends_the_worker_on_with_a_note(page, organizer):
    """lease.js follows the heartbeat's refusal (ANNOTATION_MAX_HOLD) to the next item, where
    the note says why. The browser's clock is moved forward, the item's serving time back."""
    study = make_study(owner=organizer, admit_onsite=False, admit_crowd=True, n_questions=2)
    page.clock.install()
    page.goto(f"/s/{study.public_id}/crowd/?PROLIFIC_PID=held1&STUDY_ID=st&SESSION_ID=se")
    page.locator("#crowd-start").get_by_role("checkbox").check()
    page.locator("#crowd-start").get_by_role("button", name="I agree, start").click()
    expect(page).to_have_url(re.compile(r"/a/[0-9a-f-]{36}/$"))
    first = page.url
    held = Assignment.objects.get(rater__external_id="held1")
    Assignment.objects.filter(pk=held.pk).update(served_at=held.served_at - timedelta(minutes=61))
    page.mouse.move(10, 10)
    page.clock.fast_forward("01:05")  # the heartbeat is due
    expect(page.locator("body")).to_contain_text("went back to the pool for other annotators")
    assert page.url != first
    held.refresh_from_db()
    assert held.status == "expired"
    assert (
        Assignment.objects.get(rater__external_id="held1", status="served").item_id != held.item_id
    )
