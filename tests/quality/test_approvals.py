"""The approve/reject list for Prolific and MTurk: who is in it, the decisions and reasons,
formula-safe cells, and who may download it."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from annotation import quality
from annotation.models import Rater

pytestmark = pytest.mark.django_db


def _csv(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.content.decode())))


def test_prolific_list_rejects_excluded_workers_with_the_reason(crowd, organizer, organizer_client):
    lefty = crowd.raters["lefty"]
    quality.exclusion_add(
        study=crowd.study, pseudonym=lefty.pseudonym, reason="=failed attention", user=organizer
    )
    url = reverse("organize:study_approvals", args=[crowd.study.pk, "prolific"])
    rows = _csv(organizer_client.get(url))
    assert rows[0] == ["participant_id", "decision", "reason"]
    decisions = {r[0]: (r[1], r[2]) for r in rows[1:]}
    assert len(decisions) == 5
    # A reason starting like a formula is escaped for spreadsheets.
    assert decisions["PID-lefty"] == ("REJECT", "'=failed attention")
    assert decisions["PID-good1"] == ("APPROVE", "")


def test_mturk_list_has_assignment_ids_and_approve_reject_columns(
    crowd, organizer, organizer_client
):
    Rater.objects.filter(pk=crowd.raters["good1"].pk).update(
        platform="mturk", external_id="-W1", meta={"assignment_id": "@ASSIGN1"}
    )
    quality.exclusion_add(
        study=crowd.study, pseudonym=crowd.raters["good1"].pseudonym, reason="too fast",
        user=organizer,
    )  # fmt: skip
    url = reverse("organize:study_approvals", args=[crowd.study.pk, "mturk"])
    rows = _csv(organizer_client.get(url))
    assert rows == [
        ["AssignmentId", "WorkerId", "Approve", "Reject", "RequesterFeedback"],
        ["'@ASSIGN1", "'-W1", "", "too fast", "too fast"],
    ]
    for row in rows:
        assert not any(cell.startswith(("=", "+", "-", "@")) for cell in row)


def test_only_the_owner_downloads_worker_ids(crowd, client, other_organizer):
    url = reverse("organize:study_approvals", args=[crowd.study.pk, "prolific"])
    assert client.get(url).status_code == 302
    client.force_login(other_organizer)
    assert client.get(url).status_code == 404


def test_unknown_platform_is_a_404(crowd, organizer_client):
    url = reverse("organize:study_approvals", args=[crowd.study.pk, "upwork"])
    assert organizer_client.get(url).status_code == 404


def _mturk_worker_rates(client, study, assignment_id: str) -> None:
    """An MTurk worker opens the study's HIT, agrees and rates their first item."""
    from annotation.models import Assignment
    from tests.engine.conftest import crowd_enter

    ids = {"workerId": "W-TWO-HITS", "assignmentId": assignment_id, "hitId": "H"}
    first = crowd_enter(client, study, {**ids, "turkSubmitTo": "https://www.mturk.com"})
    a = Assignment.objects.get(public_id=first["Location"].rstrip("/").split("/")[-1])
    post = {f"c_{c.key}": "1" for c in study.rubric.criteria_for(a.item.question)}
    assert client.post(first["Location"], post).status_code == 302


def test_a_worker_of_two_hits_is_approved_with_each_studys_assignment_id(
    organizer, organizer_client
):
    # MTurk's assignment id belongs to one HIT: the list of one study must name the assignment
    # the worker took for that study, not the one of the HIT they opened last.
    from django.test import Client

    from tests.factories import make_study

    first, second = (make_study(owner=organizer, admit_crowd=True) for _ in range(2))
    worker = Client()
    _mturk_worker_rates(worker, first, "ASSIGN-FIRST")
    _mturk_worker_rates(worker, second, "ASSIGN-SECOND")
    for study, assignment in ((first, "ASSIGN-FIRST"), (second, "ASSIGN-SECOND")):
        url = reverse("organize:study_approvals", args=[study.pk, "mturk"])
        rows = _csv(organizer_client.get(url))
        assert rows[1:] == [[assignment, "W-TWO-HITS", "x", "", ""]]
