"""Two starts of the same judge on the same study at the same moment (a double click on *Start
run*, a retrying script): only one run may become active. Two active runs send the same requests
side by side, and the cache only reuses a call once it was answered, so every request would be
paid twice (real threads, each on its own PostgreSQL connection). Resuming a failed run beside an
active one would do the same."""

from __future__ import annotations

import contextlib
import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, connections

from evaluation import services
from evaluation.models import JudgeRun


@pytest.fixture
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (set DATABASE_URL=postgres://...)")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("_needs_postgres")
def test_two_simultaneous_starts_make_one_active_run(make_study, make_judge, monkeypatch):
    study, judge = make_study(["q1", "q2"]), make_judge()
    # Both starts are let through the "no active run" check before either saves its run: each
    # waits for the other right after it (at most 3 s: a start held back by a lock goes on).
    barrier = threading.Barrier(2)
    snapshot = services.judge_run_snapshot

    def after_the_check(run):
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout=3)
        return snapshot(run)

    monkeypatch.setattr(services, "judge_run_snapshot", after_the_check)
    outcomes: list[str] = []

    def start() -> None:
        try:
            services.judge_run_create(study=study, judge=judge)
            outcomes.append("started")
        except ValidationError as e:
            outcomes.append(" ".join(e.messages))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=start) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (
        JudgeRun.objects.filter(study=study, judge=judge, status__in=JudgeRun.ACTIVE).count() == 1
    )
    assert sorted(outcomes)[0].startswith("Run ") and "still active" in sorted(outcomes)[0]
    assert sorted(outcomes)[1] == "started"


@pytest.mark.django_db
def test_a_failed_run_is_not_resumed_beside_an_active_run_of_its_judge(
    make_study, make_judge, held_tasks
):
    """Run 1 failed, run 2 of the same judge and study was started and is active: resuming run 1
    now would send run 2's requests a second time. Refused with the reason, nothing queued."""
    from evaluation.launch import judge_run_resume

    study, judge = make_study(["q1", "q2"]), make_judge()
    first = services.judge_run_create(study=study, judge=judge)
    JudgeRun.objects.filter(pk=first.pk).update(status=JudgeRun.Status.FAILED)
    second = services.judge_run_create(study=study, judge=judge)
    first.refresh_from_db()
    with pytest.raises(ValidationError, match=f"Run {second.pk} of this judge"):
        judge_run_resume(run=first)
    first.refresh_from_db()
    assert first.status == JudgeRun.Status.FAILED and held_tasks.results == []
