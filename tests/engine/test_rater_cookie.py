"""The signed rater cookie (annotation/rater_cookie.py): a crowd worker's item requests skip the
session read, and the cookie cannot be forged, moved to another study, another browser or
another worker's items, nor outlive the session it was issued with."""

from __future__ import annotations

from unittest import mock

import pytest
from django.conf import settings
from django.contrib.sessions.backends.base import SessionBase
from django.contrib.sessions.backends.db import SessionStore
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment, Rater
from annotation.rater_cookie import cookie_name

from .conftest import crowd_enter, make_study

HX = {"HTTP_HX_REQUEST": "true"}


def _read(_session) -> None:
    raise AssertionError("the session was read")


def _no_session_read():
    # `_session` is the property every read goes through (get, [], in); it was bound to
    # _get_session when the class was made, so patching _get_session alone would not catch them.
    return mock.patch.object(SessionBase, "_session", new=property(_read))


def _enter(client, study, worker: str) -> Assignment:
    response = crowd_enter(
        client, study, {"PROLIFIC_PID": worker, "STUDY_ID": "s", "SESSION_ID": "x"}
    )
    assert response.status_code == 302, response.content[:300]
    pid = response["Location"].rstrip("/").split("/")[-1]
    return Assignment.objects.get(public_id=pid)


def _rate(client, a: Assignment, **extra):
    return client.post(
        reverse("annotate:assignment", args=[a.public_id]), {"choice": "left"}, **extra
    )


@pytest.fixture
def study(db, organizer):
    return make_study(owner=organizer, mode="pairwise", admit_crowd=True, admit_public=True)


def test_entry_sets_the_cookie_and_a_submit_then_reads_no_session(study):
    client = Client()
    a = _enter(client, study, "w1")
    assert cookie_name(study.public_id) in client.cookies
    with _no_session_read():
        response = _rate(client, a, **HX)
    assert response.status_code == 200
    a.refresh_from_db()
    assert a.status == Assignment.Status.SUBMITTED


def test_a_public_sign_up_sets_the_cookie_too(study):
    client = Client()
    url = reverse("annotate:join", args=[study.public_id])
    response = client.post(url, {"nickname": "ann", "consent": "on"})
    assert response.status_code == 302, response.content[:300]
    assert cookie_name(study.public_id) in client.cookies


def test_a_forged_or_altered_cookie_opens_nothing(study):
    owner, other = Client(), Client()
    a = _enter(owner, study, "w1")
    _enter(other, study, "w2")
    name = cookie_name(study.public_id)
    value = other.cookies[name].value
    payload, _, signature = value.partition(":")
    assert payload.endswith("/anon")  # nobody is logged in on this session
    assert int(payload.removesuffix("/anon")) != a.rater_id
    # The other worker puts the owner's rater id in their own cookie: the signature fails.
    for forged in (f"{a.rater_id}/anon", str(a.rater_id)):
        other.cookies[name] = f"{forged}:{signature}"
        assert _rate(other, a).status_code == 404
    other.cookies[name] = str(a.rater_id)
    assert _rate(other, a).status_code == 404
    a.refresh_from_db()
    assert a.status == Assignment.Status.SERVED


def test_a_cookie_copied_to_another_browser_or_study_does_not_verify(db, organizer, study):
    owner = Client()
    a = _enter(owner, study, "w1")
    name = cookie_name(study.public_id)
    stolen = owner.cookies[name].value
    # Another browser with its own session (a worker of the same study) and the owner's cookie.
    thief = Client()
    _enter(thief, study, "w2")
    thief.cookies[name] = stolen
    assert _rate(thief, a).status_code == 404
    # The owner's cookie under another study's name, in the owner's own browser.
    second = make_study(owner=organizer, mode="pairwise", admit_crowd=True)
    b = _enter(owner, second, "w1-elsewhere")
    owner.cookies[cookie_name(second.public_id)] = stolen
    del owner.cookies[settings.SESSION_COOKIE_NAME]  # the session cannot vouch either
    assert _rate(owner, b).status_code == 404
    assert not Assignment.objects.filter(status=Assignment.Status.SUBMITTED).exists()


def test_the_cookie_dies_with_its_session(study):
    client = Client()
    a = _enter(client, study, "w1")
    name = cookie_name(study.public_id)
    kept = client.cookies[name].value
    client.logout()  # the session is flushed; the browser keeps the rater cookie
    client.cookies[name] = kept
    assert _rate(client, a).status_code == 404
    fresh = SessionStore()  # a new session (after a login, say): a new key
    fresh.save()
    client.cookies[settings.SESSION_COOKIE_NAME] = fresh.session_key
    assert _rate(client, a).status_code == 404
    a.refresh_from_db()
    assert a.status == Assignment.Status.SERVED


def test_a_new_worker_id_in_the_same_browser_moves_the_cookie_along(study):
    client = Client()
    first = _enter(client, study, "w1")
    second = _enter(client, study, "w2")
    assert second.rater_id != first.rater_id
    assert Rater.objects.filter(pool="crowd").count() == 2
    # The browser is now w2: w1's open item is no longer its to rate, w2's is.
    assert _rate(client, first).status_code == 404
    assert _rate(client, second).status_code == 302


def test_a_crowd_workers_item_page_reads_no_session(study):
    client = Client()
    a = _enter(client, study, "w1")
    url = reverse("annotate:assignment", args=[a.public_id])
    with _no_session_read():
        page, fragment = client.get(url), client.get(url, **HX)
    assert page.status_code == fragment.status_code == 200
    assert f'data-assignment="{a.public_id}"'.encode() in page.content
    assert f'data-assignment="{a.public_id}"'.encode() in fragment.content


def test_a_logged_in_browser_still_shows_its_account(organizer, study):
    # Logged in first: the cookie does not vouch for an anonymous session.
    client = Client()
    client.force_login(organizer)
    a = _enter(client, study, "w1")
    url = reverse("annotate:assignment", args=[a.public_id])
    assert organizer.get_username().encode() in client.get(url).content
    # Logged in after joining: the login gives the session a new key, the cookie stops
    # verifying and the session (which kept the rater) shows the account.
    other = Client()
    b = _enter(other, study, "w2")
    other.force_login(organizer)
    page = other.get(reverse("annotate:assignment", args=[b.public_id]))
    assert page.status_code == 200
    assert organizer.get_username().encode() in page.content
