"""The browsable API (an API route opened in a browser) shows no other organizer's data.

DRF's HTML page for a route that accepts POST or PUT draws a form from the route's serializer,
and a related field's drop-down lists its whole queryset: /api/imports/ offered every dataset of
the server (another organizer's private ones by name) and every account's username. The page
now offers the raw JSON / form-data box only, which lists nothing; reading and writing through
the API are unchanged."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Dataset, Study
from tests.factories import make_study

pytestmark = pytest.mark.django_db

SECRET = "ALICE-SECRET"


@pytest.fixture
def alice_dataset(organizer) -> Dataset:
    return Dataset.objects.create(name=f"{SECRET} dataset", owner=organizer)


@pytest.fixture
def bob_client(other_organizer) -> Client:
    client = Client()
    client.force_login(other_organizer)
    return client


@pytest.fixture
def bobs_study(other_organizer) -> Study:
    return make_study(owner=other_organizer)


API_PAGES = [
    "/api/imports/",
    "/api/studies/",
    "/api/datasets/",
    "/api/annotators/",
    "/api/judges/",
    "/api/judges/runs/",
]


@pytest.mark.parametrize("url", API_PAGES)
def test_an_api_page_in_the_browser_names_nothing_of_another_organizer(
    bob_client, alice_dataset, url
):
    response = bob_client.get(url, HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert SECRET not in page
    assert "alice" not in page  # no account's username but one's own


def test_the_page_of_ones_own_study_names_nothing_of_another_organizer(
    bob_client, alice_dataset, bobs_study
):
    response = bob_client.get(f"/api/studies/{bobs_study.pk}/", HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert SECRET not in response.content.decode()


def test_the_page_still_offers_the_raw_box_and_the_api_still_answers_json(bob_client):
    page = bob_client.get("/api/imports/", HTTP_ACCEPT="text/html").content.decode()
    assert 'id="post-generic-content-form"' in page
    response = bob_client.get("/api/imports/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert response.json()["results"] == []
