"""Celery app: the distributed task engine (TASK_BACKEND=celery) with the Redis broker."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("llmeval")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
