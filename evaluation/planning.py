"""Planning a judge run: every (item, purpose) it needs minus what it already recorded, each
with its request bodies (JSON mode and text mode) and their hashes. Deterministic (seeded per
item), so a resumed run plans the same requests and the cache keys stay the same."""

from __future__ import annotations

import functools
import hashlib
import json
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from annotation.models import Assignment, Item, Study
from evaluation import parsers, prompts
from evaluation.models import JudgeCall, JudgeRun


def request_hash(base_url: str, body: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of the endpoint and the full request body."""
    canonical = json.dumps(
        {"base_url": base_url.rstrip("/"), **body},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass
class Job:
    """One (item, purpose) of a run with its request, in JSON mode and in text mode."""

    item_id: int
    purpose: str
    left_is_a: bool
    hint_shown: bool
    seq: int
    bodies: Mapping[bool, dict[str, Any]]
    hashes: Mapping[bool, str]
    specs: list[parsers.Spec] = field(default_factory=list)


@dataclass
class Plan:
    run_id: int
    params: dict[str, Any]
    parser: str
    n_planned: int
    pending: list[Job]
    json_first: bool


def criteria_views(study: Study, question, cache: dict) -> list:
    key = (question.kind, question.answer_type)
    if key not in cache:
        cache[key] = [prompts.CriterionView.of(c) for c in study.rubric.criteria_for(question)]
    return cache[key]


def specs_of(views) -> list[parsers.Spec]:
    return list(_specs(tuple(views)))


@functools.lru_cache(maxsize=256)
def _specs(views: tuple[prompts.CriterionView, ...]) -> tuple[parsers.Spec, ...]:
    """The parser's view of the criteria, made once per set of criteria (not once per job)."""
    return tuple(
        parsers.Spec(key=c.key, labels=(c.label_en, c.label_zh), lo=c.min_score, hi=c.max_score)
        for c in views
    )


@dataclass
class PlanContext:
    """What every item of a run shares while it is planned."""

    run: JudgeRun
    json_first: bool
    always_reference: bool
    judged_elsewhere: set[int]
    done: set[tuple[int, str]]
    cache: dict = field(default_factory=dict)

    @property
    def pairwise(self) -> bool:
        return self.run.study.mode == "pairwise"


def plan_context(run: JudgeRun) -> PlanContext:
    """The run's template settings and what it (or this judge elsewhere) already recorded."""
    template, params = run.template, run.params
    # An unsaved run (the pre-flight's estimate) has recorded nothing yet.
    recorded = JudgeCall.objects.filter(run=run) if run.pk else JudgeCall.objects.none()
    judged_elsewhere = set(
        Assignment.objects.filter(
            study=run.study, rater=run.judge.rater, is_repeat=False
        ).values_list("item_id", flat=True)
    ) - set(recorded.filter(purpose=JudgeCall.Purpose.PRIMARY).values_list("item_id", flat=True))
    return PlanContext(
        run=run,
        json_first=params.get("json_mode", "auto") != "off" and bool(template.json_instructions),
        always_reference=prompts.uses_reference(template),
        judged_elsewhere=judged_elsewhere,
        done=set(recorded.values_list("item_id", "purpose")),
    )


def plan_head(ctx: PlanContext) -> Plan:
    """The run's plan with no jobs yet (plan_chunks brings them)."""
    run = ctx.run
    return Plan(
        run_id=run.pk,
        params=run.params,
        parser=run.template.parser,
        n_planned=0,
        pending=[],
        json_first=ctx.json_first,
    )


class _Requests:
    """A job's request bodies and hashes by JSON mode, each made the first time it is asked
    for: the plain-text fallback is only sent once a server refuses JSON mode, so most runs
    never render it (it was half of each job's prompt rendering and hashing)."""

    def __init__(self, modes: tuple[bool, ...], make: Callable[[bool], tuple[dict, str]]):
        self.modes, self._make = modes, make
        self._made: dict[bool, tuple[dict, str]] = {}

    def get(self, mode: bool, part: int) -> Any:
        if mode not in self.modes:
            raise KeyError(mode)
        made = self._made.get(mode)
        if made is None:
            made = self._made[mode] = self._make(mode)
        return made[part]


class ByMode(Mapping[bool, Any]):
    """One part (0: bodies, 1: hashes) of a job's _Requests, read as a dict by JSON mode."""

    def __init__(self, requests: _Requests, part: int) -> None:
        self._requests, self._part = requests, part

    def __getitem__(self, mode: bool) -> Any:
        return self._requests.get(mode, self._part)

    def __contains__(self, mode: object) -> bool:
        return mode in self._requests.modes  # without making the request

    def __iter__(self) -> Iterator[bool]:
        return iter(self._requests.modes)

    def __len__(self) -> int:
        return len(self._requests.modes)


def _bodies(ctx: PlanContext, render: dict[str, Any]) -> tuple[ByMode, ByMode]:
    """The request in JSON mode (when the run asks for it) and in text mode, with their hashes:
    the first mode made now (its hash is the cache key), the fallback when first asked for."""
    params, template = ctx.run.params, ctx.run.template

    def make(json_mode: bool) -> tuple[dict, str]:
        body: dict[str, Any] = {
            "model": params["model"],
            "messages": prompts.render_messages(template, render, json_mode=json_mode),
            "temperature": params["temperature"],
            "max_tokens": params["max_tokens"],
        }
        if params.get("seed") is not None:
            body["seed"] = params["seed"]
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        return body, request_hash(params["base_url"], body)

    requests = _Requests((True, False) if ctx.json_first else (False,), make)
    requests.get(ctx.json_first, 0)
    return ByMode(requests, 0), ByMode(requests, 1)


def _render(ctx: PlanContext, item: Item, order: bool, hint: bool, views: list) -> dict:
    hint_format = ctx.run.template.hint_format
    if not ctx.pairwise:
        return prompts.render_context(
            question=item.question,
            criteria=views,
            answer=item.response_a.text,
            hint_shown=hint,
            hint_format=hint_format,
        )
    first, second = item.response_a, item.response_b
    assert second is not None, "a pairwise item has two answers"
    if not order:
        first, second = second, first
    return prompts.render_context(
        question=item.question,
        criteria=[],
        answer_1=first.text,
        answer_2=second.text,
        hint_shown=hint,
        hint_format=hint_format,
    )


def plan_item(ctx: PlanContext, seq: int, item: Item) -> tuple[list[Job], int]:
    """The item's jobs not yet recorded, and how many calls it needs in all."""
    run = ctx.run
    if item.id in ctx.judged_elsewhere:
        return [], 0
    rng = random.Random(f"{run.seed}:{item.id}")
    left_is_a = (rng.random() < 0.5) if ctx.pairwise else True
    repeat = rng.random() < run.repeat_rate
    hint = run.study.draws_hint(rng) and bool(item.question.reference)
    if ctx.always_reference:
        hint = bool(item.question.reference)
    views = [] if ctx.pairwise else criteria_views(run.study, item.question, ctx.cache)
    wanted = [(JudgeCall.Purpose.PRIMARY, left_is_a)]
    if ctx.pairwise and run.both_orders:
        wanted.append((JudgeCall.Purpose.SWAP, not left_is_a))
    if repeat:
        wanted.append((JudgeCall.Purpose.REPEAT, left_is_a))
    jobs = []
    for purpose, order in wanted:
        if (item.id, purpose) in ctx.done:
            continue
        bodies, hashes = _bodies(ctx, _render(ctx, item, order, hint, views))
        jobs.append(
            Job(
                item_id=item.id,
                purpose=purpose,
                left_is_a=order,
                hint_shown=hint,
                seq=seq,
                bodies=bodies,
                hashes=hashes,
                specs=specs_of(views),
            )
        )
    return jobs, len(wanted)


def plan_chunks(
    ctx: PlanContext, *, size: int = 200, first: int | None = None
) -> Iterator[tuple[list[Job], int]]:
    """The run's jobs in chunks of items (keyset pages: no cursor held between chunks), with
    the calls those items need in all: `first` items, then twice as many at each chunk up to
    `size`. The runner starts calling after the first chunk, so a small one gets the first
    requests out early while the later, larger ones keep planning ahead of the calls."""
    run = ctx.run
    items = (
        # Judges never get hidden quality checks (they are for people).
        Item.objects.filter(study=run.study, check_kind="")
        .select_related("question", "response_a", "response_b")
        .order_by("id")
    )
    left = run.limit or None
    seq, last_id = 0, 0
    step = min(first, size) if first else size
    while left is None or left > 0:
        take = step if left is None else min(step, left)
        page = list(items.filter(id__gt=last_id)[:take])
        if not page:
            return
        jobs: list[Job] = []
        n_planned = 0
        for item in page:
            seq += 1
            item_jobs, n = plan_item(ctx, seq, item)
            jobs += item_jobs
            n_planned += n
        last_id = page[-1].id
        if left is not None:
            # "At most N items" counts the items this run judges: ones the judge already
            # judged in another run are passed over, so a second limited run takes the next N.
            left -= sum(1 for item in page if item.id not in ctx.judged_elsewhere)
        step = min(2 * step, size)
        yield jobs, n_planned


def judge_run_plan(*, run: JudgeRun) -> Plan:
    """The work of a run: every (item, purpose) it needs minus what it has already recorded.
    Deterministic (seeded per item), so a resumed run plans the same requests."""
    ctx = plan_context(run)
    plan = plan_head(ctx)
    for jobs, n_planned in plan_chunks(ctx, size=1000):
        plan.pending += jobs
        plan.n_planned += n_planned
    return plan


def estimate_tokens(text: str) -> int:
    """A deliberately high token count: one per non-ASCII character (Chinese runs about 0.7-1.5
    per character), one per four ASCII characters (English runs about four characters each)."""
    non_ascii = len(text) - len(text.encode("ascii", "ignore"))  # not a loop per character
    return non_ascii + (len(text) - non_ascii + 3) // 4


def prompt_tokens(job: Job, json_first: bool) -> int:
    """The estimated input tokens of the request the job sends first."""
    messages = job.bodies[json_first and True in job.bodies]["messages"]
    return sum(estimate_tokens(m["content"]) + 4 for m in messages)


def cached_calls(hashes: list[str]) -> dict[str, JudgeCall]:
    """Earlier answered calls with these request hashes (repeats never serve as a cache)."""
    found: dict[str, JudgeCall] = {}
    for i in range(0, len(hashes), 500):
        for call in (
            JudgeCall.objects.filter(
                request_hash__in=hashes[i : i + 500], status=JudgeCall.Status.OK
            )
            .exclude(purpose=JudgeCall.Purpose.REPEAT)
            .order_by("id")
        ):
            found.setdefault(call.request_hash, call)
    return found
