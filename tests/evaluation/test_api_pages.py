"""The judges API pages its lists (limit/offset with count and next/previous links) instead of
cutting them short; hostile page parameters get a page, never a 500."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.models import JudgeCall, JudgeRun
from evaluation.services import judge_run_create


@pytest.fixture
def five_runs(make_study, make_judge, fake):
    study = make_study(["Q?"], n_llms=1)
    runs = []
    for i in range(5):
        run = judge_run_create(study=study, judge=make_judge(name=f"paged-{i}"), repeat_rate=0)
        JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.DONE)
        runs.append(run)
    return runs


def test_runs_come_in_pages_with_links_to_the_next_and_previous(organizer_client, five_runs):
    url = reverse("judges_api:runs")
    first = organizer_client.get(url, {"limit": 2}).json()
    assert first["count"] == 5 and len(first["results"]) == 2 and first["previous"] is None
    assert "offset=2" in first["next"]
    second = organizer_client.get(first["next"]).json()
    assert len(second["results"]) == 2 and second["previous"] is not None
    last = organizer_client.get(second["next"]).json()
    assert len(last["results"]) == 1 and last["next"] is None
    seen = [r["id"] for page in (first, second, last) for r in page["results"]]
    assert sorted(seen) == sorted(r.pk for r in five_runs)  # each run once, none lost


def test_failed_calls_come_in_pages(organizer_client, make_study, make_judge, fake):
    study = make_study([f"Q{i}?" for i in range(3)], n_llms=1)
    run = judge_run_create(study=study, judge=make_judge(), repeat_rate=0)
    items = list(study.items.all())
    JudgeCall.objects.bulk_create(
        JudgeCall(run=run, item=item, purpose=p, request_hash="h", request={}, status="failed")
        for item in items
        for p in ("primary", "swap", "repeat")
    )
    url = reverse("judges_api:run_failures", args=[run.pk])
    page = organizer_client.get(url, {"limit": 4, "offset": 4}).json()
    assert page["count"] == 9 and len(page["results"]) == 4
    assert "offset=8" in page["next"] and "offset=0" not in page["next"]


@pytest.mark.parametrize(
    "params",
    [
        {"offset": "-1"},
        {"offset": str(10**30)},
        {"offset": "9" * 5000},
        {"limit": str(10**30)},
        {"limit": "0"},
        {"limit": "\x00"},
        {"offset": "a\x00b"},
        {"limit": "٣", "offset": "٣"},
        {"limit": "two"},
    ],
)
def test_hostile_page_parameters_get_a_page_never_a_500(organizer_client, five_runs, params):
    r = organizer_client.get(reverse("judges_api:runs"), params)
    assert r.status_code == 200, (params, r.status_code)
    data = r.json()
    assert data["count"] == 5 and len(data["results"]) <= 500


def test_another_organizer_pages_through_none_of_alices_runs(client, other_organizer, five_runs):
    client.force_login(other_organizer)
    data = client.get(reverse("judges_api:runs"), {"limit": 1, "offset": 1}).json()
    assert data["count"] == 0 and data["results"] == []
