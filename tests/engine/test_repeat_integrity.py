"""A hidden repeat measures whether an annotator answers the same item the same way. Once it is
served, the first answer is closed to its rater: Previous passes over it, its page sends them on,
and an edit is refused, so the repeat can be neither answered by looking the first one up nor
matched afterwards by changing the first. A repeat is drawn only from ratings already past the
rater's RECENT_EDITS latest (test_repeat_oracle.py), so all three were closed before it too."""

from __future__ import annotations

import random

import pytest
from django.test import Client
from django.urls import reverse

from annotation import engine
from annotation.models import Assignment, Rating

from .conftest import crowd_enter, make_study

pytestmark = pytest.mark.django_db


def _pid(location: str) -> str:
    return location.rstrip("/").split("/")[-1]


@pytest.fixture
def at_a_repeat(monkeypatch) -> tuple[Client, Assignment]:
    """A crowd worker's browser with a hidden repeat open (half the eligible exposures are; the
    draws are seeded)."""
    monkeypatch.setattr(engine, "rng_default", random.Random(3))
    study = make_study(mode="pairwise", n_questions=10, n_llms=3, repeat_rate=0.5, admit_crowd=True)
    client = Client(REMOTE_ADDR="198.51.100.9")
    ids = {"PROLIFIC_PID": "w-repeat", "STUDY_ID": "s", "SESSION_ID": "x"}
    location = crowd_enter(client, study, ids)["Location"]
    for _ in range(40):
        a = Assignment.objects.get(public_id=_pid(location))
        if a.is_repeat:
            return client, a
        response = client.post(location, {"choice": "left"})
        assert response.status_code == 302, response.content[:300]
        location = response["Location"]
    raise AssertionError("no repeat was served")


def _previous_chain(client: Client, start: Assignment) -> list[str]:
    """Every exposure Previous leads to from `start`, one step after another."""
    reached, pid = [], str(start.public_id)
    for _ in range(15):
        location = client.get(reverse("annotate:previous", args=[pid]))["Location"]
        if _pid(location) == pid:  # nothing earlier: back to the same item
            return reached
        pid = _pid(location)
        reached.append(pid)
    return reached


def test_previous_never_leads_to_the_first_answer_of_an_open_repeat(at_a_repeat):
    client, repeat = at_a_repeat
    chain = _previous_chain(client, repeat)
    assert chain, "the other recent ratings stay reachable"
    assert str(repeat.repeat_of.public_id) not in chain


def test_the_first_answers_page_sends_its_rater_on_instead_of_showing_it(at_a_repeat):
    client, repeat = at_a_repeat
    response = client.get(reverse("annotate:assignment", args=[repeat.repeat_of.public_id]))
    assert response.status_code == 302
    assert response["Location"] == reverse("annotate:next", args=[repeat.study.public_id])


@pytest.mark.parametrize("after_the_repeat", [False, True])
def test_the_first_answer_cannot_be_changed_once_repeated(at_a_repeat, after_the_repeat):
    client, repeat = at_a_repeat
    if after_the_repeat:
        client.post(reverse("annotate:assignment", args=[repeat.public_id]), {"choice": "right"})
        assert Rating.objects.filter(assignment=repeat).exists()
    first = Rating.objects.get(assignment=repeat.repeat_of)
    url = reverse("annotate:assignment", args=[repeat.repeat_of.public_id])
    response = client.post(url, {"choice": "right" if first.choice == "A" else "left"})
    assert response.status_code == 400
    # The answer any rating too old to change gets: nothing says this one was repeated.
    assert "too old to change" in response.content.decode()
    assert Rating.objects.get(pk=first.pk).choice == first.choice
