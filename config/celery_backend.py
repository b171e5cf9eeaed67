"""A django.tasks backend that hands jobs to Celery workers through the Redis broker
(TASK_BACKEND=celery). Callers see the standard interface: `@task` and `.enqueue()`.

The message is sent when the enqueuing transaction commits, so a worker never looks for a row
the caller has not committed yet (outside a transaction it is sent at once). Results stay with
Celery: the returned TaskResult carries Celery's task id, and `get_result` is not supported.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.tasks.backends.base import BaseTaskBackend
from django.tasks.base import Task, TaskResult, TaskResultStatus
from django.tasks.signals import task_enqueued
from django.utils import timezone

from config.celery import RUN_TASK, app


class CeleryBackend(BaseTaskBackend):
    supports_defer = True

    def enqueue[**P, R](
        self, task: Task[P, R], args: list[Any], kwargs: dict[str, Any]
    ) -> TaskResult[P, R]:
        self.validate_task(task)
        result: TaskResult[P, R] = TaskResult(
            task=task,
            id=uuid.uuid4().hex,
            status=TaskResultStatus.READY,
            enqueued_at=timezone.now(),
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )

        def send() -> None:
            app.send_task(
                RUN_TASK,
                args=[task.module_path, result.args, result.kwargs],
                task_id=result.id,
                eta=task.run_after,
            )

        transaction.on_commit(send, robust=False)
        task_enqueued.send(type(self), task_result=result)
        return result
