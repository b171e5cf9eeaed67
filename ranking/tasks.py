"""Background jobs of the reports (Django tasks: settings.TASKS picks the backend, docs/deploy.md)."""

from __future__ import annotations

from typing import Any

from django.tasks import task


@task
def report_refresh(study_id: int, filters: dict[str, Any] | None = None) -> bool:
    """A fresh snapshot of the study's report under ``filters`` (``ReportFilters.as_dict``)."""
    from ranking import services  # the report stack: queueing this job does not load it

    return services.report_refresh(study_id=study_id, filters=filters)
