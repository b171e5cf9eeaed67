"""Hostile input on every annotator form and engine-API field (issue #11 item 3): a clear 4xx,
nothing stored, never a 500. The property tests matter most on PostgreSQL, which refuses NUL in
text (run them with DATABASE_URL=postgres://...); they also run on SQLite."""

from __future__ import annotations

import urllib.parse

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.models import Assignment, Rater, Rating, Score

from .conftest import crowd_enter, make_study

NASTY = ["²", "٣", "9" * 5000, "1_0", "-1", " 3", "3\x00", "\x00", "", "1e3", "３"]
CROWD_PARAMS = [
    "PROLIFIC_PID", "STUDY_ID", "SESSION_ID", "workerId", "assignmentId", "hitId", "turkSubmitTo",
]  # fmt: skip

text = st.one_of(
    st.text(st.characters(exclude_categories=["Cs"]), max_size=40),
    st.sampled_from(NASTY),
    st.integers(-(10**40), 10**40).map(str),
    st.text("0123456789", min_size=4000, max_size=6000),
)
PROPERTY = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def counts() -> tuple[int, ...]:
    return (
        Rater.objects.count(),
        Assignment.objects.count(),
        Rating.objects.count(),
        Score.objects.count(),
        User.objects.count(),
    )


@pytest.fixture
def crowd_study(db, organizer):
    return make_study(owner=organizer, admit_crowd=True, admit_public=True, quota_crowd=50)


@pytest.fixture
def open_item(crowd_study):
    client = Client()
    response = crowd_enter(client, crowd_study, {"PROLIFIC_PID": "hostile-tester"})
    a = Assignment.objects.get(public_id=response["Location"].rstrip("/").split("/")[-1])
    return client, a


def valid_scores(a: Assignment) -> dict[str, str]:
    return {f"c_{c.key}": "2" for c in a.study.rubric.criteria_for(a.item.question)}


# -- The cases the issue found, one by one ----------------------------------------------------


@pytest.mark.parametrize("value", NASTY[:8])
def test_a_bad_active_time_is_a_400_and_nothing_is_stored(open_item, value):
    client, a = open_item
    before = counts()
    url = reverse("annotate:assignment", args=[a.public_id])
    response = client.post(url, {**valid_scores(a), "active_ms": value})
    assert response.status_code == 400
    assert b"active time must be a whole number" in response.content
    assert counts() == before
    a.refresh_from_db()
    assert a.status == Assignment.Status.SERVED


@pytest.mark.parametrize("value", NASTY)
def test_a_bad_score_is_a_400_and_nothing_is_stored(open_item, value):
    client, a = open_item
    before = counts()
    data = valid_scores(a)
    data[next(iter(data))] = value
    response = client.post(reverse("annotate:assignment", args=[a.public_id]), data)
    assert response.status_code == 400
    assert b"not a number" in response.content or b"Give a score" in response.content
    assert counts() == before


@pytest.mark.parametrize("param", CROWD_PARAMS)
def test_a_nul_byte_in_any_crowd_id_is_a_400_and_creates_nobody(client, crowd_study, param):
    query = {"PROLIFIC_PID": "p-ok", "STUDY_ID": "s", "SESSION_ID": "x"}
    if param in ("workerId", "assignmentId", "hitId", "turkSubmitTo"):
        query = {"workerId": "W-ok", "assignmentId": "A", "hitId": "H"}
    query[param] = "bad\x00id"
    before = counts()
    response = client.get(reverse("annotate:crowd", args=[crowd_study.public_id]), query)
    assert response.status_code == 400
    assert b"not valid" in response.content
    assert counts() == before


def test_an_overlong_worker_id_is_refused_not_cut_short(client, crowd_study):
    url = reverse("annotate:crowd", args=[crowd_study.public_id])
    assert client.get(url, {"PROLIFIC_PID": "p" * 201}).status_code == 400
    assert not Rater.objects.exists()


@pytest.mark.parametrize("pid", ["\x00", "a" * 5000, "ab\x00cd", "é"])
def test_a_study_id_that_cannot_exist_is_a_404(client, db, pid):
    quoted = urllib.parse.quote(pid, safe="")
    for path in ("", "next/", "done/", "crowd/", "join/", "previous/"):
        assert client.get(f"/s/{quoted}/{path}").status_code == 404


def test_a_nul_byte_in_a_public_nickname_is_a_400(client, crowd_study):
    cache.clear()
    url = reverse("annotate:join", args=[crowd_study.public_id])
    response = client.post(url, {"nickname": "a\x00b", "consent": "on"})
    assert response.status_code == 400
    assert not Rater.objects.exists()


# -- Properties: random input into every field -------------------------------------------------


@PROPERTY
@given(query=st.dictionaries(st.sampled_from(CROWD_PARAMS), text, max_size=7), consent=text)
def test_crowd_entry_never_fails_on_any_ids(crowd_study, query, consent):
    client = Client()
    url = reverse("annotate:crowd", args=[crowd_study.public_id])
    before = counts()
    response = client.get(url, query)
    assert response.status_code < 500
    if response.status_code >= 400:
        assert counts() == before
    before = counts()
    response = client.post(url, {"consent": consent})
    assert response.status_code < 500
    if response.status_code >= 400:
        assert counts() == before


@PROPERTY
@given(
    fields=st.dictionaries(
        st.one_of(
            st.sampled_from(["c_accuracy", "c_fluency", "c_logicality", "c_informativeness"]),
            st.text(max_size=20).map(lambda k: "c_" + k),
            st.sampled_from(["choice", "active_ms", "comment"]),
        ),
        text,
        max_size=8,
    ),
    htmx=st.booleans(),
)
def test_the_rating_form_never_fails_and_stores_nothing_when_it_refuses(open_item, fields, htmx):
    client, a = open_item
    before = counts()
    extra = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    response = client.post(reverse("annotate:assignment", args=[a.public_id]), fields, **extra)
    assert response.status_code < 500
    refused = response.status_code >= 400 or b'role="alert"' in response.content
    if refused:
        assert counts() == before


@PROPERTY
@given(body=st.binary(max_size=300))
def test_raw_bytes_to_the_annotator_posts_never_fail(open_item, body):
    client, a = open_item
    before = counts()
    for name in ("assignment", "skip", "lease"):
        url = reverse(f"annotate:{name}", args=[a.public_id])
        response = client.post(url, body, content_type="application/x-www-form-urlencoded")
        assert response.status_code < 500
        if response.status_code >= 400:
            assert counts()[2:] == before[2:]


@PROPERTY
@given(nickname=text, consent=text, website=text)
def test_the_public_sign_up_never_fails(crowd_study, nickname, consent, website):
    client = Client()
    before = counts()
    response = client.post(
        reverse("annotate:join", args=[crowd_study.public_id]),
        {"nickname": nickname, "consent": consent, "website": website},
    )
    assert response.status_code < 500
    if response.status_code >= 400:
        assert counts() == before


@PROPERTY
@given(pid=text, path=st.sampled_from(["", "next/", "done/", "crowd/", "join/", "previous/"]))
def test_any_study_id_in_the_url_is_answered_without_a_500(client, db, pid, path):
    quoted = urllib.parse.quote(pid[:300], safe="") or "x"
    assert client.get(f"/s/{quoted}/{path}").status_code < 500


@PROPERTY
@given(username=text, password=text, study_id=st.integers(-(10**12), 10**12))
def test_the_engine_api_never_fails_on_any_field(organizer_client, username, password, study_id):
    before = counts()
    response = organizer_client.post(
        reverse("api-annotators"), {"username": username, "password": password}
    )
    assert response.status_code < 500
    if response.status_code >= 400:
        assert counts() == before
    for name in ("api-study-progress", "api-study-links"):
        path = reverse(name, args=[1]).replace("/1/", f"/{study_id}/")
        assert organizer_client.get(path).status_code < 500
    path = reverse("api-study-launch", args=[1]).replace("/1/", f"/{study_id}/")
    assert organizer_client.post(path).status_code < 500
