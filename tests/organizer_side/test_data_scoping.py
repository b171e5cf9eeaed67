"""No path from one organizer to another's data: datasets, questions, answers and LLMs.

Alice owns a dataset whose every name and text holds the marker ALICE-SECRET; a shared catalogue
dataset (no owner: loaded from the command line) is read by every organizer. Bob, another
organizer, must see the catalogue and nothing of Alice's: not listed, a 404 when fetched, refused
as a missing one when named in a study, and not appended to when he imports under its name.
"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotation.importers import dataset_import
from annotation.models import LLM, Criterion, Dataset, Question, Response, Study
from annotation.permissions import datasets_visible
from tests.factories import make_study, table_counts

pytestmark = pytest.mark.django_db

SECRET = "ALICE-SECRET"


@pytest.fixture
def alice_data(organizer) -> Dataset:
    dataset = Dataset.objects.create(name=f"{SECRET} dataset", owner=organizer)
    llm = LLM.objects.create(name=f"{SECRET}-model")
    shared_llm = LLM.objects.get_or_create(name="model-x")[0]
    for i in range(2):
        q = Question.objects.create(
            dataset=dataset, external_id=f"{SECRET}-q{i}", text=f"{SECRET} question {i}",
            task_type=f"{SECRET} task",
        )  # fmt: skip
        Response.objects.create(question=q, llm=llm, text=f"{SECRET} answer {i}")
        Response.objects.create(question=q, llm=shared_llm, text=f"{SECRET} other answer {i}")
    return dataset


@pytest.fixture
def bob_client(other_organizer):
    client = Client()  # not the `client` fixture, which organizer_client logs in as Alice
    client.force_login(other_organizer)
    return client


def _get(client, url, **params):
    response = client.get(url, params)
    return response.status_code, response.content.decode()


def test_the_rule(organizer, other_organizer, alice_data, small_dataset):
    root = User.objects.create_superuser("root", password="root-pass-123")
    assert set(datasets_visible(organizer)) == {alice_data, small_dataset}
    assert set(datasets_visible(other_organizer)) == {small_dataset}
    assert set(datasets_visible(root)) == {alice_data, small_dataset}
    # A study of Bob's over a dataset (a superuser made it for him) lets him read that dataset.
    make_study(owner=other_organizer, dataset=alice_data)
    assert set(datasets_visible(other_organizer)) == {alice_data, small_dataset}


@pytest.mark.parametrize("resource", ["datasets", "questions", "responses", "llms"])
def test_data_api_lists_show_the_catalogue_not_another_organizers_data(
    bob_client, organizer_client, alice_data, small_dataset, resource
):
    status, body = _get(bob_client, f"/api/{resource}/")
    assert status == 200
    assert SECRET not in body
    assert json.loads(body)["count"] > 0  # the shared catalogue is there
    _, own = _get(organizer_client, f"/api/{resource}/")
    assert SECRET in own  # Alice sees her own


@pytest.mark.parametrize("resource", ["questions", "responses"])
def test_filtering_by_another_organizers_dataset_finds_nothing(bob_client, alice_data, resource):
    for value in (alice_data.pk, alice_data.name):
        status, body = _get(bob_client, f"/api/{resource}/", dataset=value)
        assert status == 200
        assert json.loads(body)["count"] == 0
    status, body = _get(bob_client, "/api/responses/", llm=f"{SECRET}-model")
    assert json.loads(body)["count"] == 0


def test_details_of_another_organizers_data_are_not_found(bob_client, alice_data):
    question = alice_data.questions.first()
    urls = [
        f"/api/datasets/{alice_data.pk}/",
        f"/api/questions/{question.pk}/",
        f"/api/responses/{question.responses.first().pk}/",
    ]
    for url in urls:
        status, body = _get(bob_client, url)
        assert status == 404, url
        assert SECRET not in body


def test_llm_answer_counts_cover_only_visible_datasets(bob_client, alice_data, small_dataset):
    _, body = _get(bob_client, "/api/llms/")
    counts = {row["name"]: row["n_responses"] for row in json.loads(body)["results"]}
    assert counts["model-x"] == 2  # its two answers in the catalogue, not Alice's two


def _study_body(dataset_name: str, **extra) -> dict:
    return {"name": "bob's study", "dataset": dataset_name, "mode": "star", "rubric": "llmeval2",
            **extra}  # fmt: skip


def test_study_api_refuses_another_organizers_dataset_as_a_missing_one(
    bob_client, alice_data, small_dataset
):
    theirs = bob_client.post("/api/studies/", _study_body(alice_data.name), "application/json")
    missing = bob_client.post("/api/studies/", _study_body("no such"), "application/json")
    assert theirs.status_code == missing.status_code == 400
    assert theirs.json()["dataset"] == [
        m.replace("no such", alice_data.name) for m in missing.json()["dataset"]
    ]
    body = _study_body(small_dataset.name, baseline_llm=f"{SECRET}-model", pair_design="baseline")
    r = bob_client.post("/api/studies/", {**body, "mode": "pairwise", "rubric": "pairwise"},
                        "application/json")  # fmt: skip
    assert r.status_code == 400 and "baseline_llm" in r.json()
    assert not Study.objects.exists()
    ok = bob_client.post("/api/studies/", _study_body(small_dataset.name), "application/json")
    assert ok.status_code == 201, ok.content


def test_study_page_neither_offers_nor_accepts_another_organizers_dataset(
    bob_client, alice_data, small_dataset
):
    url = reverse("organize:study_new")
    status, page = _get(bob_client, url, dataset=alice_data.pk)
    assert status == 200
    assert SECRET not in page  # not in the dataset choices, nor its task types and LLMs
    assert small_dataset.name in page
    form = {"name": "bob's study", "dataset": alice_data.pk, "mode": "star",
            "rubric": Study._meta.get_field("rubric").related_model.objects.get(key="llmeval2").pk,
            "ratings_per_item": 1, "repeat_rate": 0, "pair_design": "all",
            "hint_policy": "hidden", "assignment_mode": "random"}  # fmt: skip
    r = bob_client.post(url, form)
    assert r.status_code == 200
    assert "does not exist" in r.content.decode()
    assert SECRET not in r.content.decode()
    assert not Study.objects.exists()


# --- imports ----------------------------------------------------------------------------------


def _jsonl(*records: dict) -> SimpleUploadedFile:
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in records)
    return SimpleUploadedFile("data.jsonl", text.encode())


NEW_QUESTION = {"type": "question", "question_id": "bob-q", "text": "Bob's question"}
NEW_ANSWER = {"type": "response", "question_id": "bob-q", "llm": "model-x", "text": "Bob's"}


def _import(client, dataset: str, *records: dict, **fields):
    body = {"format": "jsonl", "dataset": dataset, "files": [_jsonl(*records)], **fields}
    return client.post("/api/imports/", body)


def test_import_under_another_organizers_dataset_name_makes_the_importers_own(
    bob_client, other_organizer, alice_data
):
    r = _import(bob_client, alice_data.name, NEW_QUESTION, NEW_ANSWER)
    assert r.status_code == 201, r.content
    body = r.content.decode()
    assert "question 0" not in body and "-model" not in body  # nothing of Alice's content
    bobs = Dataset.objects.get(name=alice_data.name, owner=other_organizer)
    assert bobs != alice_data
    assert list(bobs.questions.values_list("external_id", flat=True)) == ["bob-q"]
    assert alice_data.questions.count() == 2


def test_import_of_new_questions_into_the_shared_catalogue_is_refused(bob_client, small_dataset):
    before = table_counts()
    r = _import(bob_client, small_dataset.name, NEW_QUESTION, NEW_ANSWER)
    assert r.status_code == 400
    assert "shared catalogue" in r.json()["detail"]
    assert table_counts() == before


def test_scores_of_the_catalogues_answers_import_into_the_organizers_own_study(
    bob_client, other_organizer, small_dataset
):
    key = Criterion.objects.filter(rubric__key="llmeval2").values_list("key", flat=True).first()
    rating = {"type": "rating", "question_id": "Q1", "llm": "model-x", "rater": "bob's panel",
              "scores": {key: 3}}  # fmt: skip
    r = _import(bob_client, small_dataset.name, rating, rubric="llmeval2", study="bob's scores")
    assert r.status_code == 201, r.content
    assert Study.objects.get(name="bob's scores").owner == other_organizer
    assert small_dataset.questions.count() == 2


def test_import_under_another_organizers_study_name_makes_the_importers_own(
    bob_client, organizer, other_organizer, small_dataset
):
    alice_study = make_study(owner=organizer, dataset=small_dataset, status=Study.Status.CLOSED)
    key = Criterion.objects.filter(rubric__key="llmeval2").values_list("key", flat=True).first()
    rating = {"type": "rating", "question_id": "Q1", "llm": "model-x", "rater": "bob's panel",
              "scores": {key: 3}}  # fmt: skip
    r = _import(bob_client, small_dataset.name, rating, rubric="llmeval2", study=alice_study.name)
    assert r.status_code == 201, r.content
    bobs = Study.objects.get(name=alice_study.name, owner=other_organizer)
    assert bobs.items.count() == 1
    assert not alice_study.assignments.exists()


def test_own_dataset_and_the_command_line_still_append(organizer, alice_data, tmp_path):
    path = tmp_path / "more.jsonl"
    path.write_text(json.dumps(NEW_QUESTION) + "\n" + json.dumps(NEW_ANSWER) + "\n")
    dataset_import(format="jsonl", paths=[path], user=organizer, dataset=alice_data.name)
    assert alice_data.questions.count() == 3
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({**NEW_QUESTION, "question_id": "cli-q"}) + "\n")
    dataset_import(format="jsonl", paths=[other], dataset=alice_data.name)  # no user: the CLI
    assert alice_data.questions.count() == 4


def test_the_import_command_as_another_user_makes_their_own(other_organizer, alice_data, tmp_path):
    path = tmp_path / "more.jsonl"
    path.write_text(json.dumps(NEW_QUESTION) + "\n")
    dataset_import(format="jsonl", paths=[path], user=other_organizer, dataset=alice_data.name)
    assert alice_data.questions.count() == 2
    assert Dataset.objects.get(name=alice_data.name, owner=other_organizer).questions.count() == 1


def test_a_judge_cannot_use_another_organizers_template(bob_client, organizer):
    from evaluation.services import prompt_template_create

    prompt_template_create(
        key="alice-tpl", name="t", kind="star", parser="stars",
        user="Question: {question}\nAnswer: {answer}\nRate it.", owner=organizer,
    )  # fmt: skip
    url = reverse("judges_api:judge_create")
    body = {"name": "bob-judge", "base_url": "https://judge.example/v1", "api_key_env": "X"}
    theirs = bob_client.post(url, {**body, "template": "alice-tpl"}, "application/json")
    missing = bob_client.post(url, {**body, "template": "no-such"}, "application/json")
    assert theirs.status_code == missing.status_code == 400
    assert theirs.json()["template"] == [
        m.replace("no-such", "alice-tpl") for m in missing.json()["template"]
    ]


def test_import_counts_do_not_tell_that_another_organizers_llm_exists(bob_client, alice_data):
    answer = {**NEW_ANSWER, "llm": f"{SECRET}-model"}
    r = _import(bob_client, "bob's data", NEW_QUESTION, answer)
    assert r.status_code == 201, r.content
    assert r.json()["added"]["llms"] == 1  # as for a name nobody used
    assert r.json()["skipped"].get("llms", 0) == 0
