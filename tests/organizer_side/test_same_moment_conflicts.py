"""Two requests that create the same name at the same moment (a double click, two tabs, a
script retrying): both pass the "name is free" check before either commits, and the database's
unique constraint refuses the second. That is a 409 with a message and nothing written, on the
API and on the pages, never a 500.

Found on PostgreSQL with six simultaneous POST /api/studies/ of one name (and the same for
/api/judges/create/ and /api/annotators/): one 201, the others 400 or 500 (IntegrityError). The
race is simulated here by letting the check pass while the name is already taken."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Study
from tests.factories import make_study
from tests.organizer.test_study_editing import form_data

pytestmark = pytest.mark.django_db


def _blind(monkeypatch, model) -> None:
    """The model's checks pass as they do for the second of two simultaneous requests."""
    for check in ("clean", "validate_unique", "validate_constraints"):
        monkeypatch.setattr(model, check, lambda self, *a, **k: None)


@pytest.fixture
def taken(organizer, organizer_client, monkeypatch):
    """Alice's study "Taken", and a name check that no longer sees it (the race's window)."""
    study = make_study(owner=organizer, status=Study.Status.DRAFT)
    Study.objects.filter(pk=study.pk).update(name="Taken")
    _blind(monkeypatch, Study)
    organizer_client.raise_request_exception = False
    return study


def test_the_study_api_answers_a_name_taken_at_the_same_moment_with_409(organizer_client, taken):
    body = {"name": "Taken", "dataset": taken.dataset.name, "mode": "star", "rubric": "llmeval2"}
    before = Study.objects.count()
    response = organizer_client.post(reverse("api-studies"), body, content_type="application/json")
    assert response.status_code == 409
    assert "at the same moment" in response.json()["detail"]
    assert Study.objects.count() == before


def test_the_study_page_answers_a_name_taken_at_the_same_moment_with_409(organizer_client, taken):
    before = Study.objects.count()
    data = form_data(taken.dataset, name="Taken")
    response = organizer_client.post(reverse("organize:study_new"), data)
    assert response.status_code == 409
    assert "at the same moment" in response.content.decode()
    assert Study.objects.count() == before


def _not_null_bug(**_kwargs):
    """A write that breaks a NOT NULL constraint: a bug of ours, not a user's conflict."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("INSERT INTO auth_group (name) VALUES (NULL)")


def test_the_409_is_logged_as_an_error_with_its_traceback(organizer_client, taken, caplog):
    """The 409 is a safety net under the name checks: each one is in the error log, with the
    traceback, so a unique violation that comes from a bug does not pass unseen."""
    data = form_data(taken.dataset, name="Taken")
    with caplog.at_level("ERROR", logger="config.conflicts"):
        response = organizer_client.post(reverse("organize:study_new"), data)
    assert response.status_code == 409
    (record,) = [r for r in caplog.records if r.name == "config.conflicts"]
    assert record.levelname == "ERROR" and record.exc_info is not None
    assert "IntegrityError" in caplog.text and "Traceback" in caplog.text


@pytest.mark.parametrize("where", ["page", "api"])
def test_an_integrity_error_that_is_no_conflict_is_not_called_one(
    organizer_client, organizer, monkeypatch, where
):
    """A NOT NULL (or CHECK) violation is a bug: a 500 (logged by Django), never the 409 page
    that tells the user to try again."""
    study = make_study(owner=organizer, status=Study.Status.DRAFT)
    organizer_client.raise_request_exception = False
    if where == "page":
        monkeypatch.setattr("annotation.views.organizer.studies.study_create", _not_null_bug)
        response = organizer_client.post(
            reverse("organize:study_new"), form_data(study.dataset, name="Fresh")
        )
    else:
        monkeypatch.setattr("annotation.api.data.study_create", _not_null_bug)
        body = {"name": "Fresh", "dataset": study.dataset.name, "mode": "star"}
        response = organizer_client.post(
            reverse("api-studies"), {**body, "rubric": "llmeval2"}, content_type="application/json"
        )
    assert response.status_code == 500
    assert "at the same moment" not in response.content.decode()
