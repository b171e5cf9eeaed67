"""A hidden repeat must not be detectable from the pages of the annotator's earlier ratings.

Before: the page of a submitted exposure showed the rating (to change it) until a repeat of it
was served, and from then on sent its rater on to the next item. A worker who kept the URLs of
their earlier items and opened them all whenever a new item appeared learned which earlier item
the new one repeats (its page had started to redirect), and Previous, which passes over a
repeated rating, said the same for the last ten. Now a rating's page is open only while the
rating can be changed (among its rater's RECENT_EDITS latest submissions, never repeated), and a
repeat is drawn only from ratings already out of that window: its first rating's page and the
Previous chain read the same before and after the repeat is served."""

from __future__ import annotations

import random

import pytest
from django.test import Client
from django.urls import reverse

from annotation import engine
from annotation.models import Assignment

from .conftest import crowd_enter, make_rater, make_study, run_to_the_end

pytestmark = pytest.mark.django_db


def _pid(location: str) -> str:
    return location.rstrip("/").split("/")[-1]


def test_the_page_of_a_rating_too_old_to_change_sends_its_rater_on():
    study = make_study(mode="pairwise", n_questions=10, n_llms=3, repeat_rate=0, admit_crowd=True)
    client = Client(REMOTE_ADDR="198.51.100.10")
    location = crowd_enter(client, study, {"PROLIFIC_PID": "w-old"})["Location"]
    first = _pid(location)
    for _ in range(engine.RECENT_EDITS + 1):
        location = client.post(location, {"choice": "left"})["Location"]
    response = client.get(reverse("annotate:assignment", args=[first]))
    assert response.status_code == 302
    assert response["Location"] == reverse("annotate:next", args=[study.public_id])
    # One that can still be changed is shown, with its rating.
    latest = Assignment.objects.filter(status="submitted").order_by("-seq").first()
    assert latest is not None
    assert client.get(reverse("annotate:assignment", args=[latest.public_id])).status_code == 200


def test_a_repeat_is_drawn_only_from_ratings_its_rater_can_no_longer_open():
    study = make_study(n_questions=40, n_llms=3, ratings_per_item=2, repeat_rate=0.5)
    raters = [make_rater() for _ in range(3)]
    run_to_the_end(study, raters, random.Random(11))
    repeats = Assignment.objects.filter(study=study, is_repeat=True).select_related("repeat_of")
    assert repeats.count() > 10
    for r in repeats:
        between = Assignment.objects.filter(
            rater_id=r.rater_id,
            study=study,
            status="submitted",
            seq__gt=r.repeat_of.seq,
            seq__lt=r.seq,
        ).count()
        assert between >= engine.RECENT_EDITS, (r.seq, r.repeat_of.seq, between)


def test_earlier_pages_depend_on_their_place_only_never_on_a_repeat(monkeypatch):
    """At every item, the page of each earlier rating is open exactly when it is among the
    RECENT_EDITS latest: what a worker sees of their earlier pages follows from how many
    ratings they gave since, whether or not the item in front of them is a hidden repeat."""
    monkeypatch.setattr(engine, "rng_default", random.Random(5))
    study = make_study(mode="pairwise", n_questions=15, n_llms=3, repeat_rate=0.3, admit_crowd=True)
    client = Client(REMOTE_ADDR="198.51.100.11")
    location = crowd_enter(client, study, {"PROLIFIC_PID": "w-oracle"})["Location"]
    rated: list[str] = []
    repeats = 0
    for _ in range(40):
        current = Assignment.objects.get(public_id=_pid(location))
        repeats += current.is_repeat
        for place, pid in enumerate(reversed(rated)):
            status = client.get(reverse("annotate:assignment", args=[pid])).status_code
            assert status == (200 if place < engine.RECENT_EDITS else 302), (place, current)
        rated.append(str(current.public_id))
        location = client.post(location, {"choice": "left"})["Location"]
    assert repeats
