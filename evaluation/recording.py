"""Recording a judge run's answers: the calls, their parses and the ratings they stand for
(through annotation.recording.ratings_record_bulk, shared with importers and the simulator)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from annotation import pgcopy, sqlrows
from annotation.models import Assignment, Rating, Score, Study
from annotation.recording import NewRating, ratings_record_bulk
from evaluation import parsers
from evaluation.models import JudgeCall, JudgeRun
from evaluation.planning import Job, cached_calls, criteria_views, specs_of
from evaluation.services import cost_of, judge_run_recount


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
    if (rating := call.rating) is not None:  # no query when the call has no rating
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
    if call.rating is not None:  # no query when the call has no rating
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
        call.rating_id = row.rating_id  # the id only: no Rating instance built per call
    if pgcopy.available():  # COPY, as ratings_record_bulk writes the ratings on PostgreSQL
        pgcopy.copy_objects(JudgeCall, calls)
    elif sqlrows.available():  # and its prepared INSERTs on SQLite
        sqlrows.insert_objects(JudgeCall, calls)
    else:
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


COUNTERS = [
    "n_done",
    "n_ok",
    "n_parse_failed",
    "n_call_failed",
    "n_cached",
    "tokens_in",
    "tokens_out",
    "cost",
]


def _counted(calls: list[JudgeCall]) -> dict[str, Any]:
    """What newly stored calls add to the run's counters (as judge_run_recount counts them)."""
    return {
        "n_done": len(calls),
        "n_ok": sum(c.parse_status == JudgeCall.Parse.OK for c in calls),
        "n_parse_failed": sum(
            c.status == JudgeCall.Status.OK and c.parse_status == JudgeCall.Parse.FAILED
            for c in calls
        ),
        "n_call_failed": sum(c.status == JudgeCall.Status.FAILED for c in calls),
        "n_cached": sum(c.cached for c in calls),
        "tokens_in": sum(c.tokens_in for c in calls),
        "tokens_out": sum(c.tokens_out for c in calls),
        "cost": sum((c.cost for c in calls), Decimal(0)),
    }


def _new_call(**values: Any) -> JudgeCall:
    """JudgeCall(**values) built as `from_db` builds instances, from every column in order (the
    others get their defaults): matching keyword arguments to fields was a fifth of the
    recorder's CPU per call."""
    return JudgeCall(
        *[
            values.pop(f.attname) if f.attname in values else f.get_default()
            for f in JudgeCall._meta.concrete_fields
        ],
        **values,  # anything left is not a column's attribute name: the model says so
    )


def _call_row(run: JudgeRun, parser: str, o: Outcome) -> JudgeCall:
    """The JudgeCall of one outcome, parsed (unsaved)."""
    source_id = o.cache_source_id
    if o.cached and source_id is None:
        src = cached_calls([o.request_hash]).get(o.request_hash)
        source_id = src.pk if src else None
    call = _new_call(
        run_id=run.pk,
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
    return call


@dataclass
class RunContext:
    """What every batch of a run uses and nothing changes while it runs (the run with its
    judge's rater, study and prices; the rubric's criteria): read once per run by the executor,
    not once per batch (the joined query and the criteria were a third of a 32-call batch)."""

    run: JudgeRun
    criteria: dict[str, tuple[int, int, int]]

    @classmethod
    def load(cls, run_id: int) -> RunContext:
        run = JudgeRun.objects.select_related("judge__rater", "study__rubric").get(pk=run_id)
        return cls(run=run, criteria=_criteria_ids(run.study))


def judge_calls_record(
    *, run_id: int, parser: str, outcomes: list[Outcome], context: RunContext | None = None
) -> dict[str, Any]:
    """Store a batch of finished calls, their parses and ratings, refresh the run's counters
    and heartbeat. Returns the counters and whether a cancel was asked for."""
    with transaction.atomic():
        ctx = context or RunContext.load(run_id)
        run = ctx.run
        if run.pk != run_id:
            raise ValueError(f"the context of run {run.pk} given for run {run_id}")
        calls = [_call_row(run, parser, o) for o in outcomes]
        added: dict[str, Any] | None = _counted(calls)
        if calls:
            try:
                # Errors as Django's (COPY goes past the cursor wrapper that translates them):
                # a row recorded already sends the batch down the careful path.
                with transaction.atomic(), connection.wrap_database_errors:
                    _record_bulk(run=run, calls=calls, criteria=ctx.criteria)
            except IntegrityError:
                _record_one_by_one(run=run, calls=calls, criteria=ctx.criteria)
                added = None  # some were recorded already: count the stored calls again
        runs = JudgeRun.objects.filter(pk=run_id)
        if added is None:
            judge_run_recount(run=run)
            runs.update(heartbeat_at=timezone.now(), **{k: getattr(run, k) for k in COUNTERS})
        else:
            # Incremented in the database, not recounted: a recount reads every call of the
            # run, once per batch. F() keeps a second executor's increments (a forced resume).
            runs.update(heartbeat_at=timezone.now(), **{k: F(k) + v for k, v in added.items()})
        state = runs.values("cancel_requested", "n_planned", *COUNTERS).get()
    return {"cancel": state.pop("cancel_requested"), **state}


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
                else criteria_views(run.study, call.item.question, cache)
            )
            parse_output(run.template.parser, call, specs_of(views))
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


def cached_outcomes(jobs: list[Job], json_first: bool) -> tuple[list[Outcome], list[Job]]:
    """Jobs (not repeats) whose exact request was answered before: reused, paid nothing; and
    the jobs still to call."""
    wanted = [
        j.hashes[json_first and True in j.bodies]
        for j in jobs
        if j.purpose != JudgeCall.Purpose.REPEAT
    ]
    hits = cached_calls(wanted) if wanted else {}
    out: list[Outcome] = []
    remaining = []
    now = timezone.now()
    for job in jobs:
        jm = json_first and True in job.bodies
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
    return out, remaining
