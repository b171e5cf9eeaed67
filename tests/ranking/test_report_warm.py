"""Ratings added in bulk (an import, a simulation, a finished judge run) queue the report of a
large study at once, so nobody waits for its first computation; the page says it is computing
until the job has stored the snapshot."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from ranking.services import report_build
from ranking.simulate import simulate_ratings
from ranking.tasks import report_refresh
from ranking.warm import reports_warm
from tests.factories import l2_files

from .test_report_refresh import queued  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db
JOB = "ranking.tasks.report_refresh"


@pytest.fixture
def commit(settings, django_capture_on_commit_callbacks, queued):  # noqa: F811
    """``with commit():`` runs a block as committed (its on_commit callbacks run); studies of
    10 or more ratings count as large."""
    settings.REPORT_STALE_MIN_RATINGS = 10
    return lambda: django_capture_on_commit_callbacks(execute=True)


def test_a_large_study_is_queued_once_the_ratings_commit(star_study, queued, commit):  # noqa: F811
    with commit() as callbacks:
        reports_warm([star_study.study.pk, star_study.study.pk])
        assert len(queued) == 0  # nothing before the commit
    assert len(callbacks) == 1
    assert [(name, args[0]) for name, args, _ in queued] == [(JOB, star_study.study.pk)]
    # New ratings in bulk queue again, even inside the page's once-a-minute interval.
    with commit():
        reports_warm([star_study.study.pk])
    assert len(queued) == 2


def test_small_studies_dry_runs_and_deleted_studies_queue_nothing(
    star_study,
    queued,  # noqa: F811
    commit,
    settings,
):
    settings.REPORT_STALE_MIN_RATINGS = 10**6
    with commit():
        reports_warm([star_study.study.pk])
        reports_warm([star_study.study.pk], dry_run=True)
        reports_warm([10**12])
    settings.REPORT_STALE_MIN_RATINGS = 0
    with commit():
        reports_warm([star_study.study.pk], dry_run=True)
    assert queued == []


def test_the_page_says_computing_until_the_job_has_run(
    organizer_client,
    star_study,
    queued,  # noqa: F811
    commit,
):
    with commit():
        reports_warm([star_study.study.pk])
    url = reverse("ranking:report", args=[star_study.study.pk])
    response = organizer_client.get(url)
    assert response.status_code == 200
    assert "Computing this report" in response.content.decode()
    assert "report" not in response.context and "Summary" not in response.content.decode()
    # Downloads and the API never wait for the job: they compute the current figures.
    api = organizer_client.get(reverse("ranking:api-report", args=[star_study.study.pk]))
    assert api.status_code == 200 and api.json()["meta"]["n_star_ratings"] > 0

    _, args, _ = queued[0]
    report_refresh.call(*args)
    served = organizer_client.get(url)
    assert "Computing this report" not in served.content.decode()
    assert served.context["report"].cached and not served.context["report"].stale


def test_a_simulation_queues_the_report(star_study, queued, commit):  # noqa: F811
    with commit():
        simulate_ratings(study=star_study.study, raters_per_pool=1, max_items=2)
    assert [(name, args[0]) for name, args, _ in queued] == [(JOB, star_study.study.pk)]


def test_an_import_queues_the_reports_of_its_studies(queued, commit):  # noqa: F811
    data = [str(p) for p in l2_files("data")]
    scores = [str(p) for p in (*l2_files("results/human-score"), *l2_files("results/gpt-score"))]
    out = io.StringIO()
    call_command("import_dataset", *data, format="llmeval2", no_progress=True, stdout=out)
    with commit():
        call_command(
            "import_dataset", *scores, format="llmeval2-scores", no_progress=True, dry_run=True,
            stdout=out,
        )  # fmt: skip
    assert queued == []
    with commit():
        call_command(
            "import_dataset", *scores, format="llmeval2-scores", no_progress=True, stdout=out
        )
    assert len(queued) >= 1 and {name for name, _, _ in queued} == {JOB}
    # The queued job stores the very snapshot the page then serves.
    _, args, _ = queued[0]
    report_refresh.call(*args)
    from annotation.models import Study

    assert report_build(study=Study.objects.get(pk=args[0])).cached


def test_deciding_whether_a_study_is_large_sorts_no_ratings(star_study, settings):
    """The count stops at the threshold: without an ORDER BY, PostgreSQL's LIMIT ends the scan
    (a sort would read every rating of a million-rating study first)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from ranking.selectors import study_has_ratings

    with CaptureQueriesContext(connection) as queries:
        assert study_has_ratings(star_study.study, 1)
        assert not study_has_ratings(star_study.study, 10**6)
    counts = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()]
    assert len(counts) == 2
    assert not any("ORDER BY" in sql.upper() for sql in counts)
