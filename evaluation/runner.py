"""The judge runner: asyncio + the official `openai.AsyncOpenAI` client.

Shape of a run:
- The calling thread claims the run, plans its first chunk of work (planning.plan_chunks: every
  (item, purpose) not yet recorded), and starts the event loop (asgiref's async_to_sync). The
  calls start at once; the next chunks are planned while they are in flight, each checked
  against the journal of a killed executor and the cache of earlier identical requests.
- The calling thread stays the run's only database user: the event loop hands it planning and
  batches of results through thread-sensitive sync_to_async. One writer means no SQLite lock
  fights and it also works inside a test transaction.
- The event loop runs `concurrency` workers (evaluation/executor.py), under the judge's and the
  server's rate limits (evaluation/ratelimit.py).
- Primary and swap calls go first; repeats (which point at the primary's assignment) after.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from decimal import Decimal

from asgiref.sync import async_to_sync
from django.core.exceptions import ValidationError
from django.db import connections
from django.db.models import F
from django.db.models.functions import Greatest

from evaluation import batch, planning, recording, safety, services
from evaluation.client import retry_after_seconds  # noqa: F401 (tests and callers use it here)
from evaluation.executor import Executor, in_db_thread
from evaluation.journal import Journal
from evaluation.models import JudgeRun
from evaluation.planning import Job
from evaluation.recording import Outcome

log = logging.getLogger(__name__)
# Items planned before the first call goes out, then twice as many per later chunk, planned
# while calls are in flight, up to twice the concurrency (at least CHUNK). A first chunk below
# the concurrency gets the first requests out before the pool has opened all its connections
# (opening 64 of them at once costs the event loop tens of milliseconds before any request
# leaves), and the rest follow a few milliseconds later; see
# docs/decisions/judge-throughput-limits-batches.md.
FIRST_CHUNK = 16
CHUNK = 100


class RunError(Exception):
    pass


class Feed:
    """The run's work, planned chunk by chunk in the database thread, minus what the journal
    of a killed executor or the cache of earlier identical requests already answers."""

    def __init__(self, run: JudgeRun, journal: Journal) -> None:
        self.ctx = planning.plan_context(run)
        self.plan = planning.plan_head(self.ctx)
        self.journal = journal
        self._chunks: Iterator[tuple[list[Job], int]] | None = None

    def next_chunk(self) -> tuple[list[Job], list[Outcome]] | None:
        if self._chunks is None:
            concurrency = int(self.plan.params.get("concurrency") or 1)
            self._chunks = planning.plan_chunks(
                self.ctx, first=FIRST_CHUNK, size=max(CHUNK, 2 * concurrency)
            )
        chunk = next(self._chunks, None)
        if chunk is None:
            JudgeRun.objects.filter(pk=self.plan.run_id).update(n_planned=self.plan.n_planned)
            return None
        jobs, n_planned = chunk
        self.plan.n_planned += n_planned
        # Planned so far, for the progress shown while planning goes on (a resumed run keeps
        # its full count until planning ends).
        JudgeRun.objects.filter(pk=self.plan.run_id).update(
            n_planned=Greatest(F("n_planned"), self.plan.n_planned)
        )
        recovered, jobs = self.journal.recover(jobs)
        cached, jobs = recording.cached_outcomes(jobs, self.plan.json_first)
        return jobs, recovered + cached

    async def __aiter__(self) -> AsyncIterator[tuple[list[Job], list[Outcome]]]:
        step = in_db_thread(self.next_chunk)
        while (chunk := await step()) is not None:
            yield chunk


class Budget:
    """The run's spending so far against its cap, updated as each answer arrives."""

    def __init__(self, cap: Decimal, spent: Decimal, price_in: Decimal, price_out: Decimal):
        self.cap, self.spent = cap, spent
        self.price_in, self.price_out = price_in, price_out
        self.stopped = False  # work was left undone because of the cap

    @property
    def reached(self) -> bool:
        return self.spent >= self.cap

    def spend(self, tokens_in: int, tokens_out: int) -> None:
        self.spent += services.cost_of(tokens_in, tokens_out, self.price_in, self.price_out)

    def message(self) -> str:
        return f"stopped: budget reached ({self.spent:.6f} of {self.cap})"

    @classmethod
    def of(cls, run: JudgeRun) -> Budget | None:
        """The run's cap with what its recorded calls cost so far (a resumed run), or None."""
        if run.budget is None:
            return None
        spent = services.judge_run_recount(run=run).cost
        return cls(run.budget, spent, run.price_in_per_1k, run.price_out_per_1k)


def _checked_key(run: JudgeRun) -> str:
    """The run's key, after checking again (the rules or the environment may have changed since
    the run was created) that the variable is approved and set and the URL is allowed."""
    try:
        key = safety.api_key(run.params.get("api_key_env", ""))
        safety.check_base_url(run.params.get("base_url", ""))
        safety.check_key_host(run.params.get("api_key_env", ""), run.params.get("base_url", ""))
    except ValidationError as e:
        raise RunError(" ".join(e.messages)) from None
    return key


def execute_run(
    run_id: int,
    *,
    force: bool = False,
    progress: Callable[[dict], None] | None = None,
    backoff: float | None = None,
) -> JudgeRun | None:
    """Run (or resume) a judge run to the end in this thread. Returns None when there is nothing
    to do (finished, or another live executor holds it). Safe to call again at any time."""
    run = services.judge_run_claim(run_id=run_id, force=force)
    if run is None:
        return None
    try:
        run = JudgeRun.objects.select_related("study__rubric", "judge__rater", "template").get(
            pk=run_id
        )
        api_key = _checked_key(run)
        if run.mode == JudgeRun.Mode.BATCH:
            status, error = batch.execute_batch_run(run, api_key=api_key)
            return services.judge_run_finish(run_id=run_id, status=status, error=error)
        journal = Journal(run_id, run.created_at.isoformat())
        feed = Feed(run, journal)
        budget = Budget.of(run)
        ex = Executor(
            feed.plan,
            api_key=api_key,
            progress=progress,
            backoff=services.backoff_base() if backoff is None else backoff,
            journal=journal,
            budget=budget,
        )
        try:
            _run_loop(ex, feed)
        except BaseException:
            journal.close(remove=False)
            raise
        journal.close(remove=True)
        status, error = _end_state(ex, budget)
        return services.judge_run_finish(run_id=run_id, status=status, error=error)
    except Exception as e:
        log.exception("judge run %s failed", run_id)  # the traceback goes to the log only
        detail = safety.short_error(e if isinstance(e, RunError) else f"{type(e).__name__}: {e}")
        return services.judge_run_finish(run_id=run_id, status=JudgeRun.Status.FAILED, error=detail)


def _run_loop(ex: Executor, feed: Feed) -> None:
    """The run's event loop, with this thread as its database thread; when this thread already
    runs an event loop (a caller in async code, Playwright's sync API), a helper thread takes
    both roles."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        async_to_sync(ex.run)(feed)
        return
    errors: list[BaseException] = []

    def target() -> None:
        try:
            async_to_sync(ex.run)(feed)
        except BaseException as e:  # handed to the caller's thread
            errors.append(e)
        finally:
            connections.close_all()

    helper = threading.Thread(target=target, name=f"judge-run-{feed.plan.run_id}")
    helper.start()
    helper.join()
    if errors:
        raise errors[0]


def _end_state(ex: Executor, budget: Budget | None) -> tuple[str, str]:
    if ex.stop:
        return JudgeRun.Status.CANCELLED, ""
    if budget is not None and budget.stopped:
        return JudgeRun.Status.STOPPED, budget.message()
    return JudgeRun.Status.DONE, ""
