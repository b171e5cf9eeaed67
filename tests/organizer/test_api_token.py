"""An organizer makes their API token on the organizer pages (no shell, no admin): the key is
shown once, works on the API, and a new one replaces it."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db
URL = "/organize/api-token/"


def _key(html: str) -> str:
    return re.search(r'id="token-key" value="([0-9a-f]{40})"', html).group(1)


def test_an_organizer_makes_a_token_that_works_on_the_api(organizer_client, organizer):
    assert reverse("organize:api_token") == URL
    home = organizer_client.get(reverse("home")).content.decode()
    assert f'href="{URL}"' in home
    page = organizer_client.get(URL)
    assert 'id="no-token"' in page.content.decode()
    assert "no-store" in page["Cache-Control"]

    made = organizer_client.post(URL)
    key = _key(made.content.decode())
    assert Token.objects.get(user=organizer).key == key
    assert "no-store" in made["Cache-Control"]
    api = Client().get(reverse("api-studies"), HTTP_AUTHORIZATION=f"Token {key}")
    assert api.status_code == 200

    # The page does not show the key again; a new token replaces the old one.
    again = organizer_client.get(URL).content.decode()
    assert 'id="token-exists"' in again and key not in again
    new_key = _key(organizer_client.post(URL).content.decode())
    assert new_key != key and Token.objects.filter(user=organizer).count() == 1
    old = Client().get(reverse("api-studies"), HTTP_AUTHORIZATION=f"Token {key}")
    assert old.status_code in (401, 403)


def test_only_organizers_make_tokens(annotator_client):
    assert Client().post(URL).status_code == 302  # to the login page
    assert annotator_client.post(URL).status_code == 403
    assert not Token.objects.exists()
