"""Write workflows of the judges app: `<entity>_<verb>`, keyword-only, atomic."""

from __future__ import annotations

import hashlib
import json
import os
import random
import socket
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from annotation.models import Assignment, Item, Rater, Rating, Score, Study
from annotation.recording import NewRating, ratings_record_bulk
from evaluation import parsers, prompts
from evaluation.models import JudgeCall, JudgeConfig, JudgeRun, PromptTemplate

# A run whose executor has not written for this long is considered dead and may be resumed.
STALE_AFTER = timedelta(seconds=20)
MAX_BUDGET = Decimal(10) ** 8  # JudgeRun.budget holds 8 digits before the point


def cost_of(tokens_in: int, tokens_out: int, price_in: Decimal, price_out: Decimal) -> Decimal:
    """Exactly tokens / 1000 x price per 1k, input plus output (Decimal, no rounding)."""
    return Decimal(tokens_in) / 1000 * Decimal(price_in) + Decimal(tokens_out) / 1000 * Decimal(
        price_out
    )


def request_hash(base_url: str, body: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of the endpoint and the full request body."""
    canonical = json.dumps(
        {"base_url": base_url.rstrip("/"), **body},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# --- Judge configurations and templates -----------------------------------------------------


@transaction.atomic
def judge_config_create(*, name: str, owner=None, **fields: Any) -> JudgeConfig:
    """A judge configuration and its rater (kind and pool "judge", named like the config)."""
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "A judge needs a name."})
    if JudgeConfig.objects.filter(name=name).exists():
        raise ValidationError({"name": f"A judge named {name!r} already exists."})
    if Rater.objects.filter(name=name, user__isnull=True, external_id="").exists():
        raise ValidationError({"name": f"Another rater is already named {name!r}."})
    config = JudgeConfig(name=name, owner=owner, **fields)
    config.rater = Rater(kind=Rater.Kind.JUDGE, pool=Rater.Pool.JUDGE, name=name)
    config.full_clean(exclude=["rater"])
    config.rater.save()
    config.save()
    return config


@transaction.atomic
def prompt_template_create(*, owner=None, **fields: Any) -> PromptTemplate:
    template = PromptTemplate(owner=owner, builtin=False, **fields)
    template.full_clean()
    template.save()
    return template


def judges_for(user):
    qs = JudgeConfig.objects.select_related("rater", "template")
    return qs if user.is_superuser else qs.filter(owner=user)


def templates_for(user):
    qs = PromptTemplate.objects.all()
    return qs if user.is_superuser else qs.filter(Q(builtin=True) | Q(owner=user))


def template_for_study(*, judge: JudgeConfig, study: Study) -> PromptTemplate:
    if judge.template_id:
        template = judge.template
    else:
        prompts.ensure_builtin_templates()
        key = prompts.DEFAULT_BY_RUBRIC.get(study.rubric.key) or prompts.DEFAULT_BY_MODE[study.mode]
        template = PromptTemplate.objects.get(key=key)
    if template.kind != study.mode:
        raise ValidationError(
            {
                "judge": f"Template {template.key!r} is for {template.kind} studies, not {study.mode}."
            }
        )
    return template


# --- Runs -----------------------------------------------------------------------------------


def judge_request_params(judge: JudgeConfig) -> dict[str, Any]:
    """The judge's request settings as a run snapshots them (same requests on resume)."""
    fields = ["model", "base_url", "api_key_env", "temperature", "max_tokens", "seed"]
    fields += ["json_mode", "concurrency", "timeout_s", "max_attempts"]
    return {f: getattr(judge, f) for f in fields}


@transaction.atomic
def judge_run_create(
    *,
    study: Study,
    judge: JudgeConfig,
    created_by=None,
    both_orders: bool = False,
    repeat_rate: float = 0.02,
    limit: int | None = None,
    seed: int = 0,
    budget: Decimal | None = None,
    cost_estimate: Decimal | None = None,
) -> JudgeRun:
    """The run row. Callers that spend money go through launch.judge_run_start (pre-flight)."""
    if both_orders and study.mode != "pairwise":
        raise ValidationError({"both_orders": "Both orders apply to pairwise studies only."})
    if not 0 <= repeat_rate <= 0.5:
        raise ValidationError({"repeat_rate": "The repeat rate must be between 0 and 0.5."})
    if limit is not None and limit < 1:
        raise ValidationError({"limit": "The limit must be at least 1."})
    if budget is not None and not (budget.is_finite() and 0 <= budget < MAX_BUDGET):
        raise ValidationError({"budget": f"The budget must be between 0 and {MAX_BUDGET - 1}."})
    if not study.items.exists():
        raise ValidationError({"study": "The study has no items to judge."})
    active = JudgeRun.objects.filter(study=study, judge=judge, status__in=JudgeRun.ACTIVE)
    if active.exists():
        raise ValidationError(
            f"Run {active.first().pk} of this judge on this study is still active: cancel or "
            "resume it first."
        )
    return JudgeRun.objects.create(
        study=study,
        judge=judge,
        template=template_for_study(judge=judge, study=study),
        both_orders=both_orders,
        repeat_rate=repeat_rate,
        limit=limit,
        seed=seed,
        created_by=created_by,
        price_in_per_1k=judge.price_in_per_1k,
        price_out_per_1k=judge.price_out_per_1k,
        budget=budget,
        cost_estimate=cost_estimate,
        params=judge_request_params(judge),
    )


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _executor_dead(run: JudgeRun, now) -> bool:
    host, _, pid = (run.worker or "").rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        if int(pid) != os.getpid():
            return False
    return run.heartbeat_at is None or now - run.heartbeat_at > STALE_AFTER


def judge_run_claim(*, run_id: int, force: bool = False) -> JudgeRun | None:
    """Mark the run as running in this process. Returns None when there is nothing to do (the
    run is finished) or another live executor holds it; queued runs, runs whose executor died
    (kill -9, a lost worker) and, with force, any unfinished run are claimed."""
    now = timezone.now()
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().get(pk=run_id)
        if run.status in JudgeRun.FINISHED:
            return None
        if run.status == JudgeRun.Status.RUNNING and not force and not _executor_dead(run, now):
            return None
        run.status = JudgeRun.Status.RUNNING
        run.worker = _worker_id()
        run.heartbeat_at = now
        run.started_at = run.started_at or now
        run.error = ""
        run.save(update_fields=["status", "worker", "heartbeat_at", "started_at", "error"])
    return run


def judge_run_cancel(*, run: JudgeRun) -> JudgeRun:
    """Ask the executor to stop; a queued run (or one whose executor is gone) stops at once."""
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().get(pk=run.pk)
        if not run.is_active:
            raise ValidationError(f"The run is {run.get_status_display()}; nothing to cancel.")
        run.cancel_requested = True
        fields = ["cancel_requested"]
        if run.status == JudgeRun.Status.QUEUED or _executor_dead(run, timezone.now()):
            run.status = JudgeRun.Status.CANCELLED
            run.finished_at = timezone.now()
            fields += ["status", "finished_at"]
        run.save(update_fields=fields)
    return run


def judge_run_finish(*, run_id: int, status: str, error: str = "") -> JudgeRun:
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().get(pk=run_id)
        judge_run_recount(run=run)
        run.status = status
        run.error = error[:5000]
        run.finished_at = timezone.now()
        run.heartbeat_at = run.finished_at
        run.save()
    return run


def judge_run_recount(*, run: JudgeRun) -> JudgeRun:
    """Counters from the calls themselves, so they are right after a crash or a re-parse."""
    agg = run.calls.aggregate(
        done=Count("id"),
        ok=Count("id", filter=Q(parse_status=JudgeCall.Parse.OK)),
        parse_failed=Count(
            "id", filter=Q(status=JudgeCall.Status.OK, parse_status=JudgeCall.Parse.FAILED)
        ),
        call_failed=Count("id", filter=Q(status=JudgeCall.Status.FAILED)),
        cached=Count("id", filter=Q(cached=True)),
        tokens_in=Sum("tokens_in"),
        tokens_out=Sum("tokens_out"),
        cost=Sum("cost"),
    )
    run.n_done = agg["done"]
    run.n_ok = agg["ok"]
    run.n_parse_failed = agg["parse_failed"]
    run.n_call_failed = agg["call_failed"]
    run.n_cached = agg["cached"]
    run.tokens_in = agg["tokens_in"] or 0
    run.tokens_out = agg["tokens_out"] or 0
    run.cost = agg["cost"] or Decimal(0)
    return run


# --- Planning -------------------------------------------------------------------------------


@dataclass
class Job:
    """One (item, purpose) of a run with its request, in JSON mode and in text mode."""

    item_id: int
    purpose: str
    left_is_a: bool
    hint_shown: bool
    seq: int
    bodies: dict[bool, dict[str, Any]]
    hashes: dict[bool, str]
    specs: list[parsers.Spec] = field(default_factory=list)


@dataclass
class Plan:
    run_id: int
    params: dict[str, Any]
    parser: str
    n_planned: int
    pending: list[Job]
    json_first: bool


def _criteria_views(study: Study, question, cache: dict) -> list:
    key = (question.kind, question.answer_type)
    if key not in cache:
        cache[key] = [prompts.CriterionView.of(c) for c in study.rubric.criteria_for(question)]
    return cache[key]


def _specs(views) -> list[parsers.Spec]:
    return [
        parsers.Spec(key=c.key, labels=(c.label_en, c.label_zh), lo=c.min_score, hi=c.max_score)
        for c in views
    ]


def _hint_for(study: Study, rng: random.Random) -> bool:
    if study.hint_policy == Study.HintPolicy.SHOWN:
        return True
    if study.hint_policy == Study.HintPolicy.RANDOM:
        return rng.random() < 0.5
    return False


def judge_run_plan(*, run: JudgeRun) -> Plan:
    """The work of a run: every (item, purpose) it needs minus what it has already recorded.
    Deterministic (seeded per item), so a resumed run plans the same requests."""
    study, template, params = run.study, run.template, run.params
    rater = run.judge.rater
    pairwise = study.mode == "pairwise"
    json_first = params.get("json_mode", "auto") != "off" and bool(template.json_instructions)
    always_reference = prompts.uses_reference(template)
    items = (
        Item.objects.filter(study=study)
        .select_related("question", "response_a", "response_b")
        .order_by("id")
    )
    if run.limit:
        items = items[: run.limit]
    # An unsaved run (the pre-flight's estimate) has recorded nothing yet.
    recorded = JudgeCall.objects.filter(run=run) if run.pk else JudgeCall.objects.none()
    judged_elsewhere = set(
        Assignment.objects.filter(study=study, rater=rater, is_repeat=False).values_list(
            "item_id", flat=True
        )
    ) - set(recorded.filter(purpose=JudgeCall.Purpose.PRIMARY).values_list("item_id", flat=True))
    done = set(recorded.values_list("item_id", "purpose"))
    cache: dict = {}
    jobs: list[Job] = []
    n_planned = 0
    for seq, item in enumerate(items, start=1):
        if item.id in judged_elsewhere:
            continue
        rng = random.Random(f"{run.seed}:{item.id}")
        left_is_a = (rng.random() < 0.5) if pairwise else True
        repeat = rng.random() < run.repeat_rate
        hint = _hint_for(study, rng) and bool(item.question.reference)
        if always_reference:
            hint = bool(item.question.reference)
        views = [] if pairwise else _criteria_views(study, item.question, cache)
        wanted = [(JudgeCall.Purpose.PRIMARY, left_is_a)]
        if pairwise and run.both_orders:
            wanted.append((JudgeCall.Purpose.SWAP, not left_is_a))
        if repeat:
            wanted.append((JudgeCall.Purpose.REPEAT, left_is_a))
        n_planned += len(wanted)
        for purpose, order in wanted:
            if (item.id, purpose) in done:
                continue
            if pairwise:
                first, second = (
                    (item.response_a, item.response_b)
                    if order
                    else (item.response_b, item.response_a)
                )
                ctx = prompts.render_context(
                    question=item.question,
                    criteria=[],
                    answer_1=first.text,
                    answer_2=second.text,
                    hint_shown=hint,
                    hint_format=template.hint_format,
                )
            else:
                ctx = prompts.render_context(
                    question=item.question,
                    criteria=views,
                    answer=item.response_a.text,
                    hint_shown=hint,
                    hint_format=template.hint_format,
                )
            bodies, hashes = {}, {}
            for json_mode in {json_first, False}:
                body: dict[str, Any] = {
                    "model": params["model"],
                    "messages": prompts.render_messages(template, ctx, json_mode=json_mode),
                    "temperature": params["temperature"],
                    "max_tokens": params["max_tokens"],
                }
                if params.get("seed") is not None:
                    body["seed"] = params["seed"]
                if json_mode:
                    body["response_format"] = {"type": "json_object"}
                bodies[json_mode] = body
                hashes[json_mode] = request_hash(params["base_url"], body)
            jobs.append(
                Job(
                    item_id=item.id,
                    purpose=purpose,
                    left_is_a=order,
                    hint_shown=hint,
                    seq=seq,
                    bodies=bodies,
                    hashes=hashes,
                    specs=_specs(views),
                )
            )
    return Plan(
        run_id=run.pk,
        params=params,
        parser=template.parser,
        n_planned=n_planned,
        pending=jobs,
        json_first=json_first,
    )


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


# --- Recording results ----------------------------------------------------------------------


@dataclass
class Outcome:
    job: Job
    json_mode: bool
    status: str
    raw: str = ""
    finish_reason: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: int | None = None
    attempts: int = 0
    http_status: int | None = None
    error: str = ""
    started_at: Any = None
    finished_at: Any = None
    cached: bool = False
    cache_source_id: int | None = None

    @property
    def request_hash(self) -> str:
        return self.job.hashes[self.json_mode]


def parse_output(parser: str, call: JudgeCall, specs: list[parsers.Spec]) -> None:
    """Fill the call's parse fields from its raw output. Never invents a number."""
    if call.status != JudgeCall.Status.OK:
        call.parse_status, call.parse_error, call.parsed = JudgeCall.Parse.NONE, "", None
        return
    try:
        call.parsed = parsers.parse(parser, call.raw_output, specs, left_is_a=call.left_is_a)
        call.parse_status, call.parse_error = JudgeCall.Parse.OK, ""
    except parsers.ParseError as e:
        reason = str(e)
        if call.finish_reason == "length":
            reason = f"truncated output (finish_reason=length): {reason}"
        call.parsed, call.parse_status, call.parse_error = None, JudgeCall.Parse.FAILED, reason


def _criteria_ids(study: Study) -> dict[str, tuple[int, int, int]]:
    return {c.key: (c.id, c.min_score, c.max_score) for c in study.rubric.criteria.all()}


def _rating_for_call(*, call: JudgeCall, run: JudgeRun, criteria: dict) -> Rating | None:
    """Create (or refresh) the rating a parsed primary or repeat call stands for."""
    rater = run.judge.rater
    parsed = call.parsed or {}
    if call.purpose == JudgeCall.Purpose.SWAP:
        return None
    if call.rating_id:
        rating = call.rating
        rating.choice = parsed.get("choice", "")
        rating.updated_at = timezone.now()
        rating.save(update_fields=["choice", "updated_at"])
        rating.scores.all().delete()
    else:
        repeat_of = None
        first = (
            Assignment.objects.filter(item_id=call.item_id, rater=rater, is_repeat=False)
            .select_related("rating")
            .first()
        )
        if call.purpose == JudgeCall.Purpose.REPEAT:
            if first is None:
                return None  # the primary was not judged: nothing to repeat
            repeat_of = first
        elif first is not None:
            return None  # this judge already rated the item (an earlier run)
        assignment = Assignment.objects.create(
            study_id=run.study_id,
            item_id=call.item_id,
            rater=rater,
            seq=call.item_id,
            status=Assignment.Status.SUBMITTED,
            left_is_a=call.left_is_a,
            hint_shown=call.hint_shown,
            is_repeat=repeat_of is not None,
            repeat_of=repeat_of,
            served_at=call.started_at or call.finished_at,
            submitted_at=call.finished_at,
            active_ms=call.latency_ms,
        )
        rating = Rating.objects.create(
            assignment=assignment,
            item_id=call.item_id,
            rater=rater,
            choice=parsed.get("choice", ""),
            created_at=call.finished_at,
            updated_at=call.finished_at,
        )
    scores = []
    for key, value in (parsed.get("scores") or {}).items():
        cid, lo, hi = criteria[key]
        if not lo <= int(value) <= hi:  # parsers check this too; the database gets no stray value
            raise ValidationError(f"{key}={value} is outside {lo}-{hi}")
        scores.append(Score(rating=rating, criterion_id=cid, value=int(value)))
    Score.objects.bulk_create(scores)
    return rating


def _drop_rating(call: JudgeCall) -> None:
    if call.rating_id:
        assignment = call.rating.assignment
        call.rating = None
        call.save(update_fields=["rating"])
        assignment.delete()


def _scores_checked(call: JudgeCall, criteria: dict) -> dict[int, int]:
    scores = {}
    for key, value in ((call.parsed or {}).get("scores") or {}).items():
        cid, lo, hi = criteria[key]
        if not lo <= int(value) <= hi:  # parsers check this too; no stray value gets in
            raise ValidationError(f"{key}={value} is outside {lo}-{hi}")
        scores[cid] = int(value)
    return scores


def _record_bulk(*, run: JudgeRun, calls: list[JudgeCall], criteria: dict) -> None:
    """The fast path: the shared ratings_record_bulk writes assignments, ratings and scores in a
    few multi-row INSERTs per batch; then the calls."""
    rater = run.judge.rater
    firsts: dict[int, int | NewRating] = {
        item_id: pk
        for pk, item_id in Assignment.objects.filter(
            rater=rater, is_repeat=False, item_id__in={c.item_id for c in calls}
        ).values_list("pk", "item_id")
    }
    rated: list[tuple[JudgeCall, NewRating]] = []
    for purpose in (JudgeCall.Purpose.PRIMARY, JudgeCall.Purpose.REPEAT):
        for call in calls:
            if call.purpose != purpose or call.parse_status != JudgeCall.Parse.OK:
                continue
            first = firsts.get(call.item_id)
            if purpose == JudgeCall.Purpose.PRIMARY and first is not None:
                continue  # this judge already rated the item (an earlier run)
            if purpose == JudgeCall.Purpose.REPEAT and first is None:
                continue  # the primary was not judged: nothing to repeat
            row = NewRating(
                study_id=run.study_id,
                item_id=call.item_id,
                rater_id=rater.pk,
                seq=call.item_id,
                choice=(call.parsed or {}).get("choice", ""),
                scores=_scores_checked(call, criteria),
                left_is_a=call.left_is_a,
                hint_shown=call.hint_shown,
                is_repeat=purpose == JudgeCall.Purpose.REPEAT,
                repeat_of_id=first if isinstance(first, int) else None,
                repeat_of=first if isinstance(first, NewRating) else None,
                served_at=call.started_at or call.finished_at,
                submitted_at=call.finished_at,
                active_ms=call.latency_ms,
            )
            rated.append((call, row))
            if purpose == JudgeCall.Purpose.PRIMARY:
                firsts[call.item_id] = row
    ratings_record_bulk(rows=[row for _, row in rated])
    for call, row in rated:
        call.rating = row.rating
    JudgeCall.objects.bulk_create(calls)


def _record_one_by_one(*, run: JudgeRun, calls: list[JudgeCall], criteria: dict) -> None:
    """The careful path, when the batch collides with rows another executor wrote."""
    for call in calls:
        call.pk, call.rating = None, None
        try:
            with transaction.atomic():
                call.save()
                if call.parse_status == JudgeCall.Parse.OK:
                    call.rating = _rating_for_call(call=call, run=run, criteria=criteria)
                    if call.rating is not None:
                        call.save(update_fields=["rating"])
        except IntegrityError:
            continue  # already recorded: the unique constraint keeps one


def judge_calls_record(*, run_id: int, parser: str, outcomes: list[Outcome]) -> dict[str, Any]:
    """Store a batch of finished calls, their parses and ratings, refresh the run's counters
    and heartbeat. Returns the counters and whether a cancel was asked for."""
    with transaction.atomic():
        run = JudgeRun.objects.select_related("judge__rater", "study__rubric").get(pk=run_id)
        criteria = _criteria_ids(run.study) if outcomes else {}
        calls = []
        for o in outcomes:
            source_id = o.cache_source_id
            if o.cached and source_id is None:
                src = cached_calls([o.request_hash]).get(o.request_hash)
                source_id = src.pk if src else None
            call = JudgeCall(
                run_id=run_id,
                item_id=o.job.item_id,
                purpose=o.job.purpose,
                left_is_a=o.job.left_is_a,
                hint_shown=o.job.hint_shown,
                request_hash=o.request_hash,
                request=o.job.bodies[o.json_mode],
                status=o.status,
                error=o.error[:5000],
                http_status=o.http_status,
                attempts=o.attempts,
                cached=o.cached,
                cache_source_id=source_id,
                raw_output=o.raw,
                finish_reason=o.finish_reason or "",
                tokens_in=o.tokens_in,
                tokens_out=o.tokens_out,
                cost=cost_of(o.tokens_in, o.tokens_out, run.price_in_per_1k, run.price_out_per_1k),
                latency_ms=o.latency_ms,
                started_at=o.started_at,
                finished_at=o.finished_at or timezone.now(),
            )
            parse_output(parser, call, o.job.specs)
            calls.append(call)
        if calls:
            try:
                with transaction.atomic():
                    _record_bulk(run=run, calls=calls, criteria=criteria)
            except IntegrityError:
                _record_one_by_one(run=run, calls=calls, criteria=criteria)
        judge_run_recount(run=run)
        run.heartbeat_at = timezone.now()
        run.save(
            update_fields=[
                "n_done",
                "n_ok",
                "n_parse_failed",
                "n_call_failed",
                "n_cached",
                "tokens_in",
                "tokens_out",
                "cost",
                "heartbeat_at",
            ]
        )
    return {
        "cancel": run.cancel_requested,
        "n_planned": run.n_planned,
        "n_done": run.n_done,
        "n_ok": run.n_ok,
        "n_parse_failed": run.n_parse_failed,
        "n_call_failed": run.n_call_failed,
        "n_cached": run.n_cached,
        "tokens_in": run.tokens_in,
        "tokens_out": run.tokens_out,
        "cost": run.cost,
    }


def judge_run_reparse(*, run: JudgeRun) -> dict[str, int]:
    """Run the parser again over every stored output, without calling the API; ratings follow
    (created, updated, or removed when an output no longer parses)."""
    changed = 0
    with transaction.atomic():
        run = JudgeRun.objects.select_related("judge__rater", "study__rubric", "template").get(
            pk=run.pk
        )
        criteria = _criteria_ids(run.study)
        cache: dict = {}
        calls = run.calls.filter(status=JudgeCall.Status.OK).select_related(
            "item__question", "rating"
        )
        for call in calls:
            before = (call.parse_status, call.parse_error, call.parsed)
            views = (
                []
                if run.study.mode == "pairwise"
                else _criteria_views(run.study, call.item.question, cache)
            )
            parse_output(run.template.parser, call, _specs(views))
            if (call.parse_status, call.parse_error, call.parsed) != before:
                changed += 1
            call.save(update_fields=["parse_status", "parse_error", "parsed"])
            if call.parse_status == JudgeCall.Parse.OK:
                rating = _rating_for_call(call=call, run=run, criteria=criteria)
                if rating is not None and call.rating_id != rating.pk:
                    call.rating = rating
                    call.save(update_fields=["rating"])
            else:
                _drop_rating(call)
        judge_run_recount(run=run)
        run.save()
    return {"changed": changed, "ok": run.n_ok, "parse_failed": run.n_parse_failed}


def backoff_base() -> float:
    return float(os.environ.get("JUDGE_BACKOFF_BASE", getattr(settings, "JUDGE_BACKOFF_BASE", 1.0)))
