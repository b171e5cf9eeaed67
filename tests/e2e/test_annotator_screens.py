"""The annotator's screens in Chromium: side-by-side answers with long code lines on a laptop and a
phone, keyboard-only rating (arrows on a focused star, 10 on a 1-10 scale), pausing mid-item,
Chinese Markdown and `lang`, and axe-core's WCAG 2.2 AA check of every annotator page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, Rating, Rubric, Study
from annotation.services import study_create, study_set_status
from tests.e2e.axe import axe_violations
from tests.engine.conftest import make_dataset, make_study

from .test_annotator_flows import onsite_annotator

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
CODE_LINE = "values = [" + ", ".join(f"'item-{i:04d}'" for i in range(200)) + "]"
CODE_ANSWER = f"The fix:\n\n```python\n{CODE_LINE}\nprint(values)\n```\n\nThat is all."
assert len(CODE_LINE) > 2000


@pytest.fixture
def carol(page, login):
    onsite_annotator()
    login("carol", "carol-pass-123")
    return page


def _page_width(page) -> tuple[int, int]:
    return page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")


def _assert_inside_the_window(page, selector: str) -> list[dict]:
    width = page.evaluate("window.innerWidth")
    boxes = []
    for el in page.locator(selector).all():
        box = el.bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0, selector
        assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, (selector, box, width)
        boxes.append(box)
    return boxes


def _open_item(page, study) -> str:
    """Open the study's next item and wait until annotate.js has marked it ready (keys pressed
    before that are lost); the item's URL."""
    page.goto(f"/s/{study.public_id}/next/")
    expect(page.locator("#annotate[data-ready]")).to_be_visible()
    return page.url


def _alignbench_study(owner, text: str) -> Study:
    dataset = make_dataset(1, 1, text=text)
    return study_create(
        name="ten-point",
        dataset=dataset,
        mode="star",
        rubric=Rubric.objects.get(key="alignbench"),
        owner=owner,
        repeat_rate=0.0,
    )


# -- 1. Side by side on code ---------------------------------------------------------------


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["1280x800", "390x844"])
def test_both_answers_stay_visible_and_scroll_inside_themselves_with_long_code(
    carol, organizer, viewport
):
    page = carol
    page.set_viewport_size(viewport)
    study = make_study(owner=organizer, mode="pairwise", n_questions=1, text=CODE_ANSWER)
    page.goto(f"/s/{study.public_id}/next/")
    expect(page.locator("[data-answer=right] pre")).to_be_visible()
    scroll_width, window_width = _page_width(page)
    assert scroll_width <= window_width
    left, right = _assert_inside_the_window(page, ".answer-card")
    if viewport is LAPTOP:
        assert abs(left["width"] - right["width"]) <= 1  # equal panes
        assert left["y"] == right["y"] and left["y"] < viewport["height"]
        assert right["x"] > left["x"] + left["width"]
    else:
        assert right["y"] >= left["y"] + left["height"]  # stacked
    for side in ("left", "right"):
        pre = page.locator(f"[data-answer={side}] pre")
        # The code line scrolls sideways inside its own box.
        assert pre.evaluate("el => el.scrollWidth > el.clientWidth + 1000")
        _assert_inside_the_window(page, f"[data-answer={side}] pre")


@pytest.mark.parametrize("mode", ["star", "pairwise"])
def test_no_annotator_page_is_wider_than_a_phone(carol, organizer, mode):
    page = carol
    page.set_viewport_size(PHONE)
    study = make_study(owner=organizer, mode=mode, n_questions=1, text=CODE_ANSWER)
    for path in (f"/s/{study.public_id}/", f"/s/{study.public_id}/next/", "/annotate/"):
        page.goto(path)
        scroll_width, window_width = _page_width(page)
        assert scroll_width <= window_width, (path, scroll_width)
    if mode == "star":
        page.goto(f"/s/{study.public_id}/next/")
        for star in page.locator("label.star").all()[:5]:
            box = star.bounding_box()
            assert box["width"] >= 44 and box["height"] >= 44, box


# -- 2. Keyboard ---------------------------------------------------------------------------


def test_arrow_keys_on_a_focused_star_move_the_star_and_never_leave_the_item(carol, organizer):
    page = carol
    study = make_study(owner=organizer, n_questions=2, n_llms=1, ratings_per_item=1)
    item_url = _open_item(page, study)
    page.keyboard.press("2")  # first criterion: 2 stars; the focus moves to the second
    second = page.locator("fieldset.criterion").nth(1)
    expect(second.locator("input[type=radio]").first).to_be_focused()
    page.keyboard.press("ArrowRight")
    expect(second.locator("input[value='2']")).to_be_checked()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(second.locator("input[value='1']")).to_be_checked()
    assert page.url == item_url  # ArrowLeft did not go to the previous item
    # A digit on the focused criterion rates it and moves on.
    page.keyboard.press("3")
    expect(second.locator("input[value='3']")).to_be_checked()
    for key in ("1", "2"):
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    expect(page).not_to_have_url(item_url)
    first = Assignment.objects.get(public_id=item_url.rstrip("/").split("/")[-1])
    assert first.rating.scores_dict() == {
        "accuracy": 2,
        "informativeness": 3,
        "fluency": 1,
        "logicality": 2,
    }


def test_zero_gives_ten_on_a_one_to_ten_scale(carol, organizer):
    page = carol
    study = _alignbench_study(organizer, "答案是 42。")
    study_set_status(study=study, status=Study.Status.LIVE)
    page.goto(f"/s/{study.public_id}/next/")
    expect(page.locator(".shortcuts")).to_contain_text("0 gives 10")
    page.keyboard.press("0")
    expect(page.locator("fieldset.criterion input[value='10']")).to_be_checked()
    page.keyboard.press("Enter")
    expect(page.locator("#done")).to_be_visible()
    assert Rating.objects.get().scores_dict() == {"overall": 10}


def test_a_scale_from_zero_shows_0_as_a_digit_and_lights_no_star_for_it(carol, organizer):
    """0 on a 0-3 criterion was drawn lit as one star (and lit before anything was chosen)."""
    from annotation.models import Criterion

    page = carol
    rubric = Rubric.objects.create(key="from-zero", name_en="From zero", mode="star")
    Criterion.objects.create(rubric=rubric, key="done", label_en="Done", min_score=0, max_score=3)
    study = make_study(owner=organizer, rubric="from-zero", n_questions=1, n_llms=1)
    _open_item(page, study)
    stars = page.locator("fieldset.criterion label.star")
    expect(stars).to_have_count(4)
    expect(stars.first.locator("span[aria-hidden]")).to_have_text("0")
    expect(page.locator("label.star.on")).to_have_count(0)
    page.keyboard.press("2")
    expect(page.locator("label.star.on")).to_have_count(2)
    expect(stars.first).not_to_have_class(re.compile(r"\bon\b"))
    page.keyboard.press("0")
    expect(page.locator("fieldset.criterion input[value='0']")).to_be_checked()
    expect(page.locator("label.star.on")).to_have_count(0)
    page.keyboard.press("Enter")
    expect(page.locator("#done")).to_be_visible()
    assert Rating.objects.get().scores_dict() == {"done": 0}


def test_star_and_pairwise_items_are_completed_with_the_keyboard_alone(carol, organizer):
    page = carol
    star = make_study(owner=organizer, n_questions=1, n_llms=1, ratings_per_item=1)
    page.goto(f"/s/{star.public_id}/")
    page.get_by_role("link", name="Start").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#annotate[data-ready]")).to_be_visible()
    for key in ("3", "2", "1", "3"):
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    expect(page.locator("#done")).to_be_visible()
    pairwise = make_study(owner=organizer, mode="pairwise", n_questions=1, n_llms=2)
    page.goto(f"/s/{pairwise.public_id}/next/")
    item_url = page.url
    page.keyboard.press("1")  # left is better, focused
    page.keyboard.press("ArrowRight")  # the focused choice moves to "tie"
    expect(page.locator("input[name=choice][value=tie]")).to_be_checked()
    assert page.url == item_url
    page.keyboard.press("Enter")
    expect(page.locator("#done")).to_be_visible()
    assert Rating.objects.get(assignment__study=pairwise).choice == "tie"
    assert Rating.objects.get(assignment__study=star).scores_dict()["accuracy"] == 3


# -- 3. Pausing mid-item -------------------------------------------------------------------


def test_a_study_paused_mid_item_sends_the_annotator_to_the_study_page_and_keeps_the_stars(
    carol, organizer
):
    page = carol
    study = make_study(owner=organizer, n_questions=2, n_llms=1)
    item_url = _open_item(page, study)
    for key in ("3", "2", "1", "2"):
        page.keyboard.press(key)
    study_set_status(study=study, status=Study.Status.PAUSED)
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(rf"/s/{study.public_id}/$"))
    expect(page.locator(".messages")).to_contain_text("kept as a draft")
    expect(page.locator("header.topbar")).to_have_count(1)  # one page, not a page in a page
    assert not Rating.objects.exists()
    study_set_status(study=study, status=Study.Status.LIVE)
    page.reload()
    page.locator("[data-start]").click()  # "Start": nothing was recorded yet
    expect(page).to_have_url(item_url)
    expect(page.locator("#annotate[data-ready]")).to_be_visible()
    checked = page.locator("fieldset.criterion input:checked")
    expect(checked).to_have_count(4)
    assert [c.get_attribute("value") for c in checked.all()] == ["3", "2", "1", "2"]
    page.keyboard.press("Enter")
    expect(page).not_to_have_url(item_url)
    assert Rating.objects.count() == 1


@pytest.fixture
def right_chosen(carol, organizer) -> str:
    """Carol on a pairwise item with "right is better" (key 4) chosen, not yet sent; its URL."""
    item_url = _open_item(carol, make_study(owner=organizer, mode="pairwise", n_questions=2))
    carol.keyboard.press("4")
    return item_url


def test_a_lost_connection_keeps_the_rating_on_the_page_and_says_so(carol, right_chosen):
    page, item_url = carol, right_chosen
    page.context.set_offline(True)
    page.keyboard.press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("could not be reached")
    expect(page.locator("input[name=choice][value=right]")).to_be_checked()
    assert page.url == item_url and not Rating.objects.exists()
    page.context.set_offline(False)
    page.keyboard.press("Enter")
    expect(page).not_to_have_url(item_url)
    assert Rating.objects.count() == 1


def test_a_refused_rating_is_swapped_in_with_its_message_and_nothing_is_stored(carol, right_chosen):
    page, item_url = carol, right_chosen
    # A tampered form (as a hostile client would send): the server answers 422 with the item.
    page.evaluate(
        "() => { document.querySelector('input[name=choice]:checked').value = 'sideways'; }"
    )
    page.keyboard.press("Enter")
    # The server's own message, swapped in (not the generic "request failed" notice).
    expect(page.locator("#annotate")).to_contain_text("Choose one of:")
    assert page.url == item_url and not Rating.objects.exists()


# -- 5. Chinese Markdown and lang ----------------------------------------------------------


def test_chinese_bold_renders_and_each_text_carries_its_language(carol, organizer):
    page = carol
    study = make_study(
        owner=organizer, mode="pairwise", n_questions=1, n_llms=2, text="**答案：**四十二。"
    )
    page.goto(f"/s/{study.public_id}/next/")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    left = page.locator("[data-answer=left]")
    expect(left.locator("strong")).to_have_text("答案：")
    expect(left).not_to_contain_text("**")
    expect(left).to_have_attribute("lang", "zh")
    expect(page.locator(".question .md")).to_have_attribute("lang", "en")
    page.select_option("select[name=language]", "zh-hans")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.locator(".question .md")).to_have_attribute("lang", "en")


# -- 6. Accessibility ----------------------------------------------------------------------


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_annotator_pages_have_no_serious_accessibility_violations(carol, organizer, viewport):
    page = carol
    page.set_viewport_size(viewport)
    star = make_study(owner=organizer, n_questions=1, n_llms=1, text=CODE_ANSWER, admit_public=True)
    pairwise = make_study(owner=organizer, mode="pairwise", n_questions=1, text=CODE_ANSWER)
    for path in (
        f"/s/{star.public_id}/",
        f"/s/{star.public_id}/join/",
        f"/s/{star.public_id}/done/",
        "/annotate/",
        "/",
        "/accounts/login/",
        f"/s/{star.public_id}/next/",
        f"/s/{pairwise.public_id}/next/",
    ):
        page.goto(path)
        assert axe_violations(page) == [], path
        scroll_width, window_width = _page_width(page)
        assert scroll_width <= window_width, (path, scroll_width)
    page.keyboard.press("2")  # a choice made: the checked state passes too
    assert axe_violations(page) == []
    # Screen readers hear "Left is better", not "1 Left is better".
    expect(page.get_by_role("radio", name="Left is better", exact=True)).to_have_count(1)
    expect(page.get_by_role("progressbar", name="Your progress")).to_have_count(1)


CONTRAST = r"""(el) => {
  const rgb = (s) => s.match(/[0-9.]+/g).slice(0, 3).map(Number);
  const lum = (c) => { const [r, g, b] = c.map((v) => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  let bg = el, color = "rgba(0, 0, 0, 0)";
  while (bg && /rgba\(0, 0, 0, 0\)|transparent/.test(color)) {
    color = getComputedStyle(bg).backgroundColor; bg = bg.parentElement; }
  const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(rgb(color))];
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}"""


def test_empty_and_given_stars_keep_three_to_one_contrast(carol, organizer):
    page = carol
    study = make_study(owner=organizer, n_questions=1, n_llms=1)
    page.goto(f"/s/{study.public_id}/next/")
    page.keyboard.press("2")  # the first row has given and empty stars, the second is current
    rows = page.locator("fieldset.criterion")
    for row in (rows.nth(0), rows.nth(1)):
        for star in row.locator("label.star").all():
            assert star.evaluate(CONTRAST) >= 3, star.get_attribute("class")
    assert rows.nth(0).locator("label.star.on").count() == 2
