"""JSON that json.loads accepts but nothing after it can handle: nesting deeper than Python's
stack, and lone surrogates ("\\ud800", half of a UTF-16 pair: no database text stores one and
no answer that echoes it can be encoded). Every API body, uploaded JSON/JSONL file and pasted
JSON text refuses them with a 400 and writes nothing. Also: import times that leave the years
1-9999 once read as UTC."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Dataset, Item, Question, Study
from tests.engine.conftest import make_study

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000
LONE = '"\\ud800"'  # JSON text of a lone surrogate


@pytest.fixture
def study(organizer):
    return make_study(owner=organizer, status=Study.Status.DRAFT)


@pytest.fixture
def api(organizer_client):
    return organizer_client


def _counts() -> tuple[int, ...]:
    return tuple(m.objects.count() for m in (Study, Item, Dataset, Question))


def _assert_refused(response, before) -> str:
    assert response.status_code == 400, response.content[:300]
    assert _counts() == before
    return response.content.decode()


@pytest.mark.parametrize("field", ["name", "dataset", "rubric", "baseline_llm"])
def test_a_lone_surrogate_in_any_api_json_field_is_a_400_that_writes_nothing(api, study, field):
    body = {"name": "s", "dataset": study.dataset.name, "mode": "star", "rubric": "llmeval2"}
    raw = json.dumps(body)[:-1] + f', "{field}": {LONE}}}'
    before = _counts()
    response = api.post("/api/studies/", raw, content_type="application/json")
    assert "surrogate" in _assert_refused(response, before)


def test_a_lone_surrogate_in_an_api_key_is_refused_too(api, study):
    raw = '{"instruction": "i", "text_a": "a", "answer": {"scores": {' + LONE + ": [1, 2]}}}"
    before = _counts()
    response = api.post(
        f"/api/studies/{study.pk}/checks/attention/", raw, content_type="application/json"
    )
    _assert_refused(response, before)


def test_a_valid_surrogate_pair_is_an_ordinary_character(api, study):
    raw = json.dumps({"name": "emoji", "instructions": "\U0001f600"}, ensure_ascii=True)
    assert "\\ud83d\\ude00" in raw
    response = api.patch(f"/api/studies/{study.pk}/", raw, content_type="application/json")
    assert response.status_code == 200, response.content
    study.refresh_from_db()
    assert study.instructions == "\U0001f600"


@pytest.mark.parametrize(
    ("content", "why"), [(DEEP, "nested too deeply"), (f'[{{"question_id": {LONE}}}]', "surrogate")]
)
def test_gold_json_pasted_uploaded_or_sent_to_the_api_is_a_400(api, study, content, why):
    before = _counts()
    url = f"/organize/studies/{study.pk}/quality/gold/"
    page = api.post(url, {"format": "json", "text": content})
    assert why in _assert_refused(page, before)
    upload = SimpleUploadedFile("gold.json", content.encode())
    assert why in _assert_refused(api.post(url, {"format": "json", "file": upload}), before)
    body = json.dumps({"format": "json", "content": content})
    response = api.post(
        f"/api/studies/{study.pk}/checks/gold/", body, content_type="application/json"
    )
    assert why in _assert_refused(response, before)
    assert not Item.objects.filter(check_kind=Item.CheckKind.GOLD).exists()


def _import(api, name: str, text: str):
    upload = SimpleUploadedFile(name, text.encode())
    data = {"format": "jsonl", "dataset": "hostile", "rubric": "llmeval2", "files": [upload]}
    return api.post("/api/imports/", data)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (DEEP, "nested too deeply"),
        ('{"type": "question", "question_id": "Q1", "text": ' + LONE + "}", "surrogate"),
        ('{"type": "question", "question_id": ' + LONE + ', "text": "t"}', "surrogate"),
    ],
)
def test_an_import_line_json_cannot_hold_is_refused_by_line(api, line, why):
    before = _counts()
    text = '{"type": "question", "question_id": "Q0", "text": "fine"}\n' + line + "\n"
    body = _assert_refused(_import(api, "data.jsonl", text), before)
    assert "data.jsonl, line 2" in body and why in body


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_an_import_time_outside_the_years_1_to_9999_in_utc_is_refused(api, when):
    rows = [
        {"type": "question", "question_id": "Q1", "text": "t"},
        {"type": "response", "question_id": "Q1", "llm": "m", "text": "a"},
        {"type": "rating", "question_id": "Q1", "llm": "m", "rater": "r",
         "scores": {"overall": 1}, "submitted_at": when},
    ]  # fmt: skip
    before = _counts()
    text = "".join(json.dumps(r) + "\n" for r in rows)
    body = _assert_refused(_import(api, "times.jsonl", text), before)
    assert "submitted_at must be an ISO 8601 time" in body


def test_a_pairwise_csv_time_outside_the_years_1_to_9999_is_refused(api):
    text = (
        "type,question_id,text,llm,llm_a,llm_b,rater,choice,submitted_at\n"
        "question,Q1,t,,,,,,\n"
        "response,Q1,a,m1,,,,,\n"
        "response,Q1,b,m2,,,,,\n"
        "pairwise,Q1,,,m1,m2,r,a,0001-01-01T00:00:00+14:00\n"
    )
    upload = SimpleUploadedFile("pairs.csv", text.encode())
    before = _counts()
    response = api.post("/api/imports/", {"format": "csv", "dataset": "p", "files": [upload]})
    assert "submitted_at must be an ISO 8601 time" in _assert_refused(response, before)


def test_an_overlong_search_is_a_400_not_a_database_error(client, organizer):
    # SQLite refuses a LIKE pattern over 50,000 bytes ("LIKE or GLOB pattern too complex"): a
    # 70,000-character search was a 500, found by test_hostile_input's Hypothesis run.
    client.force_login(organizer)
    response = client.get("/api/questions/", {"search": "x" * 70_000})
    assert response.status_code == 400 and "at most 1000" in str(response.json()["search"])
    assert client.get("/api/questions/", {"search": "x" * 1000}).status_code == 200


ADMIN_JSON = {
    "nested": "[" * 100_000 + "]" * 100_000,
    "lone surrogate": '{"a": "\\ud800"}',
    "nul": '{"a": "x\\u0000y"}',
}


def _admin_json_forms():
    """(add URL, JSON field names) of every admin add form with a JSON field."""
    from django.contrib import admin
    from django.db import models
    from django.urls import reverse

    for model in admin.site._registry:
        fields = [f.name for f in model._meta.fields if isinstance(f, models.JSONField)]
        if fields:
            meta = model._meta
            yield reverse(f"admin:{meta.app_label}_{meta.model_name}_add"), fields


@pytest.mark.parametrize("why", list(ADMIN_JSON))
def test_json_no_database_stores_is_a_field_error_in_every_admin_form(client, db, why):
    # Django's JSON form field lets a RecursionError through (a 500) and hands a lone surrogate
    # or a NUL to the database; the admin's forms refuse all three as invalid JSON.
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_superuser("root", password="root-pass-123"))
    checked = 0
    for url, fields in _admin_json_forms():
        response = client.post(url, dict.fromkeys(fields, ADMIN_JSON[why]))
        if response.status_code == 302:  # studies are made on the organizer's page
            assert response["Location"] == "/organize/studies/new/", url
            continue
        assert response.status_code in (200, 403), (url, response.status_code)
        if response.status_code == 200:
            assert b"Enter a valid JSON" in response.content, url
            checked += 1
    # The rubric page's criteria rows (an inline) carry a JSON field too.
    inline = {
        "key": "hostile", "name_en": "Hostile", "mode": "star",
        "criteria-TOTAL_FORMS": "1", "criteria-INITIAL_FORMS": "0",
        "criteria-0-order": "0", "criteria-0-key": "k", "criteria-0-label_en": "K",
        "criteria-0-min_score": "1", "criteria-0-max_score": "3",
        "criteria-0-descriptions": ADMIN_JSON[why],
    }  # fmt: skip
    response = client.post("/admin/annotation/rubric/add/", inline)
    assert response.status_code == 200 and b"Enter a valid JSON" in response.content
    assert checked >= 3  # questions, criteria, raters at least
    assert not Question.objects.exists()
