"""Organizer pages and the engine's API: create, launch / pause / close, progress, annotators,
links; organizer-only and owner-only."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotation import engine
from annotation.models import Rater, Rubric, Study
from annotation.services import study_set_status

from .conftest import answer, make_dataset, make_rater, make_study, star_scores


def test_organizer_creates_a_study_from_a_dataset(organizer_client, organizer, db):
    dataset = make_dataset(3, 3)
    rubric = Rubric.objects.get(key="pairwise")
    response = organizer_client.post(
        reverse("organize:study_new"),
        {
            "name": "Pairs",
            "dataset": dataset.pk,
            "mode": "pairwise",
            "rubric": rubric.pk,
            "pair_design": "all",
            "ratings_per_item": 3,
            "repeat_rate": 0.05,
            "hint_policy": "random",
            "admit_crowd": "on",
            "quota_crowd": 20,
            "reservation_timeout": 600,
            "completion_code": "DONE1",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    study = Study.objects.get(name="Pairs")
    assert study.owner == organizer
    assert (study.mode, study.hint_policy, study.quota_crowd) == ("pairwise", "random", 20)
    assert study.admit_crowd and not study.admit_onsite
    assert study.items.count() == 9  # 3 questions x 3 pairs
    assert study.status == Study.Status.DRAFT


def test_study_form_rejects_a_rubric_of_the_other_mode(organizer_client, db):
    dataset = make_dataset(1, 2)
    response = organizer_client.post(
        reverse("organize:study_new"),
        {
            "name": "Bad",
            "dataset": dataset.pk,
            "mode": "star",
            "rubric": Rubric.objects.get(key="pairwise").pk,
            "pair_design": "all",
            "ratings_per_item": 3,
            "repeat_rate": 0.02,
            "hint_policy": "hidden",
            "reservation_timeout": 600,
        },
    )
    assert response.status_code == 200
    assert b"is for pairwise studies, not star" in response.content
    assert not Study.objects.filter(name="Bad").exists()


def test_launch_pause_close_from_the_study_page(organizer_client, organizer, db):
    study = make_study(owner=organizer, status=Study.Status.DRAFT)
    for action, expected in (("launch", "live"), ("pause", "paused"), ("launch", "live")):
        organizer_client.post(reverse("organize:study_status", args=[study.pk, action]))
        study.refresh_from_db()
        assert study.status == expected
    organizer_client.post(
        reverse("organize:study_status", args=[study.pk, "close"]), {"confirm": "close"}
    )
    study.refresh_from_db()
    assert study.status == "closed"
    response = organizer_client.post(
        reverse("organize:study_status", args=[study.pk, "launch"]), follow=True
    )
    study.refresh_from_db()
    assert study.status == "closed"
    assert b"cannot become" in response.content


def test_study_page_shows_progress_and_links_and_polls_a_fragment(organizer_client, organizer, db):
    study = make_study(owner=organizer, admit_crowd=True, admit_public=True)
    rater = make_rater()
    a = engine.assignment_next(study=study, rater=rater)
    answer(a, rater, scores=star_scores(a, 2))
    engine.assignment_next(study=study, rater=rater)
    page = organizer_client.get(reverse("organize:study", args=[study.pk]))
    html = page.content.decode()
    assert rater.pseudonym in html
    assert "1 open reservations" in html
    assert f"/s/{study.public_id}/crowd/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}" in html
    assert f"/s/{study.public_id}/join/" in html
    assert rater.user.username not in html  # organizers see pseudonyms
    fragment = organizer_client.get(
        reverse("organize:study", args=[study.pk]), HTTP_HX_REQUEST="true"
    )
    assert b"<html" not in fragment.content and rater.pseudonym.encode() in fragment.content


def test_organizer_creates_and_invites_onsite_annotators(organizer_client, organizer, db):
    response = organizer_client.post(
        reverse("organize:annotators"), {"username": "ann1", "password": "long-password-1"}
    )
    assert response.status_code == 200
    r1 = Rater.objects.get(user__username="ann1")
    assert r1.pool == "onsite" and r1.invited_by == organizer
    response = organizer_client.post(reverse("organize:annotators"), {"username": "ann2"})
    assert b"/invite/" in response.content
    assert not Rater.objects.get(user__username="ann2").user.has_usable_password()
    response = organizer_client.post(reverse("organize:annotators"), {"username": "ANN1"})
    assert b"taken" in response.content


ORGANIZER_PAGES = [
    ("organize:studies", False, "get"),
    ("organize:study_new", False, "get"),
    ("organize:annotators", False, "get"),
    ("organize:study", True, "get"),
]


@pytest.mark.parametrize(("name", "needs_study", "method"), ORGANIZER_PAGES)
def test_anonymous_visitors_go_to_login_from_organizer_pages(
    client, organizer, name, needs_study, method
):
    study = make_study(owner=organizer)
    args = [study.pk] if needs_study else []
    response = client.get(reverse(name, args=args))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.parametrize(("name", "needs_study", "method"), ORGANIZER_PAGES)
def test_annotators_get_403_on_organizer_pages(
    annotator_client, organizer, name, needs_study, method
):
    study = make_study(owner=organizer)
    args = [study.pk] if needs_study else []
    assert annotator_client.get(reverse(name, args=args)).status_code == 403


def test_annotators_cannot_change_a_study_status(annotator_client, organizer):
    study = make_study(owner=organizer)
    response = annotator_client.post(reverse("organize:study_status", args=[study.pk, "close"]))
    assert response.status_code == 403
    study.refresh_from_db()
    assert study.status == "live"


def test_other_organizer_cannot_see_or_change_alices_study(client, organizer, other_organizer):
    study = make_study(owner=organizer)
    client.force_login(other_organizer)
    assert client.get(reverse("organize:study", args=[study.pk])).status_code == 404
    response = client.post(reverse("organize:study_status", args=[study.pk, "pause"]))
    assert response.status_code == 404
    study.refresh_from_db()
    assert study.status == "live"
    assert study.name.encode() not in client.get(reverse("organize:studies")).content


def test_other_organizer_does_not_see_alices_annotators(client, organizer, other_organizer):
    client.force_login(organizer)
    client.post(reverse("organize:annotators"), {"username": "alices-annotator"})
    client.force_login(other_organizer)
    assert b"alices-annotator" not in client.get(reverse("organize:annotators")).content


# -- API ------------------------------------------------------------------------------------


def api(client, user):
    token, _ = Token.objects.get_or_create(user=user)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {token.key}"
    return client


def test_api_lifecycle_progress_and_links(client, organizer):
    study = make_study(owner=organizer, status=Study.Status.DRAFT, admit_crowd=True)
    c = api(client, organizer)
    assert c.post(f"/api/studies/{study.pk}/launch/").json()["status"] == "live"
    study.refresh_from_db()
    rater = make_rater()
    engine.assignment_next(study=study, rater=rater)
    progress = c.get(f"/api/studies/{study.pk}/progress/").json()
    assert progress["open_reservations"] == 1
    assert progress["annotators"][0]["pseudonym"] == rater.pseudonym
    assert c.post(f"/api/studies/{study.pk}/pause/").json()["status"] == "paused"
    assert c.post(f"/api/studies/{study.pk}/close/").json()["status"] == "closed"
    response = c.post(f"/api/studies/{study.pk}/launch/")
    assert response.status_code == 409
    links = c.get(f"/api/studies/{study.pk}/links/").json()
    assert links["prolific"].endswith("SESSION_ID={{%SESSION_ID%}}")


def test_api_creates_and_lists_onsite_annotators(client, organizer, other_organizer):
    c = api(client, organizer)
    response = c.post("/api/annotators/", {"username": "api-ann"}, content_type="application/json")
    assert response.status_code == 201
    assert "/invite/" in response.json()["invite_url"]
    assert [a["username"] for a in c.get("/api/annotators/").json()] == ["api-ann"]
    bad = c.post("/api/annotators/", {"username": "api-ann"}, content_type="application/json")
    assert bad.status_code == 400
    c = api(client, other_organizer)
    assert c.get("/api/annotators/").json() == []


API_PATHS = [
    ("post", "launch"),
    ("post", "pause"),
    ("post", "close"),
    ("get", "progress"),
    ("get", "links"),
]


@pytest.mark.parametrize(("method", "path"), API_PATHS)
def test_api_forbidden_paths(client, organizer, other_organizer, annotator_user, method, path):
    study = make_study(owner=organizer)
    url = f"/api/studies/{study.pk}/{path}/"
    assert getattr(client, method)(url).status_code in (401, 403)  # anonymous
    assert getattr(api(client, annotator_user), method)(url).status_code == 403
    assert getattr(api(client, other_organizer), method)(url).status_code == 404
    study.refresh_from_db()
    assert study.status == "live"


def test_api_annotators_is_organizer_only(client, annotator_user):
    assert client.get("/api/annotators/").status_code in (401, 403)
    c = api(client, annotator_user)
    assert c.get("/api/annotators/").status_code == 403
    assert c.post("/api/annotators/", {"username": "x"}).status_code == 403


def test_a_close_and_a_resume_at_the_same_moment_never_reopen_the_study(
    organizer_client, organizer
):
    # Found on PostgreSQL: POST close/ and launch/ at once on a paused study, both 200, and the
    # study ended live in 1 run of 12. Each request had read "paused" before the other saved.
    study = make_study(owner=organizer)
    study_set_status(study=study, status=Study.Status.PAUSED)
    stale = Study.objects.get(pk=study.pk)  # the Resume's request read the study here
    closed = organizer_client.post(f"/api/studies/{study.pk}/close/")
    assert closed.status_code == 200
    with pytest.raises(ValidationError):
        study_set_status(study=stale, status=Study.Status.LIVE)
    assert stale.status == Study.Status.CLOSED
    assert Study.objects.get(pk=study.pk).status == Study.Status.CLOSED
