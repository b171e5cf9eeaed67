"""A crowd study that cannot be blocked: no exposure is held longer than ANNOTATION_MAX_HOLD
from when it was served, however often its holder renews (annotation/leases.py). The clock is
moved with `clock`, never slept on."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation import engine, leases
from annotation.models import Assignment, Item, Rating

from .conftest import make_rater, make_study
from .test_crowd_integrity import pid_of, rate_from, worker


class Clock:
    """timezone.now() for the code under test, moved forward by the test."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock(timezone.now())
    monkeypatch.setattr(timezone, "now", lambda: c.now)
    return c


def one_item_study(organizer, **kw):
    return make_study(
        owner=organizer, admit_crowd=True, n_questions=1, n_llms=1, ratings_per_item=1, **kw
    )


def beat(client: Client, a: Assignment, **extra):
    return client.post(reverse("annotate:lease", args=[a.public_id]), **extra)


def test_a_script_that_keeps_renewing_loses_the_item_after_the_cap(db, organizer, clock):
    study = one_item_study(organizer)
    client, first = worker(study, "holder", address="203.0.113.1")
    a = Assignment.objects.get(public_id=pid_of(first))
    # Renewals within the cap work: a beat every two minutes keeps the 180 s lease live.
    for _ in range(29):
        now = clock.advance(minutes=2)
        assert beat(client, a).status_code == 204
        a.refresh_from_db()
        assert a.expires_at == now + timedelta(seconds=study.reservation_timeout)
    held_until = a.expires_at
    clock.advance(minutes=2)  # 60 minutes since it was served
    refused = beat(client, a)
    assert refused.status_code == 409
    assert refused.json() == {"next": reverse("annotate:next", args=[study.public_id])}
    assert client.get(first).status_code == 200  # a page view renews nothing either
    a.refresh_from_db()
    assert (a.status, a.expires_at) == ("served", held_until)
    # While the lease is live nobody else gets the item; once it lapses, the next annotator does.
    other = make_rater()
    assert engine.assignment_next(study=study, rater=other) is None
    clock.now = held_until + timedelta(seconds=1)
    taken = engine.assignment_next(study=study, rater=other)
    assert taken is not None and taken.item_id == a.item_id
    a.refresh_from_db()
    assert a.status == "expired"
    assert Item.objects.get(pk=a.item_id).n_reserved == 1


def test_the_holder_is_not_given_the_item_back_after_the_cap(db, organizer, clock):
    """A lapsed lease is normally taken back on return; past the cap it is not, and a late
    submit still obeys the usual rule (a place only while the item has room)."""
    study = one_item_study(organizer)
    client, first = worker(study, "holder", address="203.0.113.2")
    a = Assignment.objects.get(public_id=pid_of(first))
    clock.advance(minutes=61)
    engine.assignments_expire(study=study)
    assert client.get(reverse("annotate:next", args=[study.public_id]))["Location"] != first
    a.refresh_from_db()
    assert a.status == "expired"
    other, location = worker(study, "after", address="192.0.2.31")
    rate_from(other, location)
    late = client.post(
        first, {f"c_{c.key}": "1" for c in study.rubric.criteria_for(a.item.question)}
    )
    assert late.status_code == 302
    assert Rating.objects.filter(item_id=a.item_id).count() == 1  # never over-assigned
    item = Item.objects.get(pk=a.item_id)
    assert (item.n_ratings, item.n_reserved) == (1, 0)


def test_next_lets_a_live_lease_past_the_cap_go_and_serves_another_item(db, organizer, clock):
    study = make_study(owner=organizer, n_questions=2, n_llms=1, ratings_per_item=1)
    rater = make_rater()
    a = engine.assignment_next(study=study, rater=rater)
    now = clock.advance(minutes=59)
    assert leases.renew(study=study, rater=rater, now=now) == 1
    b = engine.assignment_next(study=study, rater=rater, now=clock.advance(minutes=1))
    assert b is not None and b.pk != a.pk and b.item_id != a.item_id
    a.refresh_from_db()
    assert a.status == "expired"
    assert Item.objects.get(pk=a.item_id).n_reserved == 0
    # The released item is back in the pool for someone else.
    c = engine.assignment_next(study=study, rater=make_rater(), now=clock.now)
    assert c is not None and c.item_id == a.item_id


def test_an_honest_annotator_who_submits_within_the_cap_is_unaffected(db, organizer, clock):
    study = one_item_study(organizer, quota_crowd=1, completion_code="PAID-H")
    client, first = worker(study, "honest", address="203.0.113.3")
    a = Assignment.objects.get(public_id=pid_of(first))
    for _ in range(19):
        clock.advance(minutes=3)
        assert beat(client, a).status_code == 204
    assert rate_from(client, first) == reverse("annotate:done", args=[study.public_id])
    assert Rating.objects.filter(assignment=a).count() == 1
    item = Item.objects.get(pk=a.item_id)
    assert (item.n_ratings, item.n_reserved) == (1, 0)


def test_the_refusal_is_explained_on_the_next_page_in_english_and_chinese(db, organizer, clock):
    study = make_study(owner=organizer, admit_crowd=True, n_questions=2, n_llms=1)
    for lang, text in (("en", "went back to the pool"), ("zh-CN,zh;q=0.9", "退回")):
        client, first = worker(study, f"polite-{lang[:2]}", address=f"203.0.113.{len(lang)}")
        a = Assignment.objects.get(public_id=pid_of(first))
        clock.advance(minutes=61)
        refused = beat(client, a, HTTP_ACCEPT_LANGUAGE=lang)
        assert refused.status_code == 409
        nxt = client.get(refused.json()["next"], HTTP_ACCEPT_LANGUAGE=lang)
        assert nxt["Location"].startswith("/a/") and nxt["Location"] != first
        page = client.get(nxt["Location"], HTTP_ACCEPT_LANGUAGE=lang).content.decode()
        assert text in page


def test_the_setting_is_respected(db, organizer, clock, settings):
    settings.ANNOTATION_MAX_HOLD = 600
    study = one_item_study(organizer)
    client, first = worker(study, "short", address="203.0.113.4")
    a = Assignment.objects.get(public_id=pid_of(first))
    for _ in range(3):
        clock.advance(minutes=3)
        assert beat(client, a).status_code == 204
    clock.advance(minutes=1)  # 10 minutes
    assert beat(client, a).status_code == 409
    settings.ANNOTATION_MAX_HOLD = 0  # no cap: renewals go on for hours
    for _ in range(60):
        clock.advance(minutes=2)
        assert beat(client, a).status_code == 204
