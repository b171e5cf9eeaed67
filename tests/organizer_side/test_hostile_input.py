"""Property tests: random bytes, NUL, Unicode digits, 5,000-digit numbers and huge JSON sent to
every organizer form and API field never produce a 5xx, and a refused request stores nothing.

Run them on PostgreSQL (it refuses NUL in text and numbers beyond bigint, which SQLite stores):
DATABASE_URL=postgres://... pytest tests/organizer_side/test_hostile_input.py
"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.models import Dataset, ImportRecord, Item, Question, Rater, Study
from tests.engine.conftest import make_study

pytestmark = pytest.mark.django_db

HOSTILE_WORDS = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "²",
    "٣",
    "１２",
    "1_000",
    "9" * 5000,
    "-" + "9" * 5000,
    "99999999999999999999",
    "-1",
    "0",
    "1e309",
    "NaN",
    "inf",
    "1.5",
    "true",
    "null",
    "=1+1",
    "<script>alert(1)</script>",
    "'; DROP TABLE annotation_study; --",
    "x" * 70_000,
]
hostile_text = st.one_of(
    st.sampled_from(HOSTILE_WORDS),
    st.text(max_size=60),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
)
# What a JSON body may carry beyond text: numbers of any size, nesting, nulls.
hostile_json = st.recursive(
    st.one_of(
        hostile_text,
        st.integers(min_value=-(10**40), max_value=10**40),
        st.floats(allow_nan=False, allow_infinity=False),
        st.booleans(),
        st.none(),
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile_text, inner, max_size=4),
    max_leaves=12,
)
HYPOTHESIS = settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

STUDY_CREATE_FIELDS = [
    "name", "description", "instructions", "dataset", "mode", "rubric", "selection",
    "pair_design", "baseline_llm", "pairs_per_question", "seed", "ratings_per_item",
    "repeat_rate", "hint_policy", "reservation_timeout", "admit_onsite", "admit_crowd",
    "admit_public", "quota_onsite", "quota_crowd", "quota_public", "completion_code",
    "completion_url",
]  # fmt: skip
STUDY_UPDATE_FIELDS = [
    "name", "description", "instructions", "ratings_per_item", "repeat_rate", "hint_policy",
    "reservation_timeout", "admit_onsite", "admit_crowd", "admit_public", "quota_onsite",
    "quota_crowd", "quota_public", "completion_code", "completion_url",
]  # fmt: skip
STUDY_FORM_FIELDS = [
    "name", "dataset", "mode", "rubric", "instructions", "task_types", "max_questions", "llms",
    "pair_design", "baseline_llm", "pairs_per_question", "ratings_per_item", "repeat_rate",
    "hint_policy", "admit_onsite", "admit_crowd", "admit_public", "quota_onsite", "quota_crowd",
    "quota_public", "reservation_timeout", "completion_code", "completion_url",
]  # fmt: skip
REPORT_FIELDS = [
    "pool", "criterion", "task_type", "start", "end", "min_accuracy", "min_consistency",
    "exclude_simulated",
]  # fmt: skip


def _counts() -> dict[str, int]:
    models = (Study, Item, Dataset, Question, Rater, User, ImportRecord)
    return {m.__name__: m.objects.count() for m in models}


def _valid_study_body(study: Study) -> dict:
    return {
        "name": "fuzzed",
        "dataset": study.dataset.name,
        "mode": "star",
        "rubric": study.rubric.key,
    }


def _check(response, before: dict[str, int]) -> None:
    assert response.status_code < 500, response.content[:500]
    if response.status_code >= 400:
        assert _counts() == before, "a refused request stored something"
        body = response.content.decode("utf-8", "replace")
        assert body.strip(), "a 4xx needs a message"


@pytest.fixture
def study(organizer):
    return make_study(owner=organizer, status=Study.Status.DRAFT)


@pytest.fixture
def api(client, organizer):
    client.force_login(organizer)
    return client


@HYPOTHESIS
@given(data=st.data())
def test_study_create_api_survives_any_field_values(api, study, data):
    body = _valid_study_body(study)
    fields = data.draw(st.lists(st.sampled_from(STUDY_CREATE_FIELDS), min_size=1, max_size=4))
    for field in fields:
        body[field] = data.draw(hostile_json, label=field)
    before = _counts()
    _check(api.post("/api/studies/", body, content_type="application/json"), before)


@HYPOTHESIS
@given(data=st.data())
def test_study_update_api_survives_any_field_values_and_keeps_the_study_on_refusal(
    api, study, data
):
    fields = data.draw(st.lists(st.sampled_from(STUDY_UPDATE_FIELDS), min_size=1, max_size=4))
    body = {field: data.draw(hostile_json, label=field) for field in fields}
    before = Study.objects.filter(pk=study.pk).values().get()
    r = api.patch(f"/api/studies/{study.pk}/", body, content_type="application/json")
    assert r.status_code < 500, r.content[:500]
    if r.status_code >= 400:
        assert Study.objects.filter(pk=study.pk).values().get() == before


DEEP = 100_000
RAW_FIELDS = [
    '"quota_onsite": ' + "9" * 5000,
    '"name": ' + "[" * DEEP + "]" * DEEP,
    '"selection": ' + "[" * DEEP + "]" * DEEP,
    '"name": "\\u0000"',
    '"name": "a\\u0000b"',
    '"selection": {"task_types": ["\\u0000"]}',
    '"selection": {"\\u0000": 1}',
    '"selection": {"llms": ["x"], "max_questions": ' + "9" * 40 + "}",
    '"seed": 1e400',
    '"seed": ' + "9" * 30,
    '"repeat_rate": NaN',
    '"repeat_rate": Infinity',
    '"completion_code": "\\u0000"',
]
RAW_BODIES = ["\x00\xff\xfe", "[]", '"just a string"', "{", "null"]
PATCHABLE = {"name", "repeat_rate", "completion_code", "quota_onsite"}


@pytest.mark.parametrize("fragment", RAW_FIELDS)
def test_a_hostile_json_field_is_400_with_a_message_and_nothing_stored(api, study, fragment):
    valid = json.dumps(_valid_study_body(study))
    raw = valid[:-1] + ", " + fragment + "}"
    before = _counts()
    r = api.post("/api/studies/", raw, content_type="application/json")
    assert r.status_code == 400, (fragment[:40], r.status_code, r.content[:300])
    assert r.json()
    assert _counts() == before
    if fragment.split(":")[0].strip('"') in PATCHABLE:
        row = Study.objects.filter(pk=study.pk).values().get()
        r = api.patch(
            f"/api/studies/{study.pk}/", "{" + fragment + "}", content_type="application/json"
        )
        assert r.status_code == 400, (fragment[:40], r.status_code, r.content[:300])
        assert Study.objects.filter(pk=study.pk).values().get() == row


@pytest.mark.parametrize("raw", RAW_BODIES)
def test_a_body_that_is_not_a_json_object_is_400(api, study, raw):
    before = _counts()
    r = api.post("/api/studies/", raw.encode("latin-1"), content_type="application/json")
    assert r.status_code == 400 and r.json()
    r = api.patch(
        f"/api/studies/{study.pk}/", raw.encode("latin-1"), content_type="application/json"
    )
    assert r.status_code == 400 and r.json()
    assert _counts() == before


@HYPOTHESIS
@given(data=st.data())
def test_study_create_api_refuses_out_of_range_numbers(api, study, data):
    field = data.draw(
        st.sampled_from(
            [
                "pairs_per_question",
                "ratings_per_item",
                "reservation_timeout",
                "quota_onsite",
                "quota_crowd",
                "quota_public",
            ]  # fmt: skip
        )
    )
    value = data.draw(st.integers(min_value=2**31, max_value=10**40) | st.just(-(2**63) - 1))
    if data.draw(st.booleans()):
        field = "seed"
        value = data.draw(st.integers(min_value=2**63, max_value=10**40) | st.just(-1))
    body = {**_valid_study_body(study), field: value}
    before = _counts()
    r = api.post("/api/studies/", body, content_type="application/json")
    assert r.status_code == 400, (field, value, r.content[:300])
    assert field in r.json()
    assert _counts() == before


@HYPOTHESIS
@given(data=st.data())
def test_the_organizer_study_form_survives_any_field_values(api, study, data):
    form = {
        "name": "fuzzed",
        "dataset": str(study.dataset_id),
        "mode": "star",
        "rubric": str(study.rubric_id),
        "pair_design": "all",
        "ratings_per_item": "3",
        "repeat_rate": "0.02",
        "hint_policy": "hidden",
        "reservation_timeout": "1800",
    }
    for field in data.draw(st.lists(st.sampled_from(STUDY_FORM_FIELDS), min_size=1, max_size=4)):
        form[field] = data.draw(hostile_text, label=field)
    before = _counts()
    r = api.post("/organize/studies/new/", form)
    assert r.status_code < 500
    if r.status_code == 200:  # the form again, with its errors
        assert _counts() == before
        assert r.context["form"].errors


@HYPOTHESIS
@given(username=hostile_text, password=hostile_text)
def test_creating_an_annotator_survives_any_username_and_password(api, username, password):
    before = _counts()
    _check(api.post("/api/annotators/", {"username": username, "password": password}), before)
    r = api.post("/organize/annotators/", {"username": username, "password": password})
    assert r.status_code < 500


@HYPOTHESIS
@given(data=st.data())
def test_import_api_survives_any_field_values_and_file_bytes(api, data):
    fields = ["format", "folder", "dataset", "study", "rater", "rater_kind", "rubric", "dry_run"]
    body = {"format": "jsonl"}
    for field in data.draw(st.lists(st.sampled_from(fields), min_size=1, max_size=4)):
        body[field] = data.draw(hostile_text, label=field)
    content = data.draw(st.binary(max_size=300), label="file")
    body["files"] = [SimpleUploadedFile("data.jsonl", content)]
    before = _counts()
    r = api.post("/api/imports/", body)
    assert r.status_code < 500, r.content[:500]
    if r.status_code >= 400:
        # A refused import may leave its failure record (ok=False), never data.
        after = _counts()
        assert {k: v for k, v in after.items() if k != "ImportRecord"} == {
            k: v for k, v in before.items() if k != "ImportRecord"
        }


def _query_strategy(fields):
    return st.dictionaries(
        st.sampled_from(fields), st.lists(hostile_text, min_size=1, max_size=2), max_size=4
    )


@HYPOTHESIS
@given(data=st.data())
def test_list_and_export_endpoints_survive_any_query(api, study, data):
    urls = {
        "/api/questions/": ["dataset", "task_type", "kind", "search", "limit", "offset"],
        "/api/responses/": ["dataset", "question", "llm", "task_type", "limit", "offset"],
        "/api/datasets/": ["limit", "offset"],
        "/api/studies/": ["limit", "offset"],
        f"/api/studies/{study.pk}/export/": ["what", "file_format"],
        "/api/imports/": ["limit", "offset"],
        "/api/llms/": ["limit", "offset"],
    }
    url = data.draw(st.sampled_from(sorted(urls)))
    r = api.get(url, data.draw(_query_strategy(urls[url])))
    assert r.status_code < 500, (url, r.content[:300])


@pytest.mark.parametrize(
    "url", ["/api/datasets/", "/api/studies/", "/api/imports/", "/api/llms/", "/api/questions/"]
)
def test_every_list_caps_a_huge_limit_and_offset(api, study, url):
    """Each list, not only the judge API's, pages through one class: a limit beyond SQLite's
    64-bit LIMIT was a 500 on the lists with DRF's default paginator."""
    r = api.get(url, {"limit": "99999999999999999999", "offset": "99999999999999999999"})
    assert r.status_code == 200, r.content[:300]
    assert r.json()["results"] == []
    r = api.get(url, {"limit": "99999999999999999999"})
    assert r.status_code == 200 and len(r.json()["results"]) <= 500
    assert "limit=500" in (r.json()["next"] or "limit=500")


@HYPOTHESIS
@given(text=hostile_text)
def test_path_parameters_never_reach_a_500(api, study, text):
    from urllib.parse import quote

    segment = quote(text, safe="") or "x"
    for url in (f"/api/rubrics/{segment}/", f"/api/studies/{study.pk}/report/{segment}/"):
        assert api.get(url).status_code < 500, url


@HYPOTHESIS
@given(data=st.data())
def test_report_api_page_and_downloads_survive_any_filter(api, study, data):
    query = data.draw(_query_strategy(REPORT_FIELDS))
    for url in (
        f"/api/studies/{study.pk}/report/",
        f"/studies/{study.pk}/report/",
        f"/studies/{study.pk}/report/download.csv",
    ):
        r = api.get(url, query)
        assert r.status_code < 500, (url, query, r.content[:300])


@HYPOTHESIS
@given(data=st.data())
def test_compare_api_and_page_survive_any_settings(api, study, data):
    keys = [f"s{i}-{f}" for i in (1, 2) for f in ("study", "pool", "task_type", "ranking", "kind")]
    keys += ["study", "pool", "task_type", "ranking", "kind", "label", "a", "b"]
    query = data.draw(_query_strategy(keys))
    for url in ("/api/reports/compare/", "/reports/compare/"):
        r = api.get(url, query)
        assert r.status_code < 500, (url, query, r.content[:300])


def test_json_numbers_beyond_python_int_limit_are_refused_cleanly(api, study):
    raw = json.dumps(_valid_study_body(study))[:-1] + ', "seed": ' + "1" * 5000 + "}"
    r = api.post("/api/studies/", raw, content_type="application/json")
    assert r.status_code == 400
    assert r.json()


@pytest.mark.parametrize("value", ["²", "٣", "１２", "9" * 30, "9" * 5000, "\x00", "-1"])
def test_id_query_parameters_that_only_look_like_numbers_are_not_a_500(api, study, value):
    # str.isdigit() says yes to '²' and int('²') raises: every id parameter goes through
    # limits.parse_id instead.
    for url, params in (
        ("/api/responses/", {"question": value}),
        ("/api/questions/", {"dataset": value}),
        ("/api/responses/", {"dataset": value}),
        ("/reports/compare/", {"s1-study": value}),
        ("/api/reports/compare/", {"s1-study": value}),
    ):
        r = api.get(url, params)
        assert r.status_code < 500, (url, value, r.status_code)


JUDGE_FIELDS = [
    "name", "model", "base_url", "api_key_env", "temperature", "max_tokens", "seed", "template",
    "price_in_per_1k", "price_out_per_1k", "json_mode", "concurrency", "timeout_s", "max_attempts",
]  # fmt: skip
RUN_FIELDS = ["study", "judge", "both_orders", "repeat_rate", "limit", "seed"]


@HYPOTHESIS
@given(data=st.data())
def test_judge_and_run_apis_survive_any_field_values(api, study, data):
    from evaluation.models import JudgeConfig, JudgeRun

    judge = {"name": "fuzzed-judge"}
    for field in data.draw(st.lists(st.sampled_from(JUDGE_FIELDS), min_size=1, max_size=4)):
        judge[field] = data.draw(hostile_json, label=field)
    before = JudgeConfig.objects.count()
    r = api.post("/api/judges/create/", judge, content_type="application/json")
    assert r.status_code < 500, r.content[:300]
    if r.status_code >= 400:
        assert JudgeConfig.objects.count() == before
    fields = data.draw(st.lists(st.sampled_from(RUN_FIELDS), min_size=1, max_size=4))
    run = {field: data.draw(hostile_json, label=field) for field in fields}
    before = JudgeRun.objects.count()
    r = api.post("/api/judges/runs/start/", run, content_type="application/json")
    assert r.status_code < 500, r.content[:300]
    if r.status_code >= 400:
        assert JudgeRun.objects.count() == before


@pytest.mark.parametrize("field", ["ratings_per_item", "repeat_rate", "seed", "quota_crowd"])
@pytest.mark.parametrize("value", ["٣", "３", "1_0", "²"])
def test_study_create_api_refuses_numbers_in_other_scripts_like_the_form(api, study, field, value):
    # DRF read "٣" as 3 and "1_0" as 10 where the HTML form says "not a number written with
    # the digits 0-9": the API now refuses them too, and stores nothing.
    before = _counts()
    body = {**_valid_study_body(study), field: value}
    response = api.post("/api/studies/", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()[field] == ["Write the number with the digits 0-9."]
    assert _counts() == before


def test_study_create_api_still_takes_json_numbers_and_plain_digits(api, study):
    body = {**_valid_study_body(study), "ratings_per_item": 2, "repeat_rate": "0.05", "seed": "7"}
    response = api.post("/api/studies/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    created = Study.objects.get(pk=response.json()["id"])
    assert (created.ratings_per_item, created.repeat_rate) == (2, 0.05)


@pytest.mark.parametrize("value", ["٠.٥", "０.５"])
def test_report_filters_refuse_a_threshold_in_other_scripts_on_page_and_api(api, study, value):
    page = api.get(f"/studies/{study.pk}/report/", {"min_accuracy": value})
    assert page.status_code == 400
    assert "is not a number written with the digits 0-9" in page.content.decode()
    assert api.get(f"/api/studies/{study.pk}/report/", {"min_accuracy": value}).status_code == 400
    assert api.get(f"/studies/{study.pk}/report/", {"min_accuracy": "0.5"}).status_code == 200


@pytest.mark.parametrize(
    ("names", "why"),
    [
        (["é" * 200 + ".jsonl"], "too long"),  # 400 bytes: past the file system's 255
        (["a.jsonl", "a.jsonl"], "two files are named"),  # the second replaced the first
    ],
    ids=["long-name", "same-name-twice"],
)
def test_upload_file_names_the_server_cannot_keep_apart_are_refused(api, names, why):
    def uploads():
        return [
            SimpleUploadedFile(
                name, f'{{"type":"question","question_id":"Q{i}","text":"t"}}\n'.encode()
            )
            for i, name in enumerate(names)
        ]

    before = _counts()
    data = {"format": "jsonl", "dataset": "named", "files": uploads()}
    response = api.post("/api/imports/", data)
    assert response.status_code == 400 and why in response.content.decode()
    page = api.post("/organize/import/", {**data, "files": uploads()})
    assert page.status_code == 400 and why in page.content.decode()
    assert _counts() == before
