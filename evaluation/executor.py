"""The event-loop side of a judge run: `concurrency` workers calling the API, one writer handing
batches of answers to the database thread (asgiref's thread-sensitive sync_to_async).

- Each call has its own retry loop (the client's retries are off): exponential backoff with full
  jitter; 429 waits at least Retry-After (seconds or an HTTP date) and pauses every call; 408/409/
  429/5xx, timeouts and connection errors are retried; other 4xx fail at once; after
  max_attempts the call is recorded as failed with its reason.
- Before each call the rate limiter waits for room under the judge's requests/tokens per minute
  and under what the server announced (evaluation/ratelimit.py).
- Identical requests in flight are joined (the second waits for the first and reuses its
  output), so no request is paid twice within a run either. Repeats never use the cache.
- Jobs arrive from a feed that plans the run chunk by chunk while the first calls are in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import openai
from asgiref.sync import sync_to_async
from django.utils import timezone

from evaluation import client as http
from evaluation import recording, safety
from evaluation.models import JudgeCall
from evaluation.planning import Job, Plan
from evaluation.ratelimit import RateLimiter
from evaluation.recording import Outcome

# Seconds to gather finished calls before a write (the journal covers a crash). Each write has a
# fixed cost of a few ms with the GIL (transaction, counters, snapshot) whatever its size; the
# end of the work cuts the wait short, so a longer one does not lengthen the tail.
FLUSH_EVERY = 0.25
FLUSH_MAX = 500  # calls per write
RETRIED = (408, 409, 429)


def in_db_thread(fn: Callable) -> Callable:
    """fn run in the thread that started the run: the run's only database connection."""
    return sync_to_async(fn, thread_sensitive=True)


class Executor:
    def __init__(self, plan: Plan, *, api_key: str, progress, backoff: float, journal, budget):
        p = plan.params
        self.plan, self.journal, self.api_key, self.budget = plan, journal, api_key, budget
        # JUDGE_SDK_CALL=typed sends through chat.completions.create (typed, slower per call).
        self.typed = os.environ.get("JUDGE_SDK_CALL", "") == "typed"
        self.progress = progress
        self.backoff = backoff
        self.concurrency = max(1, int(p.get("concurrency") or 1))
        self.max_attempts = max(1, int(p.get("max_attempts") or 1))
        self.json_ok = plan.json_first
        self.json_mode_setting = p.get("json_mode", "auto")
        self.limiter = RateLimiter(rpm=p.get("rpm_limit"), tpm=p.get("tpm_limit"))
        self.stop = False
        self.rng = random.Random()
        self.inflight: dict[str, asyncio.Future] = {}
        self.client = http.make_client(
            p["base_url"],
            api_key,
            timeout=float(p.get("timeout_s") or 120.0),
            concurrency=self.concurrency,
        )
        self.results: asyncio.Queue = asyncio.Queue()
        self.snapshot: dict[str, Any] = {}
        self._last_write = 0.0
        self._context: recording.RunContext | None = None  # loaded by the first batch
        # JUDGE_TRACE=file: each answered request's (worker, sent, answered) and each write's
        # (start, end, calls, thread CPU) are saved there at the end, for
        # benchmarks/judge_rounds.py (where a round's time over the latency goes).
        self.trace_path = os.environ.get("JUDGE_TRACE", "")
        self.trace: list[tuple] = []

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

    async def _send(self, job: Job, json_mode: bool):
        body = job.bodies[json_mode]
        tokens = await self.limiter.acquire(body)
        headers = {"X-Request-Hash": job.hashes[json_mode], "X-Judge-Purpose": job.purpose}
        sent = time.time()
        try:
            resp, response_headers = await http.post_chat(
                self.client, body, headers, typed=self.typed
            )
            if self.trace_path:
                self.trace.append(("call", id(asyncio.current_task()), sent, time.time()))
            self.limiter.observe(response_headers, tokens=tokens)
            return resp
        except openai.APIStatusError as e:
            announced = e.response.headers if e.response is not None else None
            self.limiter.observe(announced, tokens=tokens, status=e.status_code)
            raise
        finally:
            self.limiter.release(tokens)

    def _json_refused(self, e: openai.APIStatusError, json_mode: bool, message: str) -> bool:
        """A 400 about response_format in auto mode: the server has no JSON mode."""
        return (
            e.status_code == 400
            and json_mode
            and self.json_mode_setting == "auto"
            and ("response_format" in message or "json" in message.lower())
        )

    def _status_delay(self, e: openai.APIStatusError, attempts: int) -> tuple[float | None, str]:
        """How long to wait before retrying (None: do not retry), and a note for the error."""
        headers = e.response.headers if e.response is not None else None
        if e.status_code not in RETRIED and e.status_code < 500:
            return None, ""
        ra = http.retry_after_seconds(headers)
        if ra is not None and e.status_code in (429, 503):
            self.limiter.pause(ra)
            return min(
                ra, http.RETRY_AFTER_CAP
            ) + self.rng.random() * 0.05, f" (Retry-After {ra:g}s)"
        return http.backoff_delay(attempts, self.backoff, self.rng), ""

    def _transport_error(self, e: Exception) -> tuple[int | None, str]:
        if isinstance(e, openai.APITimeoutError):
            return None, f"timeout after {self.client.timeout}s"
        if isinstance(e, openai.APIConnectionError):
            return None, f"connection error: {safety.short_error(e.__cause__ or e)}"
        return 200, f"malformed response: {e}"  # a 200 whose body is not a chat completion

    async def _call(self, job: Job) -> Outcome | None:
        attempts, started = 0, timezone.now()
        http_status: int | None
        while True:
            json_mode = self.json_ok and True in job.bodies
            attempts += 1
            t0 = time.monotonic()
            try:
                resp = await self._send(job, json_mode)
            except openai.APIStatusError as e:
                message = http.error_message(e)
                if self._json_refused(e, json_mode, message):
                    self.json_ok = False  # continue the run with text prompts
                    attempts -= 1
                    continue
                http_status, error = e.status_code, f"HTTP {e.status_code}: {message}"
                delay, note = self._status_delay(e, attempts)
                if delay is None:
                    return self._failed(job, json_mode, attempts, http_status, error, started)
                error += note
            except (openai.APITimeoutError, openai.APIConnectionError, ValueError) as e:
                http_status, error = self._transport_error(e)
                delay = http.backoff_delay(attempts, self.backoff, self.rng)
            else:
                return self._answered(job, json_mode, resp, attempts, started, t0)
            if attempts >= self.max_attempts:
                error = f"gave up after {attempts} attempts; last: {error}"
                return self._failed(job, json_mode, attempts, http_status, error, started)
            if await self._sleep(delay):
                return None  # cancelled while waiting: left for a later run

    def _answered(self, job, json_mode, resp, attempts, started, t0) -> Outcome:
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
                now = timezone.now()
                return replace(
                    first,
                    job=job,
                    cached=True,
                    tokens_in=0,
                    tokens_out=0,
                    attempts=0,
                    latency_ms=0,
                    started_at=now,
                    finished_at=now,
                    cache_source_id=None,
                )
            return await self._call(job)
        fut = asyncio.get_running_loop().create_future()
        self.inflight[key] = fut
        outcome = None
        try:
            outcome = await self._call(job)
        finally:
            fut.set_result(outcome)
        return outcome

    # --- workers and the writer -----------------------------------------------------------

    async def _worker(self, jobs: asyncio.Queue) -> None:
        while not self.stop:
            job = await jobs.get()
            if job is None:
                return
            # The budget is checked before each new call: past it by at most the calls in flight.
            if self.budget and self.budget.reached:
                self.budget.stopped = True
                continue  # left undone
            outcome = await self._do(job)
            if outcome is not None:
                if self.budget:
                    self.budget.spend(outcome.tokens_in, outcome.tokens_out)
                await self.results.put(outcome)

    async def _gather_batch(self, done: asyncio.Event) -> list[Outcome]:
        """The answers that came within FLUSH_EVERY (at most FLUSH_MAX): the writer sleeps once
        per batch rather than waking at every answer, and the end of the work (`done`, set by
        _phase) cuts the sleep short."""
        if self.results.qsize() < FLUSH_MAX and not done.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), FLUSH_EVERY)
        batch: list[Outcome] = []
        while len(batch) < FLUSH_MAX and not self.results.empty():
            if (outcome := self.results.get_nowait()) is not None:
                batch.append(outcome)
        return batch

    def _record(self, batch: list[Outcome]) -> dict[str, Any]:
        """In the database thread: the batch written, then the progress shown (one hand-off to
        that thread per batch, not two)."""
        start, cpu = time.time(), time.thread_time()
        if self._context is None:
            self._context = recording.RunContext.load(self.plan.run_id)
        snapshot = recording.judge_calls_record(
            run_id=self.plan.run_id, parser=self.plan.parser, outcomes=batch, context=self._context
        )
        if self.progress:
            self.progress(snapshot)
        if self.trace_path:
            self.trace.append(("write", len(batch), start, time.time(), time.thread_time() - cpu))
        return snapshot

    async def _writer(self, done: asyncio.Event) -> None:
        record = in_db_thread(self._record)
        # The claim has just beaten the heart: the first write waits for answers (or a second)
        # rather than taking the database thread while the first requests go out.
        self._last_write = time.monotonic()
        while True:
            batch = await self._gather_batch(done)
            finished = done.is_set() and self.results.empty()
            if not batch and not finished and time.monotonic() - self._last_write < 1.0:
                continue  # nothing to write; the heartbeat goes out once a second
            self._last_write = time.monotonic()
            self.snapshot = await record(batch)
            if self.snapshot.get("cancel"):
                self.stop = True
            if finished:
                return

    async def _phase(
        self, feed: AsyncIterable[tuple[list[Job], list[Outcome]]], *, hold_repeats: bool = True
    ) -> list[Job]:
        """Call the jobs as the feed brings them (the feed keeps planning meanwhile) and write
        their answers; repeats are held back and returned, for after this phase is written."""
        q: asyncio.Queue = asyncio.Queue()
        repeats: list[Job] = []
        done = asyncio.Event()
        writer = asyncio.create_task(self._writer(done))
        # If the database writer dies, stop calling the API (the journal keeps what was paid).
        writer.add_done_callback(
            lambda t: setattr(self, "stop", True) if t.cancelled() or t.exception() else None
        )
        workers = [asyncio.create_task(self._worker(q)) for _ in range(self.concurrency)]
        try:
            async for jobs, ready in feed:
                for outcome in ready:  # from the journal or the cache: nothing to call
                    self.results.put_nowait(outcome)
                for job in jobs:
                    if hold_repeats and job.purpose == JudgeCall.Purpose.REPEAT:
                        repeats.append(job)
                    else:
                        q.put_nowait(job)
                if self.stop:
                    break
        except BaseException:
            self.stop = True
            raise
        finally:
            for _ in workers:
                q.put_nowait(None)
            await asyncio.gather(*workers)
            done.set()
            await writer
        return repeats

    async def run(self, feed: AsyncIterable[tuple[list[Job], list[Outcome]]]) -> None:
        try:
            repeats = await self._phase(feed)
            if repeats and not self.stop:
                await self._phase(_once(repeats), hold_repeats=False)
        finally:
            await self.client.close()
            if self.trace_path:
                with open(self.trace_path, "w") as f:
                    json.dump(self.trace, f)


async def _once(jobs: list[Job]) -> AsyncIterator[tuple[list[Job], list[Outcome]]]:
    yield jobs, []
