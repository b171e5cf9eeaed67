"""Celery app: the distributed task engine (TASK_BACKEND=celery) with the Redis broker.

Workers: `celery -A config worker -l info` (any number of machines sharing the database and the
broker). Jobs are declared once, with django.tasks' `@task`; config/celery_backend.py sends each
enqueued job here as a call of the one generic Celery task below, which finds the job's function
by its dotted path and runs it, so no job needs a Celery decorator of its own.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

RUN_TASK = "llmeval.run_task"

app = Celery("llmeval")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Jobs are idempotent and resumable: acknowledge after the job, so a lost worker's job is
# delivered again; one job at a time per worker process (a judge run is long).
app.conf.task_acks_late = True
app.conf.task_reject_on_worker_lost = True
app.conf.worker_prefetch_multiplier = 1
app.conf.broker_connection_retry_on_startup = True
# A named queue lets several deployments (or test runs) share one Redis without stealing jobs.
app.conf.task_default_queue = os.environ.get("CELERY_QUEUE", "celery")


@app.task(name=RUN_TASK)
def run_task(path: str, args: list | None = None, kwargs: dict | None = None):
    """Run the django.tasks Task at `path` (module.function) here and now. Celery's Django
    fix-up manages the worker's database connections."""
    from django.utils.module_loading import import_string

    return import_string(path).call(*(args or []), **(kwargs or {}))
