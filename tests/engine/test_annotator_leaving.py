"""Leaving the item page from an htmx request: a client-side redirect (HX-Redirect), never a whole
page swapped into the item; a rating given while the study was paused is refused, kept as a draft
in the session and filled in again on return. Hostile numbers never cause a 500."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.drafts import MAX_DRAFTS, SESSION_DRAFTS
from annotation.models import Assignment, Rating, Study
from annotation.services import study_set_status

from .test_annotator_pages import HX, serve, star_post

pytestmark = pytest.mark.django_db


def _pause(study: Study) -> None:
    study_set_status(study=study, status=Study.Status.PAUSED)


def test_htmx_submit_on_a_paused_study_redirects_the_browser_and_writes_nothing(
    annotator_client, star_study
):
    a = serve(annotator_client, star_study)
    _pause(star_study)
    url = reverse("annotate:assignment", args=[a.public_id])
    response = annotator_client.post(url, star_post(a, 3), **HX)
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("annotate:study", args=[star_study.public_id])
    assert response.content == b""  # nothing for htmx to swap in
    assert not Rating.objects.exists()
    a.refresh_from_db()
    assert a.status == Assignment.Status.SERVED
    study_page = annotator_client.get(response["HX-Redirect"])
    assert "kept as a draft" in study_page.content.decode()


def test_the_refused_rating_is_filled_in_again_when_the_annotator_returns(
    annotator_client, star_study
):
    a = serve(annotator_client, star_study)
    _pause(star_study)
    url = reverse("annotate:assignment", args=[a.public_id])
    annotator_client.post(url, star_post(a, 3), **HX)
    study_set_status(study=star_study, status=Study.Status.LIVE)
    # Continue brings the same reserved item back, with the stars given before the pause.
    assert serve(annotator_client, star_study).pk == a.pk
    page = annotator_client.get(url).content.decode()
    for key in star_post(a, 3):
        assert f'name="{key}" value="3" checked' in page
    # Shown once: the draft left the session.
    assert a.public_id.hex not in str(annotator_client.session.get(SESSION_DRAFTS, {}))
    response = annotator_client.post(url, star_post(a, 3))
    assert response.status_code == 302
    assert set(Rating.objects.get(assignment=a).scores_dict().values()) == {3}


def test_plain_post_on_a_paused_study_redirects_with_a_message(annotator_client, pairwise_study):
    a = serve(annotator_client, pairwise_study)
    _pause(pairwise_study)
    response = annotator_client.post(
        reverse("annotate:assignment", args=[a.public_id]), {"choice": "tie"}, follow=True
    )
    assert response.redirect_chain[-1][0] == reverse(
        "annotate:study", args=[pairwise_study.public_id]
    )
    assert "kept as a draft" in response.content.decode()
    assert not Rating.objects.exists()


def test_a_paused_post_without_a_usable_value_says_the_study_is_not_running(
    annotator_client, star_study
):
    a = serve(annotator_client, star_study)
    _pause(star_study)
    response = annotator_client.post(
        reverse("annotate:assignment", args=[a.public_id]),
        {"c_accuracy": "²", "c_x\x00": "1", "choice": "<script>"},
        follow=True,
    )
    assert "not running right now" in response.content.decode()
    assert SESSION_DRAFTS not in annotator_client.session


def test_drafts_per_session_are_capped(annotator_client, star_study):
    from annotation.drafts import draft_save

    class Req:
        session: dict = {}

    req = Req()
    for i in range(MAX_DRAFTS + 5):
        draft_save(req, assignment_pid=f"pid{i}", post={"c_accuracy": "1"})
    drafts = req.session[SESSION_DRAFTS]
    assert len(drafts) == MAX_DRAFTS
    assert "pid0" not in drafts and f"pid{MAX_DRAFTS + 4}" in drafts


def test_the_last_item_sends_htmx_to_the_end_page_with_a_client_redirect(
    annotator_client, organizer
):
    from .conftest import make_study

    study = make_study(owner=organizer, n_questions=1, n_llms=1, ratings_per_item=1)
    a = serve(annotator_client, study)
    response = annotator_client.post(
        reverse("annotate:assignment", args=[a.public_id]), star_post(a), **HX
    )
    assert response["HX-Redirect"] == reverse("annotate:done", args=[study.public_id])
    assert Rating.objects.filter(assignment=a).exists()


HOSTILE = ["²", "٣", "9" * 5000, "-5", "1e9", "\x00"]


@pytest.mark.parametrize("value", [v for v in HOSTILE if v != "٣"])
def test_hostile_scores_are_refused_with_a_message_not_a_500(annotator_client, star_study, value):
    a = serve(annotator_client, star_study)
    url = reverse("annotate:assignment", args=[a.public_id])
    response = annotator_client.post(url, {**star_post(a), "c_accuracy": value})
    assert response.status_code == 400
    assert re.search(rb"not a number|must be between", response.content)
    assert not Rating.objects.exists()


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_active_time_is_refused_and_nothing_stored(annotator_client, star_study, value):
    a = serve(annotator_client, star_study)
    url = reverse("annotate:assignment", args=[a.public_id])
    response = annotator_client.post(url, {**star_post(a), "active_ms": value})
    assert response.status_code == 400
    assert b"active time must be a whole number" in response.content
    a.refresh_from_db()
    assert a.status == Assignment.Status.SERVED and a.active_ms is None
    assert not Rating.objects.exists()
