"""A large study's report page never waits for the statistics after new ratings: it serves the
last snapshot, says so ("updating ... as of"), and a background job computes the current one."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.core.cache import cache
from django.urls import reverse

from ranking import services
from ranking.services import ReportFilters, report_build, report_refresh_soon

from .conftest import new_rating

pytestmark = pytest.mark.django_db


class Queued:
    """Jobs the services hand to the task queue (Django's DummyBackend), recorded, not run:
    (task path, args, kwargs) in the order they were queued."""

    def __init__(self, backend):
        self.backend = backend

    def __iter__(self):
        return iter([(r.task.module_path, r.args, r.kwargs) for r in self.backend.results])

    def __eq__(self, other):
        return list(self) == list(other)

    def __len__(self):
        return len(self.backend.results)

    def __getitem__(self, i):
        return list(self)[i]


@pytest.fixture
def queued(settings):
    from django.tasks import task_backends

    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}
    return Queued(task_backends["default"])


@pytest.fixture
def large(settings):
    """Treat every study as large enough for stale serving."""
    settings.REPORT_STALE_MIN_RATINGS = 0


def _url(study):
    return reverse("ranking:report", args=[study.pk])


def test_after_new_ratings_the_page_serves_the_last_snapshot_and_queues_a_refresh(
    organizer_client, star_study, large, queued
):
    first = organizer_client.get(_url(star_study.study)).context["report"]
    assert not first.stale and first.as_of is not None
    new_rating(star_study)

    response = organizer_client.get(_url(star_study.study))
    served = response.context["report"]
    assert served.stale and served.cached
    assert served.meta["n_star_ratings"] == first.meta["n_star_ratings"]
    assert "updating: new ratings came in" in response.content.decode()
    assert served.as_of == first.as_of
    assert [name for name, _, _ in queued] == ["ranking.tasks.report_refresh"]

    # The job computes the current snapshot; the next request is fresh, and not stale.
    _, args, _ = queued[0]
    from ranking.tasks import report_refresh

    report_refresh.call(*args)
    fresh = organizer_client.get(_url(star_study.study)).context["report"]
    assert fresh.cached and not fresh.stale
    assert fresh.meta["n_star_ratings"] == first.meta["n_star_ratings"] + 1
    assert "updating" not in organizer_client.get(_url(star_study.study)).content.decode()


def test_a_refresh_is_queued_at_most_once_per_interval(star_study, queued, settings):
    settings.REPORT_REFRESH_SECONDS = 60
    assert report_refresh_soon(study_id=star_study.study.pk)
    assert not report_refresh_soon(study_id=star_study.study.pk)
    filtered = ReportFilters.build(pools=["onsite"])
    assert report_refresh_soon(study_id=star_study.study.pk, filters=filtered)
    assert len(queued) == 2
    cache.clear()  # the interval is over
    assert report_refresh_soon(study_id=star_study.study.pk)
    assert len(queued) == 3


def test_a_small_study_is_always_computed_in_the_request(organizer_client, star_study, queued):
    organizer_client.get(_url(star_study.study))
    new_rating(star_study)
    served = organizer_client.get(_url(star_study.study)).context["report"]
    assert not served.stale and not served.cached and queued == []


def test_without_any_snapshot_the_first_request_computes(star_study, large, queued):
    report = report_build(study=star_study.study, stale_ok=True)
    assert not report.stale and not report.cached and queued == []


def test_downloads_and_the_api_never_get_a_stale_report(
    organizer_client, star_study, large, queued
):
    before = organizer_client.get(_url(star_study.study)).context["report"]
    new_rating(star_study)
    url = reverse("ranking:api-report", args=[star_study.study.pk])
    body = organizer_client.get(url).json()
    assert body["meta"]["n_star_ratings"] == before.meta["n_star_ratings"] + 1
    response = organizer_client.get(
        reverse("ranking:report-download", args=[star_study.study.pk, "json"])
    )
    assert response.status_code == 200 and queued == []
    doc = json.loads(response.content)
    assert doc["meta"]["n_star_ratings"] == before.meta["n_star_ratings"] + 1


def test_the_refresh_job_keeps_the_filters_and_skips_a_deleted_study(star_study, queued):
    filters = ReportFilters.build(
        pools=["onsite", "crowd"],
        start=dt.date(2024, 3, 1),
        end=dt.date(2024, 3, 31),
        min_accuracy=0.2,
        n_bootstrap=10,
    )
    back = ReportFilters.from_dict(filters.as_dict())
    assert back.cache_token() == filters.cache_token()
    assert services.report_refresh(study_id=star_study.study.pk, filters=filters.as_dict())
    hit = report_build(study=star_study.study, filters=filters)
    assert hit.cached
    assert not services.report_refresh(study_id=10**12)
