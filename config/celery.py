"""Celery app: the distributed task engine (TASK_BACKEND=celery) with the Redis broker.

Workers: `celery -A config worker -l info` (any number of machines sharing the database and the
broker). The only task is the task queue's generic job runner, so every job registered with
`config.taskqueue.task` runs here without a Celery decorator of its own.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

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
app.autodiscover_tasks()


@app.task(name="taskqueue.run_job")
def run_job(name: str, args: list | None = None, kwargs: dict | None = None):
    from config.taskqueue import run_job as run

    run(name, args or [], kwargs or {})
    return None
