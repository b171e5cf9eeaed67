"""The annotator's flows in a real browser (Chromium): keyboard-only star scoring, a crowd worker
from Prolific, pairwise with the mouse, previous and skip, inert XSS payloads."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from annotation.models import Assignment, Rater, Rating
from tests.engine.conftest import make_study

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

IMG = Path(__file__).resolve().parents[2] / "docs" / "img"


def screenshot(page, name: str) -> None:
    """The README's screenshots: written when missing or when UPDATE_SCREENSHOTS=1, so a test
    run does not leave the tree modified."""
    path = IMG / name
    if path.exists() and os.environ.get("UPDATE_SCREENSHOTS") != "1":
        return
    IMG.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=False)


LONG_ANSWER = (
    """Here is **an answer** with structure.

1. First point, with `inline code`.
2. Second point.

| Model | Score |
|-------|------:|
| one   |   1.0 |

```python
def f(x):
    return x * 2
```
"""
    + "\n\nA long paragraph that keeps going. " * 30
)


def onsite_annotator(username="carol", password="carol-pass-123") -> User:
    user = User.objects.create_user(username, password=password)
    Rater.objects.create(kind="human", pool="onsite", user=user)
    return user


def test_onsite_annotator_finishes_star_items_with_the_keyboard_only(page, login, organizer):
    study = make_study(
        owner=organizer,
        n_questions=1,
        n_llms=3,
        ratings_per_item=1,
        text=LONG_ANSWER,
        hint_policy="shown",
    )
    onsite_annotator()
    login("carol", "carol-pass-123")
    page.goto(f"/s/{study.public_id}/next/")
    for done in range(3):
        form = page.locator("#annotate")
        expect(form.locator("[data-progress]")).to_contain_text(f"Done {done}")
        submit = form.locator("[data-action=submit]")
        expect(submit).to_be_disabled()
        criteria = form.locator("fieldset.criterion")
        expect(criteria).to_have_count(4)  # llmeval2, subjective questions
        expect(page.locator("#annotate[data-ready]")).to_be_attached()  # the keys work now
        if done == 0:
            expect(form.locator(".reference")).to_contain_text("Reference answer")
            page.keyboard.press("4")
            page.keyboard.press("3")
            screenshot(page, "star.png")
            page.keyboard.press("2")
            expect(submit).to_be_disabled()
            page.keyboard.press("3")
        else:
            for key in ("5", "2", "2", "1"):
                page.keyboard.press(key)
        expect(submit).to_be_enabled()
        page.keyboard.press("Enter")
        if done < 2:
            expect(page.locator("#annotate [data-progress]")).to_contain_text(f"Done {done + 1}")
    expect(page.locator("#done")).to_contain_text("Thank you")
    ratings = Rating.objects.filter(rater__user__username="carol").order_by("id")
    assert ratings.count() == 3
    assert ratings[0].scores_dict() == {
        "accuracy": 4,
        "informativeness": 3,
        "fluency": 2,
        "logicality": 3,
    }
    assert all(a.active_ms is not None for a in Assignment.objects.filter(status="submitted"))


def test_crowd_worker_arrives_from_prolific_and_leaves_with_the_completion_code(page, organizer):
    study = make_study(
        owner=organizer,
        mode="pairwise",
        admit_onsite=False,
        admit_crowd=True,
        quota_crowd=2,
        completion_code="CC-7781",
    )
    page.goto(f"/s/{study.public_id}/crowd/?PROLIFIC_PID=5f1a2b&STUDY_ID=st1&SESSION_ID=se1")
    page.get_by_role("checkbox").check()  # the consent page comes first (issue #13 item 2)
    page.get_by_role("button", name="I agree, start").click()
    for i in range(2):
        expect(page.locator("#annotate [data-progress]")).to_contain_text(f"Done {i} / 2")
        expect(page.locator("#annotate[data-ready]")).to_be_attached()  # the keys work now
        page.keyboard.press("2")  # tie
        page.keyboard.press("Enter")
    expect(page.locator("[data-completion-code]")).to_have_text("CC-7781")
    assert Rater.objects.get(platform="prolific").external_id == "5f1a2b"
    assert Rating.objects.filter(choice="tie").count() == 2


def test_pairwise_rating_with_the_mouse(page, login, organizer):
    study = make_study(owner=organizer, mode="pairwise", n_questions=2, text=LONG_ANSWER)
    onsite_annotator()
    login("carol", "carol-pass-123")
    page.goto(f"/s/{study.public_id}/")
    page.get_by_role("link", name="Start").click()
    form = page.locator("#annotate")
    expect(form.locator("[data-answer=left]")).to_be_visible()
    expect(form.locator("[data-answer=right]")).to_be_visible()
    submit = form.get_by_role("button", name="Submit")
    expect(submit).to_be_disabled()
    screenshot(page, "pairwise.png")
    first_url = page.url
    form.get_by_text("Right is better").click()
    expect(submit).to_be_enabled()
    submit.click()
    expect(page).not_to_have_url(first_url)
    a = Assignment.objects.get(public_id=first_url.rstrip("/").split("/")[-1])
    assert Rating.objects.get(assignment=a).choice == ("B" if a.left_is_a else "A")


def test_previous_and_skip(page, login, organizer):
    study = make_study(owner=organizer, mode="pairwise", n_questions=2)
    onsite_annotator()
    login("carol", "carol-pass-123")
    page.goto(f"/s/{study.public_id}/next/")
    first = page.url
    page.get_by_text("Left is better").click()
    page.get_by_role("button", name="Submit").click()
    expect(page).not_to_have_url(first)
    second = page.url
    page.get_by_role("button", name="Skip").click()
    expect(page).not_to_have_url(second)
    skipped = Assignment.objects.get(public_id=second.rstrip("/").split("/")[-1])
    assert skipped.status == "skipped"
    page.get_by_role("link", name="Previous").click()
    expect(page).to_have_url(re.compile(re.escape(first) + "$"))
    expect(page.locator(".editing")).to_be_visible()
    expect(page.locator("input[name=choice][value=left]")).to_be_checked()
    expect(page.locator("#annotate[data-ready]")).to_be_attached()  # the keys work now
    page.keyboard.press("3")  # both bad
    page.keyboard.press("Enter")
    expect(page).not_to_have_url(first)
    a = Assignment.objects.get(public_id=first.rstrip("/").split("/")[-1])
    assert Rating.objects.get(assignment=a).choice == "both_bad"
    assert Rating.objects.count() == 1


def test_scripts_and_raw_html_in_answers_render_inert(page, login, organizer):
    payload = (
        "<script>alert('xss')</script>\n\n<img src=x onerror=\"alert('img')\">\n\n"
        "[click](javascript:alert('link'))\n\n<b onmouseover=alert(1)>bold</b>"
    )
    study = make_study(owner=organizer, n_questions=1, n_llms=1, text=payload)
    onsite_annotator()
    login("carol", "carol-pass-123")
    page.goto(f"/s/{study.public_id}/next/")
    answer = page.locator("[data-answer=single]")
    expect(answer).to_contain_text("<script>alert('xss')</script>")
    expect(answer).to_contain_text("<img src=x onerror=")
    assert answer.locator("script, img, b").count() == 0
    assert answer.locator("a[href^=javascript]").count() == 0
    page.locator("[data-answer=single]").hover()
    page.keyboard.press("1")
    assert page.dialogs == []
    assert page.evaluate("typeof window.__xss") == "undefined"


def test_after_the_browsers_back_button_the_restored_item_still_submits(page, login, organizer):
    """htmx keeps a copy of the page for Back, taken while the submit was in flight: the copy
    came back marked busy, and every later click on Submit or key press did nothing."""
    study = make_study(owner=organizer, mode="pairwise", n_questions=2)
    onsite_annotator()
    login("carol", "carol-pass-123")
    page.goto(f"/s/{study.public_id}/next/")
    first = page.url
    page.get_by_text("Left is better").click()
    page.get_by_role("button", name="Submit").click()
    expect(page).not_to_have_url(first)
    page.go_back()
    expect(page).to_have_url(first)
    expect(page.locator("#annotate[data-ready]")).to_be_attached()
    page.get_by_text("Right is better").click()
    page.get_by_role("button", name="Submit").click()
    expect(page).not_to_have_url(first)
    expect(page.locator("#annotate [data-progress]")).to_contain_text("Done 1")
    assert Rating.objects.count() == 1


def test_after_the_browsers_back_button_a_digit_gives_one_star_once(page, login, organizer):
    """The restored page ran the keyboard script a second time: one key press then rated two
    criteria (the second listener found the focus moved on by the first)."""
    study = make_study(owner=organizer, n_questions=1, n_llms=2, ratings_per_item=1)
    onsite_annotator()
    login("carol", "carol-pass-123")
    page.goto(f"/s/{study.public_id}/next/")
    first = page.url
    expect(page.locator("#annotate[data-ready]")).to_be_attached()
    for key in "3222":
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    expect(page).not_to_have_url(first)
    page.go_back()
    expect(page).to_have_url(first)
    expect(page.locator("#annotate[data-ready]")).to_be_attached()
    page.keyboard.press("1")
    criteria = page.locator("#annotate fieldset.criterion")
    expect(criteria.nth(0).locator("input:checked")).to_have_value("1")
    expect(criteria.nth(1).locator("input:checked")).to_have_count(0)
