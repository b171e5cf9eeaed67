"""The judge runner: asyncio + the official `openai.AsyncOpenAI` client.

Shape of a run:
- The calling thread plans the work (services.judge_run_plan: every (item, purpose) not yet
  recorded), serves earlier identical requests from the cache, then becomes the run's only
  database writer: the event loop runs in a helper thread and hands batches of results to it
  (DbBridge). One writer means no SQLite lock fights and it also works inside a test transaction.
- The event loop runs `concurrency` workers (the bound on requests in flight). Each call has its
  own retry loop (the client's retries are off): exponential backoff with full jitter; 429 waits
  at least Retry-After (seconds or an HTTP date); 408/409/429/5xx, timeouts and connection
  errors are retried; other 4xx fail at once; after max_attempts the call is recorded as failed
  with its reason.
- Identical requests in flight are joined (the second waits for the first and reuses its
  output), so no request is paid twice within a run either. Repeats never use the cache.
- Primary and swap calls go first; repeats (which point at the primary's assignment) after.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx2
import openai
from django.core.exceptions import ValidationError
from django.utils import timezone

from evaluation import safety, services
from evaluation.journal import Journal
from evaluation.models import JudgeCall, JudgeRun
from evaluation.services import Job, Outcome, Plan

log = logging.getLogger(__name__)

BACKOFF_CAP = 60.0
RETRY_AFTER_CAP = 600.0
FLUSH_EVERY = 0.25  # seconds to gather finished calls before a write (the journal covers a crash)
FLUSH_MAX = 500  # calls per write


class RunError(Exception):
    pass


def retry_after_seconds(headers) -> float | None:
    """Retry-After as seconds (number or HTTP date), or OpenAI's retry-after-ms; None if absent."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def backoff_delay(attempt: int, base: float, rng: random.Random) -> float:
    """Full jitter: uniform between half and all of base x 2^(attempt-1), capped."""
    ceiling = min(BACKOFF_CAP, base * 2 ** (attempt - 1))
    return ceiling * (0.5 + rng.random() / 2)


class DbBridge:
    """Runs database functions in the thread that created it, on behalf of the event loop."""

    _STOP = object()

    def __init__(self) -> None:
        self._q: queue.Queue = queue.Queue()

    async def call(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._q.put((fn, args, kwargs, loop, fut))
        return await fut

    def stop(self) -> None:
        self._q.put(self._STOP)

    def serve(self, worker: threading.Thread) -> None:
        while True:
            try:
                job = self._q.get(timeout=0.1)
            except queue.Empty:
                if not worker.is_alive():
                    return
                continue
            if job is self._STOP:
                return
            fn, args, kwargs, loop, fut = job
            try:
                result, error = fn(*args, **kwargs), None
            except BaseException as e:  # handed to the awaiting coroutine
                result, error = None, e
            loop.call_soon_threadsafe(_settle, fut, result, error)


def _settle(fut: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if fut.cancelled():
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(result)


class _Executor:
    def __init__(
        self,
        plan: Plan,
        *,
        api_key: str,
        bridge: DbBridge,
        progress,
        backoff: float,
        journal,
        budget: Budget | None = None,
    ):
        p = plan.params
        self.plan = plan
        self.journal = journal
        self.api_key = api_key
        self.budget = budget
        # JUDGE_SDK_CALL=typed sends through chat.completions.create (typed, slower per call).
        self.typed = os.environ.get("JUDGE_SDK_CALL", "") == "typed"
        self.bridge = bridge
        self.progress = progress
        self.backoff = backoff
        self.concurrency = max(1, int(p.get("concurrency") or 1))
        self.max_attempts = max(1, int(p.get("max_attempts") or 1))
        self.json_ok = plan.json_first
        self.json_mode_setting = p.get("json_mode", "auto")
        self.stop = False
        self.rng = random.Random()
        self.inflight: dict[str, asyncio.Future] = {}
        self.client = openai.AsyncOpenAI(
            base_url=p["base_url"],
            api_key=api_key,
            max_retries=0,
            timeout=float(p.get("timeout_s") or 120.0),
            http_client=_http_client(),
        )
        self.results: asyncio.Queue = asyncio.Queue()
        self.snapshot: dict[str, Any] = {}
        self._last_write = 0.0

    # --- one call -------------------------------------------------------------------------

    async def _sleep(self, seconds: float) -> bool:
        """Sleep unless the run is cancelled meanwhile; True when it was."""
        end = time.monotonic() + seconds
        while not self.stop:
            left = end - time.monotonic()
            if left <= 0:
                return False
            await asyncio.sleep(min(left, 0.25))
        return True

    async def _call(self, job: Job) -> Outcome | None:
        attempts = 0
        started = timezone.now()
        error, http_status = "", None
        while True:
            json_mode = self.json_ok and True in job.bodies
            body = job.bodies[json_mode]
            attempts += 1
            t0 = time.monotonic()
            delay = None
            try:
                headers = {"X-Request-Hash": job.hashes[json_mode], "X-Judge-Purpose": job.purpose}
                if self.typed:
                    resp = _from_typed(
                        await self.client.chat.completions.create(**body, extra_headers=headers)
                    )
                else:
                    # The same client, path, auth, timeout and error mapping (APIStatusError etc.)
                    # without the SDK's per-call request transform and response model building,
                    # which cost more CPU than everything else here (see docs/decisions/judges.md).
                    raw = await self.client.post(
                        "/chat/completions",
                        body=body,
                        cast_to=httpx2.Response,
                        options={"headers": headers},
                    )
                    resp = _from_json(raw)
            except openai.APIStatusError as e:
                http_status = e.status_code
                message = _error_message(e)
                error = f"HTTP {e.status_code}: {message}"
                if (
                    e.status_code == 400
                    and json_mode
                    and self.json_mode_setting == "auto"
                    and ("response_format" in message or "json" in message.lower())
                ):
                    # The server has no JSON mode: continue the run with text prompts.
                    self.json_ok = False
                    attempts -= 1
                    continue
                if e.status_code in (408, 409, 429) or e.status_code >= 500:
                    ra = retry_after_seconds(e.response.headers) if e.response is not None else None
                    if ra is not None and e.status_code in (429, 503):
                        delay = min(ra, RETRY_AFTER_CAP) + self.rng.random() * 0.05
                        error += f" (Retry-After {ra:g}s)"
                    else:
                        delay = backoff_delay(attempts, self.backoff, self.rng)
                else:
                    return self._failed(job, json_mode, attempts, http_status, error, started)
            except openai.APITimeoutError:
                http_status = None
                error = f"timeout after {self.client.timeout}s"
                delay = backoff_delay(attempts, self.backoff, self.rng)
            except openai.APIConnectionError as e:
                http_status = None
                error = f"connection error: {safety.short_error(e.__cause__ or e)}"
                delay = backoff_delay(attempts, self.backoff, self.rng)
            except ValueError as e:  # a 200 whose body is not a chat completion
                http_status = 200
                error = f"malformed response: {e}"
                delay = backoff_delay(attempts, self.backoff, self.rng)
            else:
                content, finish_reason, tokens_in, tokens_out = resp
                outcome = Outcome(
                    job=job,
                    json_mode=json_mode,
                    status=JudgeCall.Status.OK,
                    raw=content,
                    finish_reason=finish_reason,
                    tokens_in=tokens_in,
                    tokens_out=tokens_out,
                    latency_ms=int((time.monotonic() - t0) * 1000),
                    attempts=attempts,
                    http_status=200,
                    started_at=started,
                    finished_at=timezone.now(),
                )
                # Paid for: on disk before anything else can happen (see Journal).
                self.journal.append(outcome)
                return outcome
            if attempts >= self.max_attempts:
                return self._failed(
                    job,
                    json_mode,
                    attempts,
                    http_status,
                    f"gave up after {attempts} attempts; last: {error}",
                    started,
                )
            if await self._sleep(delay):
                return None  # cancelled while waiting: left for a later run

    def _failed(self, job, json_mode, attempts, http_status, error, started) -> Outcome:
        return Outcome(
            job=job,
            json_mode=json_mode,
            status=JudgeCall.Status.FAILED,
            attempts=attempts,
            http_status=http_status,
            # Stored and shown: never the key or an auth header, never a page of server text.
            error=safety.short_error(error, secrets=(self.api_key,)),
            started_at=started,
            finished_at=timezone.now(),
        )

    async def _do(self, job: Job) -> Outcome | None:
        if job.purpose == JudgeCall.Purpose.REPEAT:
            return await self._call(job)  # fresh call: never from the cache
        key = job.hashes[self.json_ok and True in job.bodies]
        source = self.inflight.get(key)
        if source is not None:
            first = await source
            if first is not None and first.status == JudgeCall.Status.OK:
                return replace(
                    first,
                    job=job,
                    cached=True,
                    tokens_in=0,
                    tokens_out=0,
                    attempts=0,
                    latency_ms=0,
                    started_at=timezone.now(),
                    finished_at=timezone.now(),
                    cache_source_id=None,
                )
            return await self._call(job)
        fut = asyncio.get_running_loop().create_future()
        self.inflight[key] = fut
        try:
            outcome = await self._call(job)
        except BaseException:
            fut.set_result(None)
            raise
        fut.set_result(outcome)
        return outcome

    # --- workers and the writer -----------------------------------------------------------

    async def _worker(self, jobs: asyncio.Queue) -> None:
        while not self.stop:
            # The budget is checked before each new call: past it by at most the calls in flight.
            if self.budget and self.budget.reached:
                self.budget.stopped = self.budget.stopped or not jobs.empty()
                return
            try:
                job = jobs.get_nowait()
            except asyncio.QueueEmpty:
                return
            outcome = await self._do(job)
            if outcome is not None:
                if self.budget:
                    self.budget.spend(outcome.tokens_in, outcome.tokens_out)
                await self.results.put(outcome)

    async def _writer(self, done: asyncio.Event) -> None:
        while True:
            batch: list[Outcome] = []
            deadline = time.monotonic() + FLUSH_EVERY
            while len(batch) < FLUSH_MAX:
                while not self.results.empty() and len(batch) < FLUSH_MAX:
                    batch.append(self.results.get_nowait())
                timeout = deadline - time.monotonic()
                if timeout <= 0 or (done.is_set() and self.results.empty()):
                    break  # time to write, or the workers are done: no point waiting
                try:
                    # Short slices, so the end of the work is noticed at once.
                    batch.append(await asyncio.wait_for(self.results.get(), min(timeout, 0.02)))
                except TimeoutError:
                    continue
            finished = done.is_set() and self.results.empty()
            if not batch and not finished and time.monotonic() - self._last_write < 1.0:
                continue  # nothing to write; the heartbeat goes out once a second
            self._last_write = time.monotonic()
            self.snapshot = await self.bridge.call(
                services.judge_calls_record,
                run_id=self.plan.run_id,
                parser=self.plan.parser,
                outcomes=batch,
            )
            if self.snapshot.get("cancel"):
                self.stop = True
            if self.progress:
                await self.bridge.call(self.progress, self.snapshot)
            if finished:
                return

    async def _phase(self, jobs: list[Job]) -> None:
        if not jobs or self.stop:
            return
        q: asyncio.Queue = asyncio.Queue()
        for job in jobs:
            q.put_nowait(job)
        done = asyncio.Event()
        writer = asyncio.create_task(self._writer(done))
        # If the database writer dies, stop calling the API (the journal keeps what was paid).
        writer.add_done_callback(
            lambda t: setattr(self, "stop", True) if t.cancelled() or t.exception() else None
        )
        workers = [
            asyncio.create_task(self._worker(q)) for _ in range(min(self.concurrency, len(jobs)))
        ]
        try:
            await asyncio.gather(*workers)
        finally:
            done.set()
            await writer

    async def run(self, cached: list[Outcome]) -> None:
        try:
            if cached:
                for o in cached:
                    self.results.put_nowait(o)
            first = [j for j in self.plan.pending if j.purpose != JudgeCall.Purpose.REPEAT]
            repeats = [j for j in self.plan.pending if j.purpose == JudgeCall.Purpose.REPEAT]
            if cached and not first:
                await self._phase_flush()
            await self._phase(first)
            await self._phase(repeats)
            if self.results.qsize():
                await self._phase_flush()
        finally:
            await self.client.close()

    async def _phase_flush(self) -> None:
        done = asyncio.Event()
        done.set()
        await self._writer(done)


def _from_typed(resp) -> tuple[str, str, int, int]:
    choice = resp.choices[0] if resp.choices else None
    usage = resp.usage
    return (
        (choice.message.content or "") if choice else "",
        (choice.finish_reason or "") if choice else "",
        (usage.prompt_tokens or 0) if usage else 0,
        (usage.completion_tokens or 0) if usage else 0,
    )


def _from_json(raw) -> tuple[str, str, int, int]:
    """content, finish_reason, prompt and completion tokens of a chat completion body."""
    data = raw.json()
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        raise ValueError("no choices in the response body")
    choice = data["choices"][0] if data["choices"] else {}
    message = choice.get("message") or {}
    usage = data.get("usage") or {}
    return (
        message.get("content") or "",
        choice.get("finish_reason") or "",
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
    )


def _http_client():
    """The openai SDK's aiohttp transport when aiohttp is installed (its C HTTP parser halves
    the client's CPU per call, which is what bounds throughput at high concurrency), with a
    resolver that refuses addresses judges may not call (safety.guarded_session); else the SDK's
    default httpx transport. JUDGE_HTTP_TRANSPORT=httpx forces the latter. Neither follows
    redirects: a judge URL must not bounce the key or the requests to another host."""
    if os.environ.get("JUDGE_HTTP_TRANSPORT", "") == "httpx":
        return openai.DefaultAsyncHttpxClient(follow_redirects=False)
    try:
        from openai._vendor.httpx_aiohttp import AiohttpTransport
    except ImportError:
        return openai.DefaultAsyncHttpxClient(follow_redirects=False)
    return openai.DefaultAioHttpClient(
        follow_redirects=False, transport=AiohttpTransport(client=safety.guarded_session)
    )


def _error_message(e: openai.APIStatusError) -> str:
    """The server's own message, cut short (the caller blanks the key: see safety)."""
    body = e.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return safety.short_error(inner["message"])
    return safety.short_error(e.message if e.message else e.__class__.__name__)


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
        plan = services.judge_run_plan(run=run)
        JudgeRun.objects.filter(pk=run_id).update(n_planned=plan.n_planned)
        journal = Journal(run_id, run.created_at.isoformat())
        cached = journal.recover(plan) + _from_cache(plan)
        bridge = DbBridge()
        budget = Budget.of(run)
        ex = _Executor(
            plan,
            api_key=api_key,
            bridge=bridge,
            progress=progress,
            backoff=services.backoff_base() if backoff is None else backoff,
            journal=journal,
            budget=budget,
        )
        failure: list[BaseException] = []

        def loop_thread() -> None:
            try:
                asyncio.run(ex.run(cached))
            except BaseException as e:
                failure.append(e)
            finally:
                bridge.stop()

        t = threading.Thread(target=loop_thread, name=f"judge-run-{run_id}", daemon=True)
        t.start()
        bridge.serve(t)
        t.join()
        journal.close(remove=not failure)
        if failure:
            raise failure[0]
        status, error = _end_state(ex, budget)
        return services.judge_run_finish(run_id=run_id, status=status, error=error)
    except Exception as e:
        log.exception("judge run %s failed", run_id)  # the traceback goes to the log only
        detail = safety.short_error(e if isinstance(e, RunError) else f"{type(e).__name__}: {e}")
        return services.judge_run_finish(run_id=run_id, status=JudgeRun.Status.FAILED, error=detail)


def _end_state(ex: _Executor, budget: Budget | None) -> tuple[str, str]:
    if ex.stop:
        return JudgeRun.Status.CANCELLED, ""
    if budget is not None and budget.stopped:
        return JudgeRun.Status.STOPPED, budget.message()
    return JudgeRun.Status.DONE, ""


def _from_cache(plan: Plan) -> list[Outcome]:
    """Pending non-repeat jobs whose exact request was answered before: reuse, pay nothing."""
    json_mode = plan.json_first
    wanted = {
        j.hashes[json_mode and True in j.bodies]: j
        for j in plan.pending
        if j.purpose != JudgeCall.Purpose.REPEAT
    }
    hits = services.cached_calls(list(wanted))
    out: list[Outcome] = []
    remaining = []
    now = timezone.now()
    for job in plan.pending:
        jm = json_mode and True in job.bodies
        src = hits.get(job.hashes[jm]) if job.purpose != JudgeCall.Purpose.REPEAT else None
        if src is None:
            remaining.append(job)
            continue
        out.append(
            Outcome(
                job=job,
                json_mode=jm,
                status=JudgeCall.Status.OK,
                raw=src.raw_output,
                finish_reason=src.finish_reason,
                attempts=0,
                http_status=src.http_status,
                latency_ms=0,
                started_at=now,
                finished_at=now,
                cached=True,
                cache_source_id=src.pk,
            )
        )
    plan.pending = remaining
    return out
