"""Fixtures for the assignment engine and the annotator / organizer pages."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from annotation import engine
from annotation.models import Assignment, Item, Rater

# Test modules import these factories from here.
from tests.factories import make_dataset, make_rater, make_study

__all__ = [
    "answer",
    "crowd_enter",
    "make_dataset",
    "make_rater",
    "make_study",
    "mark_checks",
    "run_to_the_end",
    "star_scores",
]


def star_scores(a: Assignment, value: int = 1) -> dict[str, int]:
    """`value` stars on every criterion the exposure's question is rated on."""
    return {c.key: value for c in a.study.rubric.criteria_for(a.item.question)}


def answer(a: Assignment, rater: Rater, **kw):
    """Submit an exposure through the engine: "left" on a pair, one star on every criterion,
    unless `choice` or `scores` says otherwise; the rating."""
    if a.study.mode == "pairwise":
        kw.setdefault("choice", "left")
    else:
        kw.setdefault("scores", star_scores(a))
    return engine.assignment_submit(assignment=a, rater=rater, **kw)


def mark_checks(study, n: int, kind: str = "gold") -> list[int]:
    """Make the study's first n items hidden checks of `kind`; their primary keys."""
    pks = list(Item.objects.filter(study=study).order_by("pk").values_list("pk", flat=True)[:n])
    answer_: dict[str, object] = {"choices": ["A"]} if study.mode == "pairwise" else {"scores": {}}
    Item.objects.filter(pk__in=pks).update(check_kind=kind, check_answer=answer_)
    return pks


def run_to_the_end(
    study, raters, rng: random.Random | None = None, respond: Callable = answer
) -> None:
    """Each rater in turn takes an item and `respond`s to it, until nobody gets anything."""
    rng = rng or random.Random(1)
    active = list(raters)
    while active:
        for r in list(active):
            a = engine.assignment_next(study=study, rater=r, rng=rng)
            if a is None:
                active.remove(r)
            else:
                respond(a, r)


@pytest.fixture(autouse=True)
def _english():
    # A request with a Chinese Accept-Language leaves its language active in this thread.
    from django.utils import translation

    with translation.override("en"):
        yield


@pytest.fixture
def star_study(db, organizer):
    return make_study(
        owner=organizer, admit_crowd=True, admit_public=True, completion_code="C0DE42"
    )


@pytest.fixture
def pairwise_study(db, organizer):
    return make_study(owner=organizer, mode="pairwise", admit_crowd=True, admit_public=True)


@pytest.fixture
def onsite_rater(annotator_user):
    return annotator_user.rater


def crowd_enter(client, study, params: dict, *, expect_consent: bool = True):
    """A crowd worker opens the study's link, reads the instructions and agrees: the answer to
    the consent POST (normally a redirect to their first item)."""
    from django.urls import reverse

    url = reverse("annotate:crowd", args=[study.public_id])
    page = client.get(url, params)
    if expect_consent:
        assert page.status_code == 200, page.content[:300]
        assert b'name="consent"' in page.content
    return client.post(url, {"consent": "yes"})
