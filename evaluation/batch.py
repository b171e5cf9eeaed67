"""Judge runs through OpenAI's Batch API: half the price, results within a day.

A round: plan what the run has not recorded yet, write one JSONL line per request (custom_id
"purpose:item"), upload it (/v1/files), create the batch (/v1/batches), poll it, download the
output and error files and record every line through the same recorder as live runs. Lines that
failed are recorded as failed calls with the server's reason (reported, as a live call that gave
up); lines a batch never answered (it expired or was cancelled) stay unrecorded, and the next
round sends only those, up to the judge's max_attempts rounds.

Never paid twice: every batch is tagged with its run, so a worker that restarts (even between
creating a batch and saving its id) first waits for the run's open batches and records what any
of its batches answered; only then does it plan, and a plan leaves out what is recorded.
Requests the same as another in the round (same request hash, not a repeat) wait for its answer
and are served from the cache. Recording is keyed by (run, item, purpose), so polling twice
records once.

Budget: a batch is paid in one go and cannot stop midway, so a round sends only the calls whose
most possible cost (estimated prompt tokens plus max_tokens, at the run's prices) fits in what
is left of the budget; when calls are left out the run ends "stopped", saying how many.
"""

from __future__ import annotations

import io
import json
import logging
import os
import time
from decimal import Decimal
from typing import Final

import httpx2
import openai
from django.conf import settings
from django.utils import timezone

from evaluation import client as http
from evaluation import planning, recording, safety, services
from evaluation.models import JudgeCall, JudgeRun
from evaluation.planning import Job
from evaluation.recording import Outcome

ENDPOINT: Final = "/v1/chat/completions"
OPEN = ("validating", "in_progress", "finalizing", "cancelling")
HEARTBEAT = 5.0  # well inside services.STALE_AFTER
log = logging.getLogger(__name__)


def poll_every() -> float:
    return float(os.environ.get("JUDGE_BATCH_POLL", getattr(settings, "JUDGE_BATCH_POLL", 60.0)))


def client_for(params: dict, api_key: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=params["base_url"],
        api_key=api_key,
        max_retries=3,
        timeout=float(params.get("timeout_s") or 120.0),
        http_client=httpx2.Client(follow_redirects=False),
    )


def offered(*, base_url: str, api_key: str) -> bool:
    """Whether the server has the Batch API (it lists batches)."""
    client = client_for({"base_url": base_url, "timeout_s": 10}, api_key)
    try:
        client.batches.list(limit=1)
    except (openai.APIStatusError, openai.APIConnectionError):
        return False
    return True


def _custom_id(job: Job) -> str:
    return f"{job.purpose}:{job.item_id}"


def _lines(jobs: list[Job], json_first: bool) -> tuple[bytes, dict[str, Job]]:
    """The JSONL file of a round and its jobs by custom_id."""
    by_id = {_custom_id(j): j for j in jobs}
    rows = [
        {
            "custom_id": cid,
            "method": "POST",
            "url": ENDPOINT,
            "body": job.bodies[json_first and True in job.bodies],
        }
        for cid, job in by_id.items()
    ]
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    return text.encode("utf-8"), by_id


def _tag(run: JudgeRun) -> str:
    return f"{run.pk}@{run.created_at.isoformat()}"


def run_batches(client: openai.OpenAI, run: JudgeRun) -> list:
    """Every batch the server holds for this run (tagged with it), oldest first. The list comes
    newest first, so paging stops at the first batch older than the run."""
    tag, since = _tag(run), run.created_at.timestamp() - 60
    found = []
    for b in client.batches.list(limit=100):
        if b.created_at < since:
            break
        if (b.metadata or {}).get("llmeval_run") == tag:
            found.append(b)
    return found[::-1]


def submit(client: openai.OpenAI, run: JudgeRun, jobs: list[Job], json_first: bool):
    data, _by_id = _lines(jobs, json_first)
    upload = client.files.create(file=("judge-run.jsonl", io.BytesIO(data)), purpose="batch")
    batch = client.batches.create(
        input_file_id=upload.id,
        endpoint=ENDPOINT,
        completion_window="24h",
        metadata={"llmeval_run": _tag(run), "lines": str(len(jobs))},
    )
    JudgeRun.objects.filter(pk=run.pk).update(batch_id=batch.id)
    return batch


def _request_hash(job: Job, json_first: bool) -> str:
    return job.hashes[json_first and True in job.bodies]


def distinct(jobs: list[Job], json_first: bool) -> tuple[list[Job], list[Job]]:
    """(to send, held back): a request the same as one already in the batch is held back and
    answered from the cache once that one is recorded. Repeats are asked again on purpose."""
    seen: set[str] = set()
    send: list[Job] = []
    held: list[Job] = []
    for job in jobs:
        key = _request_hash(job, json_first)
        if job.purpose != JudgeCall.Purpose.REPEAT:
            if key in seen:
                held.append(job)
                continue
            seen.add(key)
        send.append(job)
    return send, held


def affordable(run: JudgeRun, jobs: list[Job], json_first: bool) -> list[Job]:
    """The jobs, in planned order (repeats last), whose most possible cost (estimated prompt
    tokens and max_tokens out, at the run's prices) fits in what is left of its budget. A batch is paid in one go, so unlike a live run it cannot stop midway."""
    if run.budget is None:
        return jobs
    left = run.budget - services.judge_run_recount(run=run).cost
    max_out = int(run.params.get("max_tokens") or 0)
    ordered = sorted(jobs, key=lambda j: j.purpose == JudgeCall.Purpose.REPEAT)
    out: list[Job] = []
    spend = Decimal(0)
    for job in ordered:
        tokens_in = planning.prompt_tokens(job, json_first)
        cost = services.cost_of(tokens_in, max_out, run.price_in_per_1k, run.price_out_per_1k)
        if spend + cost > left:
            break
        out.append(job)
        spend += cost
    return out


def _outcome(job: Job, json_mode: bool, row: dict, now) -> Outcome:
    response = row.get("response") or {}
    if not isinstance(response, dict):
        response = {"body": {"error": {"message": "the line's response is not an object"}}}
    body = response.get("body") or {}
    status = response.get("status_code")
    if status == 200 and isinstance(body, dict) and isinstance(body.get("choices"), list):
        try:  # the same reading (and refusals) as a live call's answer
            content, finish_reason, tokens_in, tokens_out = http.completion_fields(body)
        except ValueError as e:
            body = {"error": {"message": f"malformed response: {e}"}}
        else:
            return Outcome(
                job=job, json_mode=json_mode, status=JudgeCall.Status.OK, raw=content,
                finish_reason=finish_reason, tokens_in=tokens_in, tokens_out=tokens_out,
                attempts=1, http_status=200, started_at=now, finished_at=now,
            )  # fmt: skip
    error = row.get("error") or (body.get("error") if isinstance(body, dict) else None) or {}
    message = error.get("message") if isinstance(error, dict) else str(error)
    return Outcome(
        job=job,
        json_mode=json_mode,
        status=JudgeCall.Status.FAILED,
        attempts=1,
        http_status=status if type(status) is int and 100 <= status <= 599 else None,
        error=safety.short_error(f"batch line failed: {message or 'no reason given'}"),
        started_at=now,
        finished_at=now,
    )


def results(client: openai.OpenAI, batch, jobs: list[Job], json_first: bool) -> list[Outcome]:
    """The answered and failed lines of a finished batch, as outcomes of these jobs."""
    _data, by_id = _lines(jobs, json_first)
    now = timezone.now()
    out: list[Outcome] = []
    for file_id in (batch.output_file_id, batch.error_file_id):
        if not file_id:
            continue
        for line in client.files.content(file_id).text.splitlines():
            try:
                row = http.loads(line)
            except ValueError:
                continue
            job = by_id.pop(str(row.get("custom_id")), None) if isinstance(row, dict) else None
            if job is not None:
                out.append(_outcome(job, json_first and True in job.bodies, row, now))
    return out


def wait(client: openai.OpenAI, run_id: int, batch_id: str, every: float, parser: str):
    """Poll until the batch is over; the run's heartbeat goes out at least every HEARTBEAT
    seconds meanwhile (so no other worker takes the run for dead). None: cancelled."""
    while True:
        batch = client.batches.retrieve(batch_id)
        if batch.status not in OPEN:
            return batch
        end = time.monotonic() + every
        while True:
            snapshot = recording.judge_calls_record(run_id=run_id, parser=parser, outcomes=[])
            if snapshot["cancel"]:
                client.batches.cancel(batch_id)
                return None
            left = end - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(left, HEARTBEAT))


def harvest(client: openai.OpenAI, run: JudgeRun, every: float, parser: str) -> bool:
    """Wait for this run's batches still open (a worker stopped while they ran, maybe before it
    saved their id) and record what any of its batches answered that is not recorded yet, so
    nothing already paid for or still pending is sent again. False: the run was cancelled."""
    batches = run_batches(client, run)
    if not batches:
        return True
    plan = planning.judge_run_plan(run=run)
    pending = plan.pending
    for found in batches:
        if found.status in OPEN:
            found = wait(client, run.pk, found.id, every, parser)
            if found is None:
                return False
        outcomes = results(client, found, pending, plan.json_first)
        recording.judge_calls_record(run_id=run.pk, parser=parser, outcomes=outcomes)
        answered = {id(o.job) for o in outcomes}
        pending = [j for j in pending if id(j) not in answered]
    JudgeRun.objects.filter(pk=run.pk).update(batch_id="")
    return True


def _round_jobs(run: JudgeRun) -> tuple[list[Job], list[Job], bool]:
    """(to send, all still to call, json_first) for the next round: the run's plan minus what
    the cache answers (recorded now) and minus requests the same as one sent with them."""
    plan = planning.judge_run_plan(run=run)
    JudgeRun.objects.filter(pk=run.pk).update(n_planned=plan.n_planned)
    cached, jobs = recording.cached_outcomes(plan.pending, plan.json_first)
    recording.judge_calls_record(run_id=run.pk, parser=plan.parser, outcomes=cached)
    send, _held = distinct(jobs, plan.json_first)
    return send, jobs, plan.json_first


def _stopped(run: JudgeRun, not_sent: int) -> tuple[str, str]:
    spent = services.judge_run_recount(run=run).cost
    message = (
        f"stopped: budget reached ({spent:.6f} of {run.budget}); {not_sent} calls not sent, "
        "their most possible cost (prompt and max_tokens) did not fit in what was left"
    )
    log.info("batch run %s %s", run.pk, message)
    return JudgeRun.Status.STOPPED, message


def execute_batch_run(
    run: JudgeRun, *, api_key: str, every: float | None = None
) -> tuple[str, str]:
    """Rounds of batches until every planned call is recorded, each within what is left of the
    run's budget; once the budget has left calls out, later rounds only send again what a
    batch never answered. (status, error) for the run."""
    client = client_for(run.params, api_key)
    every = poll_every() if every is None else every
    rounds = max(1, int(run.params.get("max_attempts") or 1))
    parser = run.template.parser
    if not harvest(client, run, every, parser):
        return JudgeRun.Status.CANCELLED, ""
    scope: set[str] | None = None  # what a round cut short by the budget sent
    for n in range(rounds + 1):
        send, pending, json_first = _round_jobs(run)
        if scope is not None:
            send = [j for j in send if _custom_id(j) in scope]
        if not pending:
            return JudgeRun.Status.DONE, ""
        if not send or n == rounds:
            break
        fits = affordable(run, send, json_first)
        if not fits:
            break
        if len(fits) < len(send):
            scope = {_custom_id(j) for j in fits}
        batch = wait(client, run.pk, submit(client, run, fits, json_first).id, every, parser)
        if batch is None:
            return JudgeRun.Status.CANCELLED, ""
        outcomes = results(client, batch, fits, json_first)
        recording.judge_calls_record(run_id=run.pk, parser=parser, outcomes=outcomes)
        JudgeRun.objects.filter(pk=run.pk).update(batch_id="")
    if scope is not None or (run.budget is not None and send and n < rounds):
        return _stopped(run, len(pending))
    return JudgeRun.Status.FAILED, f"{len(pending)} calls not answered after {rounds} batches"
