"""The data API: organizers read data, create and update their studies, import and export;
anonymous users, annotators and other organizers are kept out."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token

from annotation.models import ImportRecord, Question, Rating, Score, Study
from annotation.services import study_create
from tests.data.conftest import FIXTURES, l2_files, table_counts


@pytest.fixture
def alice_study(organizer, small_dataset, star_rubric):
    return study_create(
        name="Alice's study",
        dataset=small_dataset,
        mode="star",
        rubric=star_rubric,
        owner=organizer,
    )


def test_organizer_lists_datasets_questions_responses_llms_and_rubrics(
    organizer_client, small_dataset
):
    r = organizer_client.get("/api/datasets/")
    assert r.status_code == 200
    assert r.json()["results"][0]["name"] == "tiny"
    assert r.json()["results"][0]["n_questions"] == 2

    r = organizer_client.get("/api/questions/", {"dataset": "tiny", "kind": "objective"})
    assert [q["external_id"] for q in r.json()["results"]] == ["Q1"]

    q = Question.objects.get(external_id="Q2")
    r = organizer_client.get("/api/responses/", {"question": q.pk, "llm": "model-y"})
    (resp,) = r.json()["results"]
    assert resp["llm"] == "model-y" and resp["question_external_id"] == "Q2"
    assert organizer_client.get(f"/api/responses/{resp['id']}/").json()["text"] == resp["text"]

    assert organizer_client.get("/api/llms/").json()["count"] == 3
    rubric = organizer_client.get("/api/rubrics/llmeval2/").json()
    assert rubric["mode"] == "star" and len(rubric["criteria"]) == 6


def test_organizer_creates_a_study_through_the_service(organizer_client, organizer, small_dataset):
    r = organizer_client.post(
        "/api/studies/",
        {
            "name": "Pairs",
            "dataset": "tiny",
            "mode": "pairwise",
            "rubric": "pairwise",
            "pair_design": "baseline",
            "baseline_llm": "model-x",
            "ratings_per_item": 5,
        },
        content_type="application/json",
    )
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["owner"] == organizer.username and body["n_items"] == 4
    study = Study.objects.get(name="Pairs")
    assert study.owner == organizer and study.ratings_per_item == 5
    assert study.items.count() == 4


def test_creating_a_study_with_a_rubric_of_the_other_mode_is_a_400(organizer_client, small_dataset):
    r = organizer_client.post(
        "/api/studies/",
        {"name": "Bad", "dataset": "tiny", "mode": "star", "rubric": "pairwise"},
        content_type="application/json",
    )
    assert r.status_code == 400
    assert "rubric" in r.json()
    assert not Study.objects.exists()


def test_organizer_lists_and_updates_only_their_own_studies(
    organizer_client, alice_study, other_organizer, small_dataset, star_rubric
):
    study_create(
        name="Bob's study",
        dataset=small_dataset,
        mode="star",
        rubric=star_rubric,
        owner=other_organizer,
    )
    r = organizer_client.get("/api/studies/")
    assert [s["name"] for s in r.json()["results"]] == ["Alice's study"]

    r = organizer_client.patch(
        f"/api/studies/{alice_study.pk}/",
        {"repeat_rate": 0.1, "instructions": "Be careful."},
        content_type="application/json",
    )
    assert r.status_code == 200, r.content
    alice_study.refresh_from_db()
    assert alice_study.repeat_rate == 0.1 and alice_study.instructions == "Be careful."


def test_an_invalid_update_is_a_400_and_changes_nothing(organizer_client, alice_study):
    r = organizer_client.patch(
        f"/api/studies/{alice_study.pk}/", {"repeat_rate": 0.9}, content_type="application/json"
    )
    assert r.status_code == 400
    alice_study.refresh_from_db()
    assert alice_study.repeat_rate == 0.02


def test_other_organizer_cannot_see_edit_or_export_alices_study(
    client, other_organizer, alice_study
):
    client.force_login(other_organizer)
    assert client.get(f"/api/studies/{alice_study.pk}/").status_code == 404
    r = client.patch(
        f"/api/studies/{alice_study.pk}/", {"name": "mine"}, content_type="application/json"
    )
    assert r.status_code == 404
    assert client.get(f"/api/studies/{alice_study.pk}/export/").status_code == 404
    assert client.get("/api/studies/").json()["count"] == 0
    alice_study.refresh_from_db()
    assert alice_study.name == "Alice's study"


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/api/datasets/"),
        ("get", "/api/questions/"),
        ("get", "/api/responses/"),
        ("get", "/api/llms/"),
        ("get", "/api/rubrics/"),
        ("get", "/api/studies/"),
        ("post", "/api/studies/"),
        ("get", "/api/imports/"),
        ("post", "/api/imports/"),
        ("get", "/api/studies/{pk}/"),
        ("patch", "/api/studies/{pk}/"),
        ("get", "/api/studies/{pk}/export/"),
    ],
)
def test_anonymous_users_and_annotators_are_refused(
    client, annotator_user, alice_study, method, url
):
    url = url.format(pk=alice_study.pk)
    assert getattr(client, method)(url).status_code in (401, 403)
    client.force_login(annotator_user)
    assert getattr(client, method)(url).status_code == 403


def test_token_authentication_works(client, organizer, small_dataset):
    token = Token.objects.create(user=organizer)
    r = client.get("/api/datasets/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert r.status_code == 200


@pytest.mark.parametrize("header", ["Token \u0661\u0662", "Token \u00e9", "Token a b", "Token"])
def test_a_malformed_token_header_is_refused_not_a_500(header, small_dataset):
    from django.test import Client

    # A client that answers as a server would (an unhandled error is a 500 page, not a raise).
    r = Client(raise_request_exception=False).get("/api/datasets/", HTTP_AUTHORIZATION=header)
    # 403, as DRF answers any bad token when session authentication comes first.
    assert r.status_code == 403 and "Invalid token header" in r.json()["detail"]


def _upload(path):
    return SimpleUploadedFile(path.name, path.read_bytes())


def test_organizer_imports_files_and_gets_the_counts(organizer_client, organizer):
    files = [_upload(p) for p in l2_files("results/gpt-score")]
    r = organizer_client.post(
        "/api/imports/", {"format": "llmeval2-scores", "folder": "gpt-score", "files": files}
    )
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["added"]["ratings"] == Rating.objects.count() > 0
    assert body["added"]["scores"] == Score.objects.count()
    assert any("hint was a JSON number" in line for line in body["repairs"])
    study = Study.objects.get(pk=body["study_ids"][0])
    assert study.owner == organizer
    assert Rating.objects.filter(rater__name="GPT-4 (LLMEval-2)").exists()
    record = ImportRecord.objects.get(pk=body["record_id"])
    assert record.user == organizer and record.ok
    assert organizer_client.get("/api/imports/").json()["count"] == 1

    again = organizer_client.post(
        "/api/imports/",
        {
            "format": "llmeval2-scores",
            "folder": "gpt-score",
            "files": [_upload(p) for p in l2_files("results/gpt-score")],
        },
    )
    assert again.status_code == 201
    assert sum(again.json()["added"].values()) == 0


def test_a_refused_import_is_a_400_naming_file_and_record(organizer_client, tmp_path):
    src = l2_files("data")[0]
    bad = src.read_text(encoding="utf-8").replace('"type": "A"', '"type": "Z"', 1)
    upload = SimpleUploadedFile(src.name, bad.encode("utf-8"))
    before = table_counts()
    r = organizer_client.post("/api/imports/", {"format": "llmeval2", "files": [upload]})
    assert r.status_code == 400
    assert src.name in r.json()["detail"] and "record 0" in r.json()["detail"]
    assert table_counts() == before


def test_a_refused_generic_import_lists_every_bad_line(organizer_client):
    lines = [
        {"type": "nope", "question_id": "Q1"},
        {"type": "response", "question_id": "", "llm": "m", "text": "x"},
    ]
    body = "\n".join(json.dumps(r) for r in lines) + "\n"
    upload = SimpleUploadedFile("mixed.jsonl", body.encode("utf-8"))
    before = table_counts()
    r = organizer_client.post(
        "/api/imports/", {"format": "jsonl", "dataset": "mine", "files": [upload]}
    )
    assert r.status_code == 400
    errors = r.json()["errors"]
    assert [e.split(":")[0] for e in errors] == ["mixed.jsonl, line 1", "mixed.jsonl, line 2"]
    assert table_counts() == before


def test_score_uploads_without_a_folder_or_rater_are_refused(organizer_client):
    files = [_upload(l2_files("results/gpt-score")[0])]
    r = organizer_client.post("/api/imports/", {"format": "llmeval2-scores", "files": files})
    assert r.status_code == 400 and "--rater" in r.json()["detail"]


def test_organizer_exports_their_study(organizer_client, organizer):
    organizer_client.post(
        "/api/imports/",
        {
            "format": "chinese-alpaca-eval",
            "files": [
                _upload(FIXTURES / "chinese-alpaca-eval" / "data" / "chinese_alpaca_eval.jsonl"),
                _upload(
                    FIXTURES
                    / "chinese-alpaca-eval"
                    / "results"
                    / "gpt-4-0613_vs_text-davinci-003.jsonl"
                ),
            ],
        },
    )
    study = Study.objects.get(name="ChineseAlpacaEval (imported judgments)")
    assert study.owner == organizer
    r = organizer_client.get(
        f"/api/studies/{study.pk}/export/", {"what": "ratings", "file_format": "csv"}
    )
    assert r.status_code == 200
    assert r["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(r.streaming_content).decode("utf-8"))))
    assert len(rows) == Rating.objects.filter(item__study=study).count() == 2
    r = organizer_client.get(
        f"/api/studies/{study.pk}/export/", {"what": "responses", "file_format": "xlsx"}
    )
    assert r.status_code == 200 and b"".join(r.streaming_content)[:2] == b"PK"
    r = organizer_client.get(f"/api/studies/{study.pk}/export/", {"file_format": "pdf"})
    assert r.status_code == 400


def test_the_schema_lists_every_data_operation(organizer_client):
    r = organizer_client.get("/api/schema/", {"format": "json"})
    assert r.status_code == 200
    paths = r.json()["paths"]
    for p in (
        "/api/datasets/",
        "/api/questions/",
        "/api/responses/",
        "/api/llms/",
        "/api/rubrics/",
        "/api/studies/",
        "/api/studies/{id}/",
        "/api/imports/",
        "/api/studies/{id}/export/",
    ):
        assert p in paths
    assert "post" in paths["/api/studies/"] and "patch" in paths["/api/studies/{id}/"]
    assert "post" in paths["/api/imports/"]
