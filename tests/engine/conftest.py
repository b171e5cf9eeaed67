"""Fixtures for the assignment engine and the annotator / organizer pages."""

from __future__ import annotations

import pytest

# Test modules import these factories from here.
from tests.factories import make_dataset, make_rater, make_study

__all__ = ["crowd_enter", "make_dataset", "make_rater", "make_study"]


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
