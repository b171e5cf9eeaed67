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
