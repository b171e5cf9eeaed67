"""The htmx item fragment is written out by hand (annotation/views/item_html.py): it must be
byte for byte what the template's `item` partial renders, for every shape of the screen, and
untrusted text (questions, answers, guidelines, messages) must come out escaped or sanitised."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib import messages
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.cache import SessionStore
from django.template.loader import render_to_string
from django.test import RequestFactory
from django.utils import translation
from django_htmx.middleware import HtmxDetails

from annotation import engine
from annotation.models import Assignment
from annotation.views.annotator_item import item_context
from annotation.views.item_html import item_fragment

from .conftest import answer, make_rater, make_study

# database_independent: the item page's HTML: the same on any database (the engine's statements are checked on PostgreSQL in test_hot_path and test_query_budget).
pytestmark = pytest.mark.database_independent

HOSTILE = '<script>alert("x")</script> & \'quoted\' <b onmouseover="x()">bold</b>'
_TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([A-Za-z0-9]+)"')


def _request(*notes: str):
    # What the middleware would have added: a session, htmx's details, the message store.
    request: Any = RequestFactory().post("/a/x/", HTTP_HX_REQUEST="true")
    request.session = SessionStore()
    request.htmx = HtmxDetails(request)
    request._messages = FallbackStorage(request)
    for note in notes:
        messages.info(request, note)
    return request


def _both(a: Assignment, rater, *notes: str, **kw) -> tuple[str, str]:
    """The fragment from the template and by hand, each with its own request, the CSRF token
    (a new mask per rendering) replaced by a placeholder once each rendering is checked."""
    out = []
    for render in (
        lambda r, c: render_to_string("annotation/annotate.html#item", c, r),
        item_fragment,
    ):
        request = _request(*notes)
        html = render(request, item_context(a, rater, **kw))
        tokens = set(_TOKEN.findall(html))
        assert len(tokens) == 1 and len(_TOKEN.findall(html)) == 2, "one token, in both forms"
        out.append(_TOKEN.sub('name="csrfmiddlewaretoken" value="T"', html))
    return out[0], out[1]


def _served(study, rater) -> Assignment:
    a = engine.assignment_next(study=study, rater=rater)
    assert a is not None
    return Assignment.objects.get(pk=a.pk)


@pytest.fixture
def hostile_pairwise(db, organizer):
    return make_study(
        owner=organizer,
        mode="pairwise",
        admit_crowd=True,
        text=HOSTILE,
        dataset_kw={"questions": [f"Q {HOSTILE}"], "reference": f"R {HOSTILE}"},
        n_llms=2,
        instructions=f"# Rules\n\n{HOSTILE}",
        quota_crowd=7,
    )


def test_the_pairwise_fragment_is_the_templates_and_hostile_text_stays_text(hostile_pairwise):
    rater = make_rater("crowd")
    a = _served(hostile_pairwise, rater)
    a.hint_shown = True
    template, by_hand = _both(a, rater, f"note {HOSTILE}")
    assert by_hand == template
    assert "<script" not in by_hand and "<b " not in by_hand  # no tag of the text's survives
    assert "&lt;script&gt;" in by_hand and "note &lt;script&gt;" in by_hand
    assert "Done 0 / 7" in by_hand and 'data-lease="' in by_hand


def test_a_rating_being_changed_and_a_refused_post_render_alike(hostile_pairwise):
    rater = make_rater("crowd")
    a = _served(hostile_pairwise, rater)
    answer(a, rater, choice="right")
    submitted = Assignment.objects.get(pk=a.pk)
    template, by_hand = _both(submitted, rater)
    assert by_hand == template
    assert 'value="right" checked' in by_hand and "data-lease=" not in by_hand
    posted = {"choice": "tie"}
    errors = [f"Refused: {HOSTILE}"]
    template, by_hand = _both(submitted, rater, posted=posted, errors=errors)
    assert by_hand == template and 'value="tie" checked' in by_hand
    assert "Refused: &lt;script&gt;" in by_hand


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_star_fragment_is_the_templates_in_each_language(db, organizer, language):
    study = make_study(owner=organizer, admit_public=True, instructions="")
    rater = make_rater("public")
    a = _served(study, rater)
    criteria = [c.key for c in engine.criteria_for(study.rubric_id, a.item.question)]
    posted = {f"c_{criteria[0]}": "2", f"c_{criteria[-1]}": "x"}
    with translation.override(language):
        template, by_hand = _both(a, rater, posted=posted)
        assert by_hand == template
        plain, plain_by_hand = _both(a, rater)
        assert plain_by_hand == plain
    assert by_hand.count(" checked>") == 1  # the valid posted star; "x" is not a score
    assert ("本项目还需" if language == "zh-hans" else "ratings still needed") in by_hand


@pytest.mark.parametrize("mode", ["star", "pairwise"])
def test_an_empty_answer_says_so_on_the_page_and_in_the_fragment(db, organizer, mode):
    """An empty answer (kept by every importer) is not an empty box that looks like a page that
    failed to load: both renderings say the model gave an empty answer, in the active language."""
    study = make_study(owner=organizer, mode=mode, admit_public=True, text=" \n", n_llms=2)
    rater = make_rater("public")
    a = _served(study, rater)
    template, by_hand = _both(a, rater)
    assert by_hand == template
    sides = 2 if mode == "pairwise" else 1
    assert by_hand.count('<p class="empty-answer">(The model gave an empty answer.)</p>') == sides
    with translation.override("zh-hans"):
        template, by_hand = _both(a, rater)
    assert by_hand == template and "The model gave an empty answer" not in by_hand
    assert by_hand.count('<p class="empty-answer">') == sides


def test_the_last_rating_still_needed_is_said_in_the_singular(db, organizer):
    """One item, N = 1: "1 rating still needed", on the page and in the fragment alike."""
    study = make_study(owner=organizer, admit_public=True, n_questions=1, n_llms=1)
    study.ratings_per_item = 1
    study.save(update_fields=["ratings_per_item"])
    rater = make_rater("public")
    a = _served(study, rater)
    template, by_hand = _both(a, rater)
    assert by_hand == template
    assert "Done 0 · 1 rating still needed in this study" in by_hand


def test_a_criterion_without_star_meanings_gets_no_empty_help_line(db, organizer):
    # An organizer's own rubric may leave out what each star means: the line under the label
    # read "1★ ; 2★★" on both renderings.
    from annotation.models import Criterion, Rubric

    rubric = Rubric.objects.create(key="mine", name_en="Mine", mode="star")
    Criterion.objects.create(rubric=rubric, key="bare", label_en="Bare", max_score=2)
    Criterion.objects.create(
        rubric=rubric, key="told", label_en="Told", max_score=2,
        descriptions=[{"en": "bad", "zh": "差"}, {"en": "good", "zh": "好"}], order=1,
    )  # fmt: skip
    study = make_study(owner=organizer, admit_public=True, instructions="", rubric="mine")
    rater = make_rater("public")
    template, by_hand = _both(_served(study, rater), rater)
    assert by_hand == template
    assert by_hand.count('class="star-help"') == 1 and "1★ bad; 2★★ good" in by_hand
    # The chosen star is named under the stars by its label's title (static/js/annotate.js):
    # "2 — good" where the star has a meaning, "2" where it has none (it read "2 — ").
    titles = re.findall(r'<label class="star[^"]*" title="([^"]*)"', by_hand)
    assert titles == ["1", "2", "1 — bad", "2 — good"]


def _own_rubric(key: str, ranges: list[tuple[int, int]]):
    from annotation.models import Criterion, Rubric

    rubric = Rubric.objects.create(key=key, name_en=key, mode="star")
    for order, (low, high) in enumerate(ranges):
        Criterion.objects.create(
            rubric=rubric, key=f"c{order}", label_en=f"C{order}", min_score=low, max_score=high,
            order=order,
        )  # fmt: skip
    return key


@pytest.mark.parametrize(
    ("rubric", "ranges", "said"),
    [
        ("llmeval2", None, False),  # 1-3 stars and the like: 0 does nothing
        ("alignbench", None, True),  # 1-10: 0 gives 10
        ("mixed", [(1, 3), (1, 10)], True),  # one criterion reaching 10 is enough
        ("zero-ten", [(0, 10)], False),  # 0 is a star of its own there, not 10
    ],
)
def test_the_zero_gives_ten_hint_is_shown_only_where_it_holds(db, organizer, rubric, ranges, said):
    """The hint "0 gives 10 on a 1-10 scale" was on every star screen, 1-3 stars included; the
    arrow-key hint stays on all of them. The page and the fragment say the same."""
    if ranges:
        _own_rubric(rubric, ranges)
    study = make_study(owner=organizer, admit_public=True, instructions="", rubric=rubric)
    rater = make_rater("public")
    a = _served(study, rater)
    for language, ten, arrows in [
        ("en", "0 gives 10 on a 1-10 scale.", "On a focused star, ← and → move the star."),
        ("zh-hans", "1-10 分制下按 0 即 10 分。", "焦点在星级上时，← 和 → 调整星级。"),
    ]:
        with translation.override(language):
            template, by_hand = _both(a, rater)
        assert by_hand == template
        shortcuts = re.search(r'<p class="muted small shortcuts">(.*?)</p>', by_hand)
        assert shortcuts is not None
        assert (ten in shortcuts.group(1)) is said
        assert shortcuts.group(1).endswith(arrows)


def test_the_zero_of_a_scale_from_zero_reads_0_not_a_first_star(db, organizer):
    """A criterion from 0 (the rubric form allows it) drew its 0 as a star, so 0 looked like one
    star given. Both renderings now show it as the digit, still a radio of value 0 (no script
    needed); the 1-3 stars stay stars."""
    _own_rubric("from-zero", [(0, 3)])
    study = make_study(owner=organizer, admit_public=True, instructions="", rubric="from-zero")
    rater = make_rater("public")
    a = _served(study, rater)
    template, by_hand = _both(a, rater, posted={"c_c0": "0"})
    assert by_hand == template
    labels = re.findall(r'<label class="(star[^"]*)".*?value="(\d+)"(.*?)</label>', by_hand)
    assert [(cls, value) for cls, value, _ in labels] == [
        ("star zero", "0"), ("star", "1"), ("star", "2"), ("star", "3"),
    ]  # fmt: skip
    zero, *stars = (rest for _, _, rest in labels)
    assert zero.startswith(" checked>") and '<span aria-hidden="true">0</span>' in zero
    assert "★" not in zero
    assert all('<span aria-hidden="true">★</span>' in s for s in stars)
