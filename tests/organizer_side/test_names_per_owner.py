"""Names are unique per owner, so a refused name tells nobody what another organizer called their
data: datasets, studies, judges, templates and the named raters of imports. A name resolves to
the caller's own row, else the shared (ownerless) one, else the only one; several is a clear
message asking for the id."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.apps import apps
from django.contrib.auth.models import Group, Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotation.importers import dataset_import
from annotation.models import LLM, Assignment, Criterion, Dataset, Rater, Rating, Study
from annotation.permissions import ORGANIZERS_GROUP
from evaluation.models import JudgeConfig, PromptTemplate
from tests.factories import make_study

pytestmark = pytest.mark.django_db

STAR_PROMPT = "Question: {question}\nAnswer: {answer}\nRate it."
JUDGE = {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "LLMEVAL_DEMO_JUDGE_KEY"}


@pytest.fixture(autouse=True)
def _judge_host(settings):
    settings.JUDGE_ALLOWED_HOSTS = ["127.0.0.1"]


def _login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def alice(organizer) -> Client:
    return _login(organizer)


@pytest.fixture
def bob(other_organizer) -> Client:
    return _login(other_organizer)


def _post(client, name, body):
    return client.post(reverse(name), body, "application/json")


def _study(dataset: str, name: str = "pilot") -> dict:
    return {"name": name, "dataset": dataset, "mode": "star", "rubric": "llmeval2"}


def _import_ratings(client, dataset: str, rater: str, study: str):
    key = Criterion.objects.filter(rubric__key="llmeval2").values_list("key", flat=True).first()
    record = {"type": "rating", "question_id": "Q1", "llm": "model-x", "rater": rater,
              "scores": {key: 3}}  # fmt: skip
    upload = SimpleUploadedFile("r.jsonl", json.dumps(record).encode())
    body = {"format": "jsonl", "dataset": dataset, "files": [upload], "rubric": "llmeval2",
            "study": study}  # fmt: skip
    return client.post("/api/imports/", body)


def test_two_organizers_may_use_one_study_name_but_not_twice_each(alice, bob, small_dataset):
    assert _post(alice, "api-studies", _study(small_dataset.name)).status_code == 201
    again = _post(alice, "api-studies", _study(small_dataset.name))
    assert again.status_code == 400
    assert "already exists" in json.dumps(again.json())
    assert _post(bob, "api-studies", _study(small_dataset.name)).status_code == 201
    assert Study.objects.filter(name="pilot").count() == 2


def test_two_organizers_may_use_one_judge_name(alice, bob, organizer, other_organizer):
    body = {"name": "strict", **JUDGE}
    assert _post(alice, "judges_api:judge_create", body).status_code == 201
    assert _post(bob, "judges_api:judge_create", body).status_code == 201
    again = _post(bob, "judges_api:judge_create", body)
    assert again.status_code == 400
    assert JudgeConfig.objects.filter(name="strict").count() == 2
    raters = Rater.objects.filter(name="strict", kind="judge")
    assert set(raters.values_list("owner", flat=True)) == {organizer.pk, other_organizer.pk}


def test_two_organizers_may_use_one_template_key_but_not_a_builtin_one(alice, bob):
    body = {"key": "mine", "name": "t", "kind": "star", "parser": "stars", "user": STAR_PROMPT}
    assert _post(alice, "judges_api:template_create", body).status_code == 201
    assert _post(bob, "judges_api:template_create", body).status_code == 201
    assert _post(bob, "judges_api:template_create", body).status_code == 400
    builtin = PromptTemplate.objects.filter(builtin=True).values_list("key", flat=True).first()
    refused = _post(bob, "judges_api:template_create", {**body, "key": builtin})
    assert refused.status_code == 400
    # Bob's judge naming "mine" gets Bob's template, not Alice's.
    judge = {"name": "j", **JUDGE, "template": "mine"}
    assert _post(bob, "judges_api:judge_create", judge).status_code == 201
    assert JudgeConfig.objects.get(name="j").template.owner.username == "bob"


def test_a_dataset_name_resolves_to_the_callers_own_first(bob, other_organizer, small_dataset):
    own = Dataset.objects.create(name=small_dataset.name, owner=other_organizer)
    r = _post(bob, "api-studies", _study(small_dataset.name))
    assert r.status_code == 400  # his own dataset of that name has no questions: it was chosen
    assert Dataset.objects.filter(name="tiny").count() == 2
    own.delete()
    assert _post(bob, "api-studies", _study(small_dataset.name)).status_code == 201


def test_imported_raters_are_the_importers_own(
    alice, bob, organizer, other_organizer, small_dataset
):
    assert _import_ratings(alice, small_dataset.name, "panel", "scores").status_code == 201
    assert _import_ratings(bob, small_dataset.name, "panel", "scores").status_code == 201
    alices = Rater.objects.get(name="panel", owner=organizer)
    bobs = Rater.objects.get(name="panel", owner=other_organizer)
    assert alices != bobs
    bob_study = Study.objects.get(name="scores", owner=other_organizer)
    assert set(Rating.objects.filter(item__study=bob_study).values_list("rater", flat=True)) == {
        bobs.pk
    }
    # Bob's report and export list only his rater.
    export = bob.get(f"/api/studies/{bob_study.pk}/export/", {"what": "ratings"})
    assert export.status_code == 200
    text = b"".join(export.streaming_content).decode()
    assert alices.pseudonym not in text
    assert bobs.pseudonym in text


def test_the_command_line_asks_for_the_id_when_a_name_is_ambiguous(
    organizer, other_organizer, tmp_path
):
    a = make_study(owner=organizer, status=Study.Status.DRAFT)
    b = make_study(owner=other_organizer, status=Study.Status.DRAFT)
    Study.objects.filter(pk=b.pk).update(name=a.name)
    with pytest.raises(CommandError, match=rf"Several studies are named .*ids {a.pk}, {b.pk}"):
        call_command("export_data", "--study", a.name, "--what", "responses", stdout=StringIO())
    out = tmp_path / "b.csv"
    call_command("export_data", "--study", str(b.pk), "--what", "responses", "--out", str(out))
    assert b.dataset.name in out.read_text()


def test_the_command_line_import_picks_the_shared_dataset_then_the_only_one(
    organizer, other_organizer, small_dataset, tmp_path
):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"type": "question", "question_id": "cli", "text": "?"}))
    Dataset.objects.create(name=small_dataset.name, owner=organizer)
    dataset_import(format="jsonl", paths=[path], dataset=small_dataset.name)
    assert small_dataset.questions.filter(external_id="cli").exists()  # the shared one
    Dataset.objects.create(name="twice", owner=organizer)
    Dataset.objects.create(name="twice", owner=other_organizer)
    from annotation.importers import ImportRefused

    with pytest.raises(ImportRefused, match="Several datasets are named 'twice'"):
        dataset_import(format="jsonl", paths=[path], dataset="twice")


def test_the_migration_splits_a_rater_two_organizers_shared(organizer, other_organizer):
    from importlib import import_module

    split = import_module("evaluation.migrations.0006_names_unique_per_owner").raters_per_owner
    studies = [make_study(owner=o) for o in (organizer, other_organizer, None)]
    shared = Rater.objects.create(kind="human", pool="onsite", name="alice")
    for study in studies:
        a = Assignment.objects.create(study=study, item=study.items.first(), rater=shared, seq=1)
        Rating.objects.create(item=a.item, rater=shared, assignment=a)
    split(apps, None)
    raters = Rater.objects.filter(name="alice")
    assert raters.count() == 3
    for study in studies:
        (rater,) = {a.rater for a in study.assignments.all()}
        assert rater.owner == study.owner
        assert set(Rating.objects.filter(item__study=study).values_list("rater", flat=True)) == {
            rater.pk
        }
    assert Rater.objects.get(pk=shared.pk).owner is None  # the command line's keeps it


def test_the_admin_checks_a_new_name_among_the_organizers_own(organizer, other_organizer):
    for user in (organizer, other_organizer):
        user.is_staff = True
        user.save()
        group = Group.objects.get(name=ORGANIZERS_GROUP)
        group.permissions.set(Permission.objects.filter(content_type__app_label="annotation"))
    Dataset.objects.create(name="mine", owner=organizer)
    url = reverse("admin:annotation_dataset_add")
    bob = _login(other_organizer)
    new = {"name": "mine", "created_at_0": "2026-01-01", "created_at_1": "00:00:00"}
    r = bob.post(url, new)
    assert r.status_code == 302, r.context["adminform"].form.errors  # Alice's name: free for Bob
    again = bob.post(url, new)
    assert again.status_code == 200
    assert "already exists" in again.content.decode()
    assert Dataset.objects.filter(name="mine").count() == 2
    rater_url = reverse("admin:annotation_rater_add")
    form = {"kind": "human", "pool": "public", "name": "panel", "nickname": "", "meta": "{}",
            "consented_at_0": "", "consented_at_1": ""}  # fmt: skip
    assert _login(organizer).post(rater_url, form).status_code == 302
    assert bob.post(rater_url, form).status_code == 302
    assert bob.post(rater_url, form).status_code == 200  # his own twice: a form error
    assert Rater.objects.filter(name="panel").count() == 2


def test_the_judge_and_template_pages_check_names_among_the_organizers_own(alice, bob, organizer):
    from evaluation.services import judge_config_create, prompt_template_create

    judge_config_create(name="strict", owner=organizer, **JUDGE)
    judge_config_create(name="from the command line", **JUDGE)
    prompt_template_create(key="mine", name="t", kind="star", parser="stars", user=STAR_PROMPT,
                           owner=organizer)  # fmt: skip
    form = {**JUDGE, "model": "m", "temperature": "0", "max_tokens": "512", "seed": "0",
            "template": "", "price_in_per_1k": "0", "price_out_per_1k": "0", "json_mode": "auto",
            "concurrency": "4", "timeout_s": "30", "max_attempts": "3"}  # fmt: skip
    for name in ("strict", "from the command line"):
        r = bob.post(reverse("judges:new"), {**form, "name": name})
        assert r.status_code == 302, r.content.decode()[:2000]
    again = bob.post(reverse("judges:new"), {**form, "name": "strict"})
    assert again.status_code == 200 and "already exists" in again.content.decode()
    template = {"key": "mine", "name": "t", "kind": "star", "parser": "stars", "user": STAR_PROMPT}
    assert bob.post(reverse("judges:templates"), template).status_code == 302
    again = bob.post(reverse("judges:templates"), template)
    assert again.status_code == 200 and "already exists" in again.content.decode()
    assert PromptTemplate.objects.filter(key="mine").count() == 2


def test_the_admin_gives_organizers_no_llm_name_to_probe(organizer):
    organizer.is_staff = True
    organizer.save()
    Group.objects.get(name=ORGANIZERS_GROUP).permissions.set(
        Permission.objects.filter(content_type__app_label="annotation")
    )
    LLM.objects.create(name="someone-elses-private-model")
    mine = LLM.objects.create(name="unused")
    alice = _login(organizer)
    assert alice.post(reverse("admin:annotation_llm_add"), {"name": "x"}).status_code == 403
    url = reverse("admin:annotation_llm_change", args=[mine.pk])
    r = alice.post(url, {"name": "someone-elses-private-model", "description": "d"})
    assert r.status_code == 302
    mine.refresh_from_db()
    assert (mine.name, mine.description) == ("unused", "d")


def test_a_new_builtin_template_leaves_an_organizers_template_of_that_key_alone(organizer):
    from evaluation.prompts import DEFAULT_BY_MODE, ensure_builtin_templates
    from evaluation.services import judge_config_create, template_for_study

    key = DEFAULT_BY_MODE["star"]
    PromptTemplate.objects.filter(key=key).delete()  # as before a release that ships it
    mine = PromptTemplate.objects.create(key=key, name="mine", kind="star", parser="stars",
                                         user=STAR_PROMPT, owner=organizer)  # fmt: skip
    ensure_builtin_templates()
    mine.refresh_from_db()
    assert (mine.owner, mine.builtin, mine.name) == (organizer, False, "mine")
    judge = judge_config_create(name="j", owner=organizer, **JUDGE)
    study = make_study(owner=organizer, status=Study.Status.DRAFT)
    assert template_for_study(judge=judge, study=study).builtin


def test_deleting_an_organizer_whose_names_the_shared_rows_use_works(organizer, small_dataset):
    from evaluation.services import judge_config_create, prompt_template_create

    mine = Dataset.objects.create(name=small_dataset.name, owner=organizer)
    judge_config_create(name="strict", **JUDGE)  # the command line's
    own_judge = judge_config_create(name="strict", owner=organizer, **JUDGE)
    own_template = prompt_template_create(key="t", name="t", kind="star", parser="stars",
                                          user=STAR_PROMPT, owner=organizer)  # fmt: skip
    prompt_template_create(key="t", name="t", kind="star", parser="stars", user=STAR_PROMPT)
    organizer.delete()
    mine.refresh_from_db()
    own_judge.refresh_from_db()
    own_template.refresh_from_db()
    assert (mine.owner, mine.name) == (None, f"tiny (#{mine.pk})")
    assert own_judge.name == f"strict (#{own_judge.pk})"
    assert Rater.objects.get(pk=own_judge.rater_id).name == f"strict (#{own_judge.rater_id})"
    assert own_template.key == f"t-{own_template.pk}"
