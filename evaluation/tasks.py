"""Queue jobs of the judges app (interfaces only: they call the runner). Declared with Django's
task framework; settings.TASKS picks the backend that runs them (docs/deploy.md)."""

from __future__ import annotations

from django.tasks import task


@task
def judge_run_execute(run_id: int, force: bool = False) -> str:
    """Run or resume a judge run. Idempotent: a finished run is left alone, a run held by a live
    executor is skipped, a dead executor's run continues where it stopped."""
    from evaluation.runner import execute_run

    run = execute_run(run_id, force=force)
    return run.status if run is not None else "skipped"
