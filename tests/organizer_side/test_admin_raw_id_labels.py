"""The admin's raw-id boxes name only objects the organizer may see.

Beside a raw-id box (a question's dataset, an answer's question) Django prints the chosen
object's name and a link to it, looked up in the whole table. An organizer who opened
/admin/annotation/question/add/?dataset=<id> (or posted a form with that id) read the name of
another organizer's private dataset, and through ?question=<id> on the answer form the ids of
their questions, one request per id. Now the name is printed only for an object the field may
take (the organizer's own rows, or what their admin lists)."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Dataset, Question
from tests.organizer_side.test_admin_scoping import _staff_organizer

pytestmark = pytest.mark.django_db


@pytest.fixture
def alices_private_question() -> Question:
    alice = _staff_organizer("alice-rawid")
    dataset = Dataset.objects.create(name="alice-private-dataset", owner=alice)
    return Question.objects.create(dataset=dataset, external_id="alice-secret-q", text="t")


@pytest.fixture
def bob_client(client: Client) -> Client:
    client.force_login(_staff_organizer("bob-rawid"))
    return client


def test_the_question_form_does_not_name_another_organizers_dataset(
    bob_client, alices_private_question
):
    dataset = alices_private_question.dataset
    response = bob_client.get(f"/admin/annotation/question/add/?dataset={dataset.pk}")
    assert response.status_code == 200
    assert b"alice-private-dataset" not in response.content
    assert f"/admin/annotation/dataset/{dataset.pk}/change/".encode() not in response.content


def test_the_answer_form_does_not_name_another_organizers_question(
    bob_client, alices_private_question
):
    q = alices_private_question
    response = bob_client.get(f"/admin/annotation/response/add/?question={q.pk}")
    assert response.status_code == 200
    assert b"alice-secret-q" not in response.content


def test_a_refused_post_does_not_name_it_either(bob_client, alices_private_question):
    dataset = alices_private_question.dataset
    response = bob_client.post(
        "/admin/annotation/question/add/",
        {"dataset": dataset.pk, "external_id": "x", "text": "t", "kind": "subjective"},
    )
    assert response.status_code == 200  # the form again, with the refusal
    assert b"alice-private-dataset" not in response.content
    assert not Question.objects.filter(external_id="x").exists()


def test_an_organizer_still_sees_the_name_of_their_own_dataset(bob_client):
    bob = bob_client.session["_auth_user_id"]
    own = Dataset.objects.create(name="bobs-own-dataset", owner_id=bob)
    response = bob_client.get(f"/admin/annotation/question/add/?dataset={own.pk}")
    assert b"bobs-own-dataset" in response.content
