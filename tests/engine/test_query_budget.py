"""The annotator hot path's SQL statements, counted: a page and a submit-and-next (as the page's
JavaScript posts it) each run a fixed number, so a change that adds a round trip per request
fails here. The figures are per backend: PostgreSQL writes a rating and reserves the next item
in one statement each, SQLite in several; the transaction shows up as a savepoint in tests."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from annotation import progress
from annotation.models import SHUFFLE_MAX, Assignment, Item

from .conftest import crowd_enter, make_study

PG = connection.vendor == "postgresql"

# The joined read of the exposure with the rater's submitted count (the session is not read:
# the signed rater cookie vouches for the worker and for nobody being logged in, and no draft
# waits).
PAGE = 1
# Savepoint; the exposure's read, which also takes the rater's lock (the rater comes from the
# signed cookie, the session is not read); exposure lock (with the rater's latest seq and
# count); the rating with the item's counters and the exposure's status (one statement on
# PostgreSQL, three on SQLite); address cap; pick and new exposure, which returns the next item
# to show (one statement on PostgreSQL; SQLite: read, update, insert, and the next item's
# joined read after the transaction); savepoint release.
SUBMIT_PAIRWISE = 7 if PG else 12
# Star answers also read the item's question (which criteria apply) and write their scores; the
# criteria of a built-in rubric come from memory.
SUBMIT_STAR = SUBMIT_PAIRWISE + 2


@pytest.fixture
def worker(client, db, monkeypatch):
    # One figure of "ratings still needed" for the whole test, however slow the machine.
    monkeypatch.setattr(progress, "REMAINING_SECONDS", 3600.0)

    def enter(mode: str) -> str:
        study = make_study(mode=mode, admit_crowd=True)
        # Every item at the end of shuffle order: the pick finds one in its first range, so the
        # count does not depend on the random pivot.
        Item.objects.filter(study=study).update(shuffle=SHUFFLE_MAX)
        response = crowd_enter(client, study, {"PROLIFIC_PID": f"w-{mode}", "STUDY_ID": "s"})
        assert response.status_code == 302
        client.get(response["Location"])  # fills the per-process figure
        return response["Location"]

    return enter


def _answer(page: bytes) -> dict:
    """Left is better, or 3 stars on every criterion the form asks for."""
    criteria = set(re.findall(rb'name="(c_[a-z_]+)"', page))
    if not criteria:
        return {"choice": "left", "active_ms": "900"}
    return {name.decode(): "3" for name in criteria} | {"active_ms": "900"}


@pytest.mark.parametrize(("mode", "submit"), [("pairwise", SUBMIT_PAIRWISE), ("star", SUBMIT_STAR)])
def test_a_page_and_a_submit_and_next_run_a_fixed_number_of_statements(
    client, worker, mode, submit, django_assert_num_queries
):
    url = worker(mode)
    for _ in range(3):
        with django_assert_num_queries(PAGE):
            page = client.get(url)
        assert page.status_code == 200
        with django_assert_num_queries(submit) as done:
            response = client.post(url, _answer(page.content), headers={"HX-Request": "true"})
        assert response.status_code == 200, response.content[:300]
        # The first statement of the submit's transaction reads the exposure and locks the rater.
        first = done.captured_queries[1]["sql"]
        assert "annotation_assignment" in first and "public_id" in first
        assert ("FOR UPDATE OF r" in first) == PG
        pid = re.search(rb'data-assignment="([0-9a-f-]{36})"', response.content).group(1)
        assert Assignment.objects.filter(status=Assignment.Status.SUBMITTED).count() >= 1
        url = f"/a/{pid.decode()}/"
