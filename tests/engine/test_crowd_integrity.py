"""Crowd studies an organizer can pay for honestly (issue #11 items 1, 2, 4, 6; #13 item 2):
codes only for work done, no study lock by strangers, Previous never loses the open item, the
same request always gets the same answer, a closed study refuses skips, consent comes first."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation import engine, leases
from annotation.models import Assignment, Item, Rater, Rating, Study

from .conftest import answer, crowd_enter, make_rater, make_study

HX = {"HTTP_HX_REQUEST": "true"}


def pid_of(location: str) -> str:
    return location.rstrip("/").split("/")[-1]


def star_post(a: Assignment, value: int = 2) -> dict[str, str]:
    return {
        f"c_{c.key}": str(min(value, c.max_score))
        for c in a.study.rubric.criteria_for(a.item.question)
    }


def worker(study, pid: str, *, address: str = "198.51.100.7") -> tuple[Client, str]:
    """A Prolific worker's browser after consent, and where the consent POST sent it."""
    client = Client(REMOTE_ADDR=address)
    response = crowd_enter(client, study, {"PROLIFIC_PID": pid, "STUDY_ID": "s", "SESSION_ID": "x"})
    return client, response.get("Location", "")


def rate_from(client: Client, location: str) -> str:
    """Submit the item at `location`; where the answer sends the worker."""
    a = Assignment.objects.get(public_id=pid_of(location))
    response = client.post(reverse("annotate:assignment", args=[a.public_id]), star_post(a))
    assert response.status_code == 302, response.content[:300]
    return response["Location"]


def done_url(study) -> str:
    return reverse("annotate:done", args=[study.public_id])


def fill(study, n_raters: int) -> None:
    """Onsite raters take every rating the study has."""
    for _ in range(n_raters):
        rater = make_rater()
        while (a := engine.assignment_next(study=study, rater=rater)) is not None:
            answer(a, rater)


# -- 1. Codes only for work done ------------------------------------------------------------


def test_opening_the_end_page_directly_before_the_quota_shows_no_code(db, organizer):
    study = make_study(owner=organizer, admit_crowd=True, quota_crowd=5, completion_code="PAID-1")
    client, first = worker(study, "w-early")
    rate_from(client, first)
    page = client.get(done_url(study))
    assert page.status_code == 200
    assert b"PAID-1" not in page.content
    assert b"4 of 5 ratings are still to do" in page.content
    assert b"Back to your open item" in page.content


@pytest.mark.parametrize(
    ("design", "kind"),
    [
        ({"quota_crowd": 2}, "completion"),
        ({"quota_crowd": 5, "n_questions": 2, "n_llms": 1, "ratings_per_item": 1}, "no_more_work"),
        ({"n_questions": 2, "n_llms": 1, "ratings_per_item": 1}, "completion"),
    ],
    ids=["the-quota-met", "out-of-work-before-the-quota", "no-quota-until-nothing-is-left"],
)
def test_two_ratings_earn_the_code_the_ending_calls_for(db, organizer, design, kind):
    study = make_study(
        owner=organizer, admit_crowd=True, completion_code="PAID-2", no_more_work_code="NMW-2",
        **design,
    )  # fmt: skip
    client, location = worker(study, f"w-{kind}")
    assert b"PAID-2" not in client.get(done_url(study)).content  # an item is open
    for _ in range(2):
        location = rate_from(client, location)
    assert location == done_url(study)
    page = client.get(location)
    code, other = ("PAID-2", "NMW-2") if kind == "completion" else ("NMW-2", "PAID-2")
    assert f'data-code-kind="{kind}">{code}<'.encode() in page.content
    assert other.encode() not in page.content


def skip_from(client: Client, location: str) -> str:
    """Skip the item at `location`; where the answer sends the worker."""
    response = client.post(reverse("annotate:skip", args=[pid_of(location)]))
    assert response.status_code == 302, response.content[:300]
    return response["Location"]


@pytest.mark.parametrize("quota", [None, 5], ids=["no-quota", "quota"])
def test_skipping_through_the_study_earns_no_code(db, organizer, quota):
    study = make_study(
        owner=organizer, admit_crowd=True, n_questions=4, n_llms=1, quota_crowd=quota,
        completion_code="PAID-S", no_more_work_code="NMW-S",
    )  # fmt: skip
    client, location = worker(study, "w-skipper")
    location = rate_from(client, location)  # one rating, then skip every other item
    while location != done_url(study):
        location = skip_from(client, location)
    page = client.get(location)
    assert b"PAID-S" not in page.content and b"NMW-S" not in page.content
    assert b"data-skipped-most" in page.content


def test_a_skip_now_and_then_still_earns_the_code(db, organizer):
    study = make_study(
        owner=organizer, admit_crowd=True, n_questions=4, n_llms=1, completion_code="PAID-T"
    )
    client, location = worker(study, "w-honest")
    location = skip_from(client, location)
    while location != done_url(study):
        location = rate_from(client, location)
    assert b'data-code-kind="completion">PAID-T<' in client.get(location).content


def test_without_a_no_more_work_code_a_short_worker_gets_no_code_and_is_told_why(db, organizer):
    study = make_study(
        owner=organizer, admit_crowd=True, quota_crowd=5, n_questions=1, n_llms=1,
        ratings_per_item=1, completion_code="PAID-4",
    )  # fmt: skip
    client, location = worker(study, "w-short")
    page = client.get(rate_from(client, location))
    assert b"PAID-4" not in page.content
    assert b"No completion code is set for this case" in page.content


def test_a_worker_arriving_after_the_study_is_full_gets_the_no_more_work_code(db, organizer):
    study = make_study(
        owner=organizer, admit_crowd=True, quota_crowd=3, n_questions=2, n_llms=1,
        ratings_per_item=1, completion_code="PAID-5", no_more_work_code="NMW-5",
    )  # fmt: skip
    fill(study, 1)
    client = Client()
    url = reverse("annotate:crowd", args=[study.public_id])
    response = client.get(url, {"PROLIFIC_PID": "late", "STUDY_ID": "s", "SESSION_ID": "x"})
    assert response.status_code == 302 and response["Location"] == done_url(study)
    page = client.get(done_url(study))
    assert b'data-code-kind="no_more_work">NMW-5<' in page.content
    assert b"PAID-5" not in page.content
    assert not Assignment.objects.filter(rater__external_id="late").exists()


def test_a_worker_arriving_after_the_study_is_full_without_a_code_sees_study_full(db, organizer):
    study = make_study(
        owner=organizer, admit_crowd=True, n_questions=1, n_llms=1, ratings_per_item=1,
        completion_code="PAID-6",
    )  # fmt: skip
    fill(study, 1)
    client = Client()
    client.get(reverse("annotate:crowd", args=[study.public_id]), {"PROLIFIC_PID": "late2"})
    page = client.get(done_url(study))
    assert b"This study is full" in page.content
    assert b"PAID-6" not in page.content


def test_the_no_more_work_code_is_set_through_the_form_the_api_and_the_admin(
    organizer_client, organizer, db
):
    from annotation.models import Rubric

    from .conftest import make_dataset

    response = organizer_client.post(
        reverse("organize:study_new"),
        {
            "name": "Codes", "dataset": make_dataset(1, 1).pk, "mode": "star",
            "rubric": Rubric.objects.get(key="llmeval2").pk, "pair_design": "all",
            "ratings_per_item": 1, "repeat_rate": 0, "hint_policy": "hidden",
            "admit_crowd": "on", "reservation_timeout": 180, "completion_code": "C1",
            "no_more_work_code": "NMW-FORM",
        },
    )  # fmt: skip
    assert response.status_code == 302, response.content[:500]
    study = Study.objects.get(name="Codes")
    assert study.no_more_work_code == "NMW-FORM"
    response = organizer_client.patch(
        reverse("api-study", args=[study.pk]),
        {"no_more_work_code": "NMW-API"},
        content_type="application/json",
    )
    assert response.status_code == 200 and response.json()["no_more_work_code"] == "NMW-API"
    study.refresh_from_db()
    assert study.no_more_work_code == "NMW-API"
    from django.contrib.auth.models import User

    admin_client = Client()
    admin_client.force_login(User.objects.create_superuser("root", password="root-pass-123"))
    page = admin_client.get(reverse("admin:annotation_study_change", args=[study.pk]))
    assert b'name="no_more_work_code"' in page.content


# -- 2. No study lock by strangers ---------------------------------------------------------


def test_entry_alone_reserves_nothing(client, db, organizer):
    study = make_study(owner=organizer, admit_crowd=True)
    page = client.get(reverse("annotate:crowd", args=[study.public_id]), {"PROLIFIC_PID": "p1"})
    assert page.status_code == 200 and b'name="consent"' in page.content
    assert not Assignment.objects.exists()
    # Nor can the worker skip the consent page by asking for the next item.
    response = client.get(reverse("annotate:next", args=[study.public_id]))
    assert response["Location"] == reverse("annotate:crowd", args=[study.public_id])
    assert b'name="consent"' in client.get(response["Location"]).content
    assert not Assignment.objects.exists()


def test_made_up_prolific_ids_from_one_address_cannot_block_a_real_worker(db, organizer):
    study = make_study(
        owner=organizer, admit_crowd=True, n_questions=8, n_llms=1, ratings_per_item=1
    )
    refused = 0
    for i in range(20):
        _client, location = worker(study, f"fake-{i}", address="203.0.113.66")
        refused += location == ""  # a 429 page, no redirect
    held = Assignment.objects.filter(status="served", rater__external_id__startswith="fake")
    assert held.count() == leases.DEFAULT_OPEN_PER_ADDRESS
    assert refused == 20 - leases.DEFAULT_OPEN_PER_ADDRESS
    client, location = worker(study, "real-worker", address="192.0.2.10")
    assert location.startswith("/a/"), location
    assert Assignment.objects.get(public_id=pid_of(location)).rater.external_id == "real-worker"


def test_the_address_cap_answers_429_with_a_message_and_writes_nothing(db, organizer, settings):
    settings.ANNOTATION_OPEN_PER_ADDRESS = 1
    study = make_study(owner=organizer, admit_crowd=True)
    worker(study, "first", address="203.0.113.5")
    client = Client(REMOTE_ADDR="203.0.113.5")
    url = reverse("annotate:crowd", args=[study.public_id])
    client.get(url, {"PROLIFIC_PID": "second"})
    response = client.post(url, {"consent": "yes"})
    assert response.status_code == 429
    assert b"Too many open items from your network" in response.content
    assert not Assignment.objects.filter(rater__external_id="second").exists()


def test_strangers_on_many_addresses_lose_their_items_when_the_short_lease_lapses(db, organizer):
    study = make_study(
        owner=organizer, admit_crowd=True, n_questions=4, n_llms=1, ratings_per_item=1
    )
    for i in range(4):
        worker(study, f"ghost-{i}", address=f"203.0.113.{i + 1}")
    held = Assignment.objects.filter(status="served")
    assert held.count() == 4
    a = held.first()
    assert (a.expires_at - a.served_at) == timedelta(seconds=180)  # not 30 minutes
    held.update(expires_at=timezone.now() - timedelta(seconds=1))
    _client, location = worker(study, "real", address="192.0.2.20")
    assert location.startswith("/a/")
    assert Item.objects.filter(n_reserved__gt=1).count() == 0


def test_one_crowd_identity_holds_one_open_item(db, organizer):
    study = make_study(owner=organizer, admit_crowd=True)
    client, first = worker(study, "same")
    for _ in range(3):
        again = crowd_enter(client, study, {"PROLIFIC_PID": "same"}, expect_consent=False)
        assert again["Location"] == first
        assert client.get(reverse("annotate:next", args=[study.public_id]))["Location"] == first
    assert Assignment.objects.filter(rater__external_id="same").count() == 1


def test_onsite_annotators_behind_one_lab_address_are_not_capped(db, organizer, settings):
    settings.ANNOTATION_OPEN_PER_ADDRESS = 1
    study = make_study(owner=organizer)
    for _ in range(3):
        client = Client(REMOTE_ADDR="10.1.1.1")
        client.force_login(make_rater().user)
        assert client.get(reverse("annotate:next", args=[study.public_id]))["Location"].startswith(
            "/a/"
        )
    assert Assignment.objects.filter(status="served").count() == 3


def test_page_views_and_the_heartbeat_renew_the_lease(db, organizer):
    study = make_study(owner=organizer, admit_crowd=True)
    client, first = worker(study, "busy")
    a = Assignment.objects.get(public_id=pid_of(first))
    soon = timezone.now() + timedelta(seconds=10)
    Assignment.objects.filter(pk=a.pk).update(expires_at=soon)
    assert client.get(first).status_code == 200
    a.refresh_from_db()
    assert a.expires_at > soon + timedelta(seconds=100)
    Assignment.objects.filter(pk=a.pk).update(expires_at=soon)
    lease_url = reverse("annotate:lease", args=[a.public_id])
    assert client.post(lease_url).status_code == 204
    a.refresh_from_db()
    assert a.expires_at > soon + timedelta(seconds=100)
    # Someone else's heartbeat is a 404; a submitted item's heartbeat holds nothing.
    other, _ = worker(study, "other", address="192.0.2.99")
    assert other.post(lease_url).status_code == 404
    rate_from(client, first)
    assert client.post(lease_url).status_code == 409


def test_the_item_page_carries_the_heartbeat_and_the_guidelines(db, organizer):
    study = make_study(owner=organizer, admit_crowd=True, instructions="Judge **accuracy** first.")
    client, first = worker(study, "reader")
    page = client.get(first)
    a = Assignment.objects.get(public_id=pid_of(first))
    assert f'data-lease="{reverse("annotate:lease", args=[a.public_id])}"'.encode() in page.content
    assert b"js/lease.js" in page.content
    assert b'<details class="guidelines' in page.content
    assert b"<strong>accuracy</strong>" in page.content


# -- 4. Previous, then back; the same request, the same answer -------------------------------


def test_an_edit_through_previous_returns_to_the_open_item_even_after_its_lease_lapsed(
    db, organizer
):
    study = make_study(
        owner=organizer, admit_crowd=True, quota_crowd=3, n_questions=3, n_llms=1,
        ratings_per_item=1, completion_code="PAID-P",
    )  # fmt: skip
    client, first = worker(study, "editor")
    second = rate_from(client, first)
    open_item = Assignment.objects.get(public_id=pid_of(second))
    # A stranger holds the study's last free item; the worker reads their earlier rating for a
    # long while, and the open item's lease lapses and is reclaimed.
    worker(study, "stranger", address="192.0.2.50")
    back = client.get(reverse("annotate:previous", args=[open_item.public_id]))
    assert pid_of(back["Location"]) == pid_of(first)
    Assignment.objects.filter(pk=open_item.pk).update(expires_at=timezone.now())
    assert engine.assignments_expire(study=study) == 1
    answer = rate_from(client, first)  # the edit
    assert pid_of(answer) == str(open_item.public_id)
    open_item.refresh_from_db()
    assert open_item.status == Assignment.Status.SERVED
    # The edit counted once: the quota of 3 is not met by the edit, nor after the open item.
    assert Rating.objects.filter(rater__external_id="editor").count() == 1
    assert rate_from(client, answer) == done_url(study)
    assert Rating.objects.filter(rater__external_id="editor").count() == 2
    assert b"PAID-P" not in client.get(done_url(study)).content


def test_an_edit_through_previous_with_htmx_swaps_the_open_item_back_in(db, organizer):
    study = make_study(owner=organizer, admit_crowd=True, quota_crowd=3)
    client, first = worker(study, "hx-editor")
    second = rate_from(client, first)
    earlier = Assignment.objects.get(public_id=pid_of(first))
    response = client.post(
        reverse("annotate:assignment", args=[earlier.public_id]), star_post(earlier, 1), **HX
    )
    assert response.status_code == 200
    assert response["HX-Push-Url"] == second


def test_a_double_submit_at_the_end_of_a_study_gets_the_same_answer(db, organizer):
    study = make_study(
        owner=organizer, admit_crowd=True, n_questions=2, n_llms=1, ratings_per_item=1
    )
    client, first = worker(study, "double")
    other = make_rater()
    held = engine.assignment_next(study=study, rater=other)  # the study's last free item
    a = Assignment.objects.get(public_id=pid_of(first))
    url = reverse("annotate:assignment", args=[a.public_id])
    answer_1 = client.post(url, star_post(a))["Location"]
    assert answer_1 == done_url(study)
    # Between the two clicks the other rater gives their item back.
    engine.assignment_skip(assignment=held, rater=other)
    answer_2 = client.post(url, star_post(a))["Location"]
    assert answer_2 == answer_1
    assert Rating.objects.filter(assignment=a).count() == 1


def test_a_double_submit_mid_study_gets_the_same_next_item(db, organizer):
    study = make_study(owner=organizer, admit_crowd=True)
    client, first = worker(study, "double-mid")
    a = Assignment.objects.get(public_id=pid_of(first))
    url = reverse("annotate:assignment", args=[a.public_id])
    answers = {client.post(url, star_post(a))["Location"] for _ in range(3)}
    assert len(answers) == 1 and answers.pop().startswith("/a/")
    assert Rating.objects.filter(rater__external_id="double-mid").count() == 1


# -- 6. A closed study refuses skips ---------------------------------------------------------


@pytest.mark.parametrize("status", [Study.Status.CLOSED, Study.Status.PAUSED])
def test_a_skip_on_a_study_that_is_not_running_is_refused(db, organizer, status):
    study = make_study(owner=organizer, admit_crowd=True)
    client, first = worker(study, "skipper")
    a = Assignment.objects.get(public_id=pid_of(first))
    Study.objects.filter(pk=study.pk).update(status=status)
    reserved = Item.objects.get(pk=a.item_id).n_reserved
    response = client.post(reverse("annotate:skip", args=[a.public_id]))
    assert response.status_code == 409
    assert b"Nothing was changed" in response.content
    a.refresh_from_db()
    assert a.status == Assignment.Status.SERVED and a.skipped_at is None
    assert Item.objects.get(pk=a.item_id).n_reserved == reserved


# -- 7. Instructions and consent first -------------------------------------------------------


def test_crowd_entry_shows_the_instructions_and_needs_consent(client, db, organizer):
    study = make_study(owner=organizer, admit_crowd=True, instructions="Read *carefully*.")
    url = reverse("annotate:crowd", args=[study.public_id])
    page = client.get(url, {"PROLIFIC_PID": "c1", "STUDY_ID": "s", "SESSION_ID": "x"})
    assert b"<em>carefully</em>" in page.content
    refused = client.post(url, {})
    assert refused.status_code == 400 and b"Tick the box" in refused.content
    assert not Assignment.objects.exists()
    agreed = client.post(url, {"consent": "yes"})
    assert agreed["Location"].startswith("/a/")
    rater = Rater.objects.get(external_id="c1")
    assert study.public_id in rater.meta["consent"] and rater.consented_at is not None


def test_consent_without_a_crowd_identity_is_refused(client, db, organizer):
    study = make_study(owner=organizer, admit_crowd=True)
    response = client.post(reverse("annotate:crowd", args=[study.public_id]), {"consent": "yes"})
    assert response.status_code == 400
    assert not Assignment.objects.exists()


def test_the_consent_and_end_pages_speak_chinese(db, organizer):
    study = make_study(owner=organizer, admit_crowd=True, quota_crowd=3, completion_code="ZH")
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    url = reverse("annotate:crowd", args=[study.public_id])
    page = client.get(url, {"PROLIFIC_PID": "zh-worker"})
    assert "我同意，开始" in page.content.decode()
    client.post(url, {"consent": "yes"})
    assert "还需完成 3 个评分中的 3 个" in client.get(done_url(study)).content.decode()
