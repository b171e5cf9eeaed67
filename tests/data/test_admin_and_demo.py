"""The admin: every changelist loads, results are read-only, organizers see their own studies, data
comes in through "Import data". The demo loader is idempotent."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Assignment, Dataset, Rater, Rating, Response, Rubric, Study
from annotation.permissions import ORGANIZERS_GROUP
from annotation.services import study_create
from tests.data.conftest import l2_files, table_counts


@pytest.fixture
def superuser_client(client, db):
    user = User.objects.create_superuser("root", password="root-pass-123")
    client.force_login(user)
    return client


def _annotation_models():
    return [m for m in admin.site._registry if m._meta.app_label == "annotation"]


def test_every_annotation_model_has_an_admin():
    from django.apps import apps

    registered = set(_annotation_models())
    assert set(apps.get_app_config("annotation").get_models()) <= registered


def test_every_changelist_and_change_page_loads(superuser_client, l2_scores_imported, cae_imported):
    for model in _annotation_models():
        opts = model._meta
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        r = superuser_client.get(url)
        assert r.status_code == 200, url
        obj = model.objects.first()
        if obj is not None:
            url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
            assert superuser_client.get(url).status_code == 200, url


def test_results_and_builtin_rubrics_are_read_only(superuser_client, l2_scores_imported):
    rating = Rating.objects.first()
    r = superuser_client.post(
        reverse("admin:annotation_rating_delete", args=[rating.pk]), {"post": "yes"}
    )
    assert r.status_code == 403
    assert Rating.objects.filter(pk=rating.pk).exists()
    page = superuser_client.get(
        reverse("admin:annotation_assignment_change", args=[Assignment.objects.first().pk])
    )
    assert b'name="status"' not in page.content
    rubric = Rubric.objects.get(key="llmeval2")
    page = superuser_client.get(reverse("admin:annotation_rubric_change", args=[rubric.pk]))
    assert b'name="name_en"' not in page.content
    rated = Response.objects.filter(question__dataset__name="LLMEval-2").first()
    page = superuser_client.get(reverse("admin:annotation_response_change", args=[rated.pk]))
    assert b'name="text"' not in page.content


def test_the_import_view_imports_uploaded_files(superuser_client):
    url = reverse("admin:annotation_dataset_import")
    assert superuser_client.get(url).status_code == 200
    assert (
        url.encode() in superuser_client.get(reverse("admin:annotation_dataset_changelist")).content
    )
    files = [SimpleUploadedFile(p.name, p.read_bytes()) for p in l2_files("results/human-score")]
    r = superuser_client.post(
        url, {"format": "llmeval2-scores", "folder": "human-score", "files": files}
    )
    assert r.status_code == 200
    assert b"ratings: added" in r.content
    assert Rater.objects.get(name="LLMEval-2 human panel").ratings.count() > 0


def test_the_import_view_shows_a_refusal_and_writes_nothing(superuser_client):
    src = l2_files("data")[0]
    bad = SimpleUploadedFile(src.name, b"[1, 2")
    before = table_counts()
    r = superuser_client.post(
        reverse("admin:annotation_dataset_import"),
        {"format": "llmeval2", "files": [bad]},
        follow=True,
    )
    assert b"Refused, nothing was written" in r.content
    assert table_counts() == before


def test_a_staff_organizer_sees_only_their_own_studies(
    client, small_dataset, star_rubric, other_organizer
):
    alice = User.objects.create_user("alice2", password="x-pass-123", is_staff=True)
    group, _ = Group.objects.get_or_create(name=ORGANIZERS_GROUP)
    # What load_demo gives the organizers group: the annotation models' permissions.
    group.permissions.set(Permission.objects.filter(content_type__app_label="annotation"))
    alice.groups.add(group)
    mine = study_create(
        name="mine", dataset=small_dataset, mode="star", rubric=star_rubric, owner=alice
    )
    theirs = study_create(
        name="theirs", dataset=small_dataset, mode="star", rubric=star_rubric, owner=other_organizer
    )
    client.force_login(alice)
    r = client.get(reverse("admin:annotation_study_changelist"))
    assert r.status_code == 200
    assert b"mine" in r.content and b"theirs" not in r.content
    assert client.get(reverse("admin:annotation_study_change", args=[theirs.pk])).status_code == 404
    assert client.get(reverse("admin:annotation_item_changelist")).context["cl"].result_count == (
        mine.items.count()
    )
    # The study filters list only their own studies.
    for name in ("item", "assignment", "rating"):
        page = client.get(reverse(f"admin:annotation_{name}_changelist"))
        assert b"theirs" not in page.content, name
    # Raters are shown by pseudonym: no account or worker id on the change page.
    rater = Rater.objects.create(
        kind="human", pool="crowd", platform="prolific", external_id="W123", invited_by=alice
    )
    page = client.get(reverse("admin:annotation_rater_change", args=[rater.pk]))
    assert page.status_code == 200 and b"W123" not in page.content


def test_annotators_cannot_open_the_admin_or_its_import_view(annotator_client):
    r = annotator_client.get(reverse("admin:annotation_dataset_import"))
    assert r.status_code == 302 and "/admin/login/" in r["Location"]


def test_load_demo_is_idempotent_and_creates_accounts_and_studies(db, capsys):
    call_command("load_demo")
    first = table_counts()
    out = capsys.readouterr().out
    assert "http://127.0.0.1:8000/" in out and "organizer / organizer-demo" in out
    call_command("load_demo")
    assert table_counts() == first

    organizer = User.objects.get(username="organizer")
    assert organizer.is_staff and not organizer.is_superuser
    assert organizer.groups.filter(name=ORGANIZERS_GROUP).exists()
    assert organizer.check_password("organizer-demo")
    assert User.objects.get(username="admin").is_superuser
    for i in (1, 2, 3):
        rater = Rater.objects.get(user__username=f"annotator{i}")
        assert rater.pool == "onsite"
    star = Study.objects.get(name="Demo: LLMEval-2 star")
    pair = Study.objects.get(name="Demo: ChineseAlpacaEval pairwise")
    assert (star.status, star.rubric.key, star.owner) == ("live", "llmeval2", organizer)
    assert star.admit_onsite and star.admit_crowd and star.admit_public
    assert pair.status == "live" and pair.pair_design == "baseline"
    assert pair.baseline_llm.name == "text-davinci-003"
    assert pair.items.count() == 2 * Dataset.objects.get(name="ChineseAlpacaEval").questions.count()
    scores = Study.objects.get(name="LLMEval-2 (imported scores)")
    assert scores.owner == organizer and scores.status == "closed"
    assert Rating.objects.filter(item__study=scores).values("rater").distinct().count() == 2
