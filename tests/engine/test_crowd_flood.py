"""A stranger replaying a crowd entry link with made-up worker ids: opening the link writes
nothing (no rater, no session); only the consent POST creates a rater, at most
ANNOTATION_CROWD_ARRIVALS_PER_HOUR new ones per address and hour; the ids wait in a signed cookie
that cannot be forged."""

from __future__ import annotations

import pytest
from django.contrib.sessions.models import Session
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment, Rater

from .conftest import make_study


def _url(study) -> str:
    return reverse("annotate:crowd", args=[study.public_id])


def test_opening_the_link_with_new_ids_writes_no_rater_and_no_session(db, organizer):
    study = make_study(owner=organizer, admit_crowd=True)
    for i in range(30):
        page = Client(REMOTE_ADDR="203.0.113.9").get(
            _url(study), {"PROLIFIC_PID": f"flood-{i}", "STUDY_ID": "s", "SESSION_ID": "x"}
        )
        assert page.status_code == 200 and b'name="consent"' in page.content
        assert "sessionid" not in page.cookies
    assert not Rater.objects.filter(pool=Rater.Pool.CROWD).exists()
    assert not Session.objects.exists()
    assert not Assignment.objects.exists()


def test_consent_creates_the_rater_from_the_ids_of_the_link(db, organizer):
    study = make_study(owner=organizer, admit_crowd=True)
    client = Client()
    client.get(_url(study), {"PROLIFIC_PID": "real-1", "STUDY_ID": "st", "SESSION_ID": "se"})
    refused = client.post(_url(study), {})  # the box not ticked: still nothing written
    assert refused.status_code == 400
    assert not Rater.objects.filter(external_id="real-1").exists()
    agreed = client.post(_url(study), {"consent": "yes"})
    assert agreed.status_code == 302 and agreed["Location"].startswith("/a/")
    rater = Rater.objects.get(external_id="real-1", platform="prolific")
    assert rater.meta["study_id"] == "st" and study.public_id in rater.meta["consent"]
    assert agreed.cookies[f"crowd_{study.public_id}"].value == ""  # the pending ids are gone


def test_new_worker_ids_per_address_are_capped_with_a_429_that_writes_nothing(
    db, organizer, settings
):
    settings.ANNOTATION_CROWD_ARRIVALS_PER_HOUR = 3
    cache.clear()
    study = make_study(owner=organizer, admit_crowd=True, n_questions=8)
    statuses = []
    for i in range(5):
        client = Client(REMOTE_ADDR="203.0.113.77")
        client.get(_url(study), {"PROLIFIC_PID": f"made-up-{i}"})
        statuses.append(client.post(_url(study), {"consent": "yes"}).status_code)
    assert statuses == [302, 302, 302, 429, 429]
    assert Rater.objects.filter(external_id__startswith="made-up").count() == 3
    # A worker already known is no new arrival; another address has its own budget.
    again = Client(REMOTE_ADDR="203.0.113.77")
    assert again.get(_url(study), {"PROLIFIC_PID": "made-up-0"}).status_code == 302
    other = Client(REMOTE_ADDR="192.0.2.44")
    other.get(_url(study), {"PROLIFIC_PID": "someone-else"})
    assert other.post(_url(study), {"consent": "yes"}).status_code == 302


def _consent_from(study, address: str, pid: str) -> int:
    client = Client(REMOTE_ADDR=address)
    client.get(_url(study), {"PROLIFIC_PID": pid})
    return client.post(_url(study), {"consent": "yes"}).status_code


@pytest.mark.parametrize(
    "cap", ["ANNOTATION_CROWD_ARRIVALS_PER_HOUR", "ANNOTATION_OPEN_PER_ADDRESS"]
)
def test_workers_from_one_ipv6_64_share_one_address_budget(db, organizer, settings, cap):
    # One host holds a whole /64 and may send from any address in it.
    setattr(settings, cap, 2)
    cache.clear()
    study = make_study(owner=organizer, admit_crowd=True, n_questions=8)
    codes = [_consent_from(study, f"2001:db8:77:1::{i + 1:x}", f"v6-{i}") for i in range(3)]
    assert codes == [302, 302, 429]
    assert Rater.objects.filter(external_id__startswith="v6-").count() == (
        2 if cap == "ANNOTATION_CROWD_ARRIVALS_PER_HOUR" else 3
    )


def test_a_forged_pending_cookie_is_ignored(db, organizer):
    study = make_study(owner=organizer, admit_crowd=True)
    client = Client()
    client.cookies[f"crowd_{study.public_id}"] = "PROLIFIC_PID=forged"  # not signed
    response = client.post(_url(study), {"consent": "yes"})
    assert response.status_code == 400
    assert b"Missing worker id" in response.content
    assert not Rater.objects.filter(external_id="forged").exists()


def test_the_pending_ids_of_one_study_do_not_open_another(db, organizer):
    first = make_study(owner=organizer, admit_crowd=True)
    second = make_study(owner=organizer, admit_crowd=True)
    client = Client()
    client.get(_url(first), {"PROLIFIC_PID": "only-first"})
    assert client.post(_url(second), {"consent": "yes"}).status_code == 400
    assert not Rater.objects.filter(external_id="only-first").exists()


def test_a_known_id_replayed_without_cookies_starts_at_most_the_cap_of_sessions(
    db, organizer, settings
):
    # Opening the link with a known worker id starts a session (a database row) in a browser
    # that has none: replayed without cookies, it would write a row a request.
    settings.ANNOTATION_CROWD_ARRIVALS_PER_HOUR = 3
    cache.clear()
    study = make_study(owner=organizer, admit_crowd=True, n_questions=8)
    worker = Client(REMOTE_ADDR="203.0.113.50")
    worker.get(_url(study), {"PROLIFIC_PID": "known-1"})
    assert worker.post(_url(study), {"consent": "yes"}).status_code == 302
    sessions = Session.objects.count()
    statuses = [
        Client(REMOTE_ADDR="203.0.113.50").get(_url(study), {"PROLIFIC_PID": "known-1"}).status_code
        for _ in range(5)
    ]
    assert statuses == [302, 302, 302, 429, 429]
    assert Session.objects.count() == sessions + 3
    # The worker's own browser (its session) is not held back, nor is another address.
    assert worker.get(_url(study), {"PROLIFIC_PID": "known-1"}).status_code == 302
    other = Client(REMOTE_ADDR="192.0.2.45")
    assert other.get(_url(study), {"PROLIFIC_PID": "known-1"}).status_code == 302
    assert Session.objects.count() == sessions + 4
