"""An organizer's rubric is theirs: another organizer neither sees, lists, picks (study form, API
study create, import), reads (API detail) nor edits or deletes it, and gets the answer a missing
rubric gets. Keys are unique per owner, so a key another organizer took is never refused and no
error names it. Built-in rubrics stay shared; superusers see every rubric."""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from annotation.importers import ImportRefused
from annotation.importers.ownership import rubric_named
from annotation.models import Criterion, Rubric, Study
from annotation.permissions import rubrics_visible
from tests.factories import make_study, table_counts
from tests.organizer.test_study_editing import form_data

pytestmark = pytest.mark.django_db

SECRET = "alice-secret"
CRITERIA = "secretcrit | Alice Secret Criterion | | 1-3\n"


def _make(client: Client, key: str = f"{SECRET}-rubric", name: str = f"{SECRET} rubric"):
    data = {"key": key, "name_en": name, "name_zh": "", "description": "", "criteria": CRITERIA}
    return client.post(reverse("organize:rubrics"), data)


@pytest.fixture
def alice_rubric(organizer_client, organizer) -> Rubric:
    assert _make(organizer_client).status_code == 302
    rubric = Rubric.objects.get(key=f"{SECRET}-rubric")
    assert rubric.owner == organizer
    return rubric


@pytest.fixture
def bob_client(other_organizer) -> Client:
    client = Client()
    client.force_login(other_organizer)
    return client


def test_the_rule(organizer, other_organizer, alice_rubric):
    root = User.objects.create_superuser("root", password="root-pass-123")
    builtin = set(Rubric.objects.filter(builtin=True))
    assert set(rubrics_visible(organizer)) == builtin | {alice_rubric}
    assert set(rubrics_visible(other_organizer)) == builtin
    assert alice_rubric in rubrics_visible(root)
    # A study of Bob's on it (made before rubrics had owners) lets him read it.
    make_study(owner=other_organizer, rubric=alice_rubric.key)
    assert alice_rubric in rubrics_visible(other_organizer)


def test_bob_does_not_see_alices_rubric_on_the_page_or_in_the_api(
    bob_client, organizer_client, alice_rubric
):
    for url in (reverse("organize:rubrics"), "/api/rubrics/", reverse("organize:study_new")):
        mine = organizer_client.get(url)
        theirs = bob_client.get(url)
        assert theirs.status_code == 200 and mine.status_code == 200
        assert SECRET in mine.content.decode(), url
        assert SECRET not in theirs.content.decode(), url
        assert "LLMEval-2" in theirs.content.decode()  # the built-in ones are shared
    assert organizer_client.get(f"/api/rubrics/{alice_rubric.key}/").status_code == 200
    theirs = bob_client.get(f"/api/rubrics/{alice_rubric.key}/")
    missing = bob_client.get("/api/rubrics/no-such-rubric/")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.content == missing.content


def test_bob_cannot_edit_or_delete_alices_rubric(bob_client, alice_rubric):
    edit = reverse("organize:rubric_edit", args=[alice_rubric.pk])
    delete = reverse("organize:rubric_delete", args=[alice_rubric.pk])
    before = table_counts()
    assert bob_client.get(edit).status_code == 404
    r = bob_client.post(edit, {"key": "x", "name_en": "x", "criteria": "a | A | | 1-2"})
    assert r.status_code == 404 and SECRET not in r.content.decode()
    assert bob_client.post(delete).status_code == 404
    assert bob_client.get(reverse("organize:rubrics"), {"copy": alice_rubric.pk}).status_code == 404
    alice_rubric.refresh_from_db()
    assert alice_rubric.name_en == f"{SECRET} rubric"
    assert list(alice_rubric.criteria.values_list("key", flat=True)) == ["secretcrit"]
    assert table_counts() == before


def test_bob_cannot_pick_alices_rubric_in_the_study_form(bob_client, alice_rubric, small_dataset):
    theirs = bob_client.post(
        reverse("organize:study_new"), form_data(small_dataset, rubric=alice_rubric.pk)
    )
    missing = bob_client.post(reverse("organize:study_new"), form_data(small_dataset, rubric=0))
    # The study form answers its errors with the page (200), the same for both.
    assert theirs.status_code == missing.status_code
    assert f"Rubric {alice_rubric.pk} does not exist." in theirs.content.decode()
    assert SECRET not in theirs.content.decode()
    assert not Study.objects.exists()


def _study_body(dataset, rubric_key: str) -> str:
    body = {"name": "bob study", "dataset": dataset.name, "mode": "star", "rubric": rubric_key}
    return json.dumps(body)


def test_bob_cannot_create_or_move_a_study_onto_alices_rubric_through_the_api(
    bob_client, alice_rubric, small_dataset
):
    theirs = bob_client.post("/api/studies/", _study_body(small_dataset, alice_rubric.key),
                             "application/json")  # fmt: skip
    missing = bob_client.post("/api/studies/", _study_body(small_dataset, "no-such-rubric"),
                              "application/json")  # fmt: skip
    assert theirs.status_code == missing.status_code == 400
    assert theirs.json()["rubric"] == [
        m.replace("no-such-rubric", alice_rubric.key) for m in missing.json()["rubric"]
    ]
    assert not Study.objects.exists()
    # The update API does not take a rubric: a study keeps the one it was made with.
    ok = bob_client.post("/api/studies/", _study_body(small_dataset, "llmeval2"),
                         "application/json")  # fmt: skip
    assert ok.status_code == 201, ok.content
    pk = ok.json()["id"]
    bob_client.patch(f"/api/studies/{pk}/", {"rubric": alice_rubric.key}, "application/json")
    assert Study.objects.get(pk=pk).rubric.key == "llmeval2"


def test_bob_may_use_the_same_key_and_is_told_nothing_about_alices(bob_client, alice_rubric):
    r = _make(bob_client, key=alice_rubric.key, name="Bob's own")
    assert r.status_code == 302
    mine = Rubric.objects.get(key=alice_rubric.key, owner__username="bob")
    assert mine.pk != alice_rubric.pk and mine.name_en == "Bob's own"
    # Each reads their own under that key.
    assert bob_client.get(f"/api/rubrics/{alice_rubric.key}/").json()["name_en"] == "Bob's own"
    # A second one of Bob's under that key is refused, naming only his own.
    r = _make(bob_client, key=alice_rubric.key, name="again")
    assert r.status_code == 400 and f"{SECRET} rubric" not in r.content.decode()
    assert f"A rubric with the key {alice_rubric.key} exists." in r.content.decode()
    assert Rubric.objects.filter(key=alice_rubric.key).count() == 2


def test_imports_do_not_resolve_or_offer_alices_rubric(
    bob_client, organizer, other_organizer, alice_rubric
):
    assert rubric_named(organizer, alice_rubric.key) == alice_rubric
    assert rubric_named(other_organizer, alice_rubric.key) is None  # as a missing one
    assert rubric_named(None, alice_rubric.key) == alice_rubric  # the command line: all
    assert rubric_named(other_organizer, "llmeval2").builtin
    page = bob_client.get(reverse("organize:import")).content.decode()
    assert 'value="llmeval2"' in page and SECRET not in page
    Rubric.objects.create(key=alice_rubric.key, name_en="Bob's", mode="star", owner=other_organizer)
    with pytest.raises(ImportRefused, match="give the id"):
        rubric_named(None, alice_rubric.key)  # two owners, and the command line names neither


def test_superusers_see_every_rubric(alice_rubric):
    root = User.objects.create_superuser("root", password="root-pass-123")
    client = Client()
    client.force_login(root)
    assert SECRET in client.get(reverse("organize:rubrics")).content.decode()
    assert client.get(f"/api/rubrics/{alice_rubric.key}/").status_code == 200


def test_the_migration_gives_a_legacy_rubric_to_the_oldest_studys_owner(organizer, other_organizer):
    migration = importlib.import_module("annotation.migrations.0007_rubric_owner")
    used = Rubric.objects.create(key="legacy-used", name_en="Used", mode="star")
    Criterion.objects.create(rubric=used, key="c", label_en="c")
    unused = Rubric.objects.create(key="legacy-unused", name_en="Unused", mode="star")
    first = make_study(owner=other_organizer, rubric="legacy-used")
    later = make_study(owner=organizer, rubric="legacy-used")
    Study.objects.filter(pk=later.pk).update(created_at=first.created_at.replace(year=2099))
    migration.give_custom_rubrics_an_owner(apps, None)
    used.refresh_from_db()
    unused.refresh_from_db()
    assert used.owner == other_organizer  # the oldest study's owner
    assert unused.owner is None  # nobody's: superusers only
    assert used in rubrics_visible(organizer)  # Alice's study still reads it
    assert unused not in rubrics_visible(organizer)
    assert not Rubric.objects.filter(builtin=True, owner__isnull=False).exists()


def test_the_import_form_offers_star_rubrics_only(organizer_client):
    # Only the generic formats' star ratings take a rubric: "pairwise" was offered beside them.
    page = organizer_client.get(reverse("organize:import")).content.decode()
    assert 'value="llmeval2"' in page and 'value="pairwise"' not in page
