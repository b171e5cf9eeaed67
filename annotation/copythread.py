"""A COPY thread: the jobs a bulk writer hands it (COPYs of prepared chunks) run in order on a
thread of their own, on the calling thread's database connection (the same transaction), while
the calling thread prepares the next chunk.

A COPY ends by waiting for PostgreSQL to have stored every row, and the client's Python work
(planning the next rows) would wait meanwhile: on a machine with two cores the backend's work
and the client's then add up. With the COPY on this thread, which waits with the GIL released,
the two overlap. The calling thread must not use the connection while jobs run other than by
submitting them (psycopg's lock would make it wait for the running COPY, no worse); `close`
waits for the last job and raises the first job's error, if any, on the calling thread. An
error on either side stops the rest: the jobs left are skipped and the caller's transaction is
rolled back as with any database error.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from types import TracebackType
from typing import Any

from django.db import connection

# Chunks prepared ahead of the COPY thread (bounded: a million-row import is never all queued).
DEPTH = 2

Job = Callable[[Any], Any]  # takes a psycopg cursor of the connection


class CopyThread:
    """Runs jobs on the connection in submission order; use as a context manager."""

    def __init__(self, depth: int = DEPTH) -> None:
        connection.ensure_connection()
        self._raw = connection.connection
        self._jobs: queue.Queue[tuple[Job, Future] | None] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="copy-thread", daemon=True)

    def __enter__(self) -> CopyThread:
        self._thread.start()
        return self

    def _run(self) -> None:
        with self._raw.cursor() as cur:
            while (item := self._jobs.get()) is not None:
                job, done = item
                if self._error is not None or self._stop.is_set():
                    done.set_exception(RuntimeError("the COPY thread stopped"))
                    continue
                try:
                    done.set_result(job(cur))
                except BaseException as exc:  # handed to the calling thread
                    self._error = exc
                    done.set_exception(exc)

    def submit(self, job: Job) -> Future:
        """Queue a job (waits while DEPTH jobs are queued); raises a job's error first. The
        future holds the job's result (`result` waits for it)."""
        self._raise()
        done: Future = Future()
        self._jobs.put((job, done))
        return done

    def result(self, done: Future) -> Any:
        """A job's result, once it ran (an earlier job's error is raised instead)."""
        try:
            return done.result()
        except BaseException:
            self._raise()
            raise

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is not None:
            self._stop.set()  # the calling thread failed: skip the jobs left
        self._jobs.put(None)
        self._thread.join()
        if kind is None:
            self._raise()
