"""Write workflows of the judges app: `<entity>_<verb>`, keyword-only, atomic.

Configurations, templates and a run's life (create, claim, cancel, finish). Planning a run's
requests is in evaluation/planning.py, executing them in evaluation/runner.py, recording the
answers in evaluation/recording.py.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from decimal import Decimal
from typing import Any, TypedDict, Unpack

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation.models import Rater, Study
from evaluation import prompts
from evaluation.models import JudgeCall, JudgeConfig, JudgeRun, PromptTemplate

# A run whose executor has not written for this long is considered dead and may be resumed.
STALE_AFTER = timedelta(seconds=20)
MAX_BUDGET = Decimal(10) ** 8  # JudgeRun.budget holds 8 digits before the point
MAX_LIMIT = 10_000_000  # a run's "at most N items" (the page's and the API's bound too)
SEEDS = (-(2**31), 2**31 - 1)  # JudgeRun.seed is a 32-bit integer


def cost_of(tokens_in: int, tokens_out: int, price_in: Decimal, price_out: Decimal) -> Decimal:
    """Exactly tokens / 1000 x price per 1k, input plus output (Decimal, no rounding)."""
    return Decimal(tokens_in) / 1000 * Decimal(price_in) + Decimal(tokens_out) / 1000 * Decimal(
        price_out
    )


# --- Judge configurations and templates -----------------------------------------------------


def _name_taken(name: str) -> ValidationError:
    said = _("Another of your raters is already named %(name)s.") % {"name": repr(name)}
    return ValidationError({"name": said})


@transaction.atomic
def judge_config_create(*, name: str, owner=None, **fields: Any) -> JudgeConfig:
    """A judge configuration and its rater (kind and pool "judge", named like the config)."""
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": _("A judge needs a name.")})
    config = JudgeConfig(name=name, owner=owner, **fields)
    config.full_clean(exclude=["rater"])  # the name is free among the owner's judges
    named = Rater.objects.filter(name=name, user__isnull=True, external_id="")
    if named.filter(owner=owner).exists() if owner else named.filter(owner=None).exists():
        raise _name_taken(name)
    config.rater = Rater(kind=Rater.Kind.JUDGE, pool=Rater.Pool.JUDGE, name=name, owner=owner)
    config.rater.save()
    config.save()
    return config


@transaction.atomic
def judge_config_update(*, judge: JudgeConfig, name: str, **fields: Any) -> JudgeConfig:
    """Change a judge that has not run yet (a typo in the model or the URL). Once it has runs,
    their calls, cache and costs belong to the settings they ran with: a new judge instead."""
    judge = JudgeConfig.objects.select_for_update().select_related("rater").get(pk=judge.pk)
    if judge.runs.exists():
        raise ValidationError(
            _(
                "Judge %(name)s has runs, which keep the settings they ran with: create a "
                "new judge for other settings."
            )
            % {"name": repr(judge.name)}
        )
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": _("A judge needs a name.")})
    for key, value in fields.items():
        setattr(judge, key, value)
    judge.name = name
    judge.full_clean(exclude=["rater"])
    named = Rater.objects.filter(name=name, user__isnull=True, external_id="", owner=judge.owner)
    if named.exclude(pk=judge.rater_id).exists():
        raise _name_taken(name)
    judge.rater.name = name
    judge.rater.save(update_fields=["name"])
    judge.save()
    return judge


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
    template = judge.template  # no query when the judge has no template of its own
    if template is None:
        prompts.ensure_builtin_templates()
        key = prompts.DEFAULT_BY_RUBRIC.get(study.rubric.key) or prompts.DEFAULT_BY_MODE[study.mode]
        template = PromptTemplate.objects.get(key=key, builtin=True)
    if template.kind != study.mode:
        said = _("Template %(key)s is for %(kind)s studies, not %(mode)s.")
        said %= {"key": repr(template.key), "kind": template.kind, "mode": study.mode}
        raise ValidationError({"judge": said})
    if misfit := prompts.template_misfit(template, list(study.rubric.criteria.all())):
        raise ValidationError({"judge": misfit})
    return template


# --- Runs -----------------------------------------------------------------------------------


def judge_request_params(judge: JudgeConfig) -> dict[str, Any]:
    """The judge's request settings as a run snapshots them (same requests on resume)."""
    fields = ["model", "base_url", "api_key_env", "temperature", "max_tokens", "seed"]
    fields += ["json_mode", "concurrency", "timeout_s", "max_attempts", "rpm_limit", "tpm_limit"]
    return {f: getattr(judge, f) for f in fields}


BATCH_PRICE_FACTOR = Decimal("0.5")  # OpenAI's Batch API: half the price of live calls


def run_prices(judge: JudgeConfig, mode: str) -> tuple[Decimal, Decimal]:
    """The prices per 1k tokens a run of this judge pays in this mode."""
    factor = BATCH_PRICE_FACTOR if mode == JudgeRun.Mode.BATCH else Decimal(1)
    return judge.price_in_per_1k * factor, judge.price_out_per_1k * factor


class RunOptions(TypedDict, total=False):
    """How a run plans its work: what the pre-flight checks and the run row keeps (the model's
    defaults for what is left out)."""

    both_orders: bool
    repeat_rate: float
    limit: int | None
    seed: int
    mode: str


def judge_run_snapshot(run: JudgeRun) -> JudgeRun:
    """Fill in what a run keeps of its judge when it is made (its template, prices and request
    settings), so a resumed run sends the same requests at the same prices."""
    run.template = template_for_study(judge=run.judge, study=run.study)
    run.price_in_per_1k, run.price_out_per_1k = run_prices(run.judge, run.mode)
    run.params = judge_request_params(run.judge)
    return run


def refuse_second_active_run(*, study: Study, judge: JudgeConfig, run: JudgeRun | None = None):
    """ValidationError when another run of this judge on this study is active (queued or
    running). Two active runs would send the same requests side by side and pay for each twice
    (the cache reuses a call only once it was answered). The judge's row is locked until the
    caller's transaction ends, so two starts at the same moment (a double click) are checked one
    after the other. Call it inside the transaction that makes `run` (or another) active."""
    JudgeConfig.objects.select_for_update().filter(pk=judge.pk).exists()
    active = JudgeRun.objects.filter(study=study, judge=judge, status__in=JudgeRun.ACTIVE)
    if run is not None:
        active = active.exclude(pk=run.pk)
    if (first := active.order_by("pk").first()) is not None:
        raise ValidationError(
            _("Run %(run)s of this judge on this study is still active: cancel or resume it first.")
            % {"run": first.pk}
        )


def judge_run_options_check(
    *, study: Study, budget: Decimal | None = None, **options: Unpack[RunOptions]
) -> None:
    """Refuse run options no run may have (ValidationError by field), before anything is
    estimated or asked of the server: the command line has no form to bound them."""
    run = JudgeRun(study=study, budget=budget, **options)
    if run.both_orders and study.mode != "pairwise":
        raise ValidationError({"both_orders": _("Both orders apply to pairwise studies only.")})
    if not 0 <= run.repeat_rate <= 0.5:
        raise ValidationError({"repeat_rate": _("The repeat rate must be between 0 and 0.5.")})
    if run.limit is not None and run.limit < 1:
        raise ValidationError({"limit": _("The limit must be at least 1.")})
    if run.limit is not None and run.limit > MAX_LIMIT:  # the command line has no form
        said = _("The limit must be at most %(max)s items.") % {"max": MAX_LIMIT}
        raise ValidationError({"limit": said})
    if not SEEDS[0] <= run.seed <= SEEDS[1]:
        said = _("The seed must be between %(min)s and %(max)s.")
        raise ValidationError({"seed": said % {"min": SEEDS[0], "max": SEEDS[1]}})
    if budget is not None and not (budget.is_finite() and 0 <= budget < MAX_BUDGET):
        said = _("The budget must be between 0 and %(max)s.") % {"max": MAX_BUDGET - 1}
        raise ValidationError({"budget": said})
    if run.mode not in JudgeRun.Mode.values:
        raise ValidationError({"mode": _("Unknown run mode.")})


@transaction.atomic
def judge_run_create(
    *,
    study: Study,
    judge: JudgeConfig,
    created_by=None,
    budget: Decimal | None = None,
    cost_estimate: Decimal | None = None,
    **options: Unpack[RunOptions],
) -> JudgeRun:
    """The run row. Callers that spend money go through launch.judge_run_start (pre-flight)."""
    judge_run_options_check(study=study, budget=budget, **options)
    run = JudgeRun(study=study, judge=judge, created_by=created_by, budget=budget, **options)
    if not study.items.exists():
        raise ValidationError({"study": _("The study has no items to judge.")})
    refuse_second_active_run(study=study, judge=judge)
    run.cost_estimate = cost_estimate
    judge_run_snapshot(run).save()
    return run


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _executor_dead(run: JudgeRun, now) -> bool:
    host, _colon, pid = (run.worker or "").rpartition(":")
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
            said = _("The run is %(status)s; nothing to cancel.")
            raise ValidationError(said % {"status": run.get_status_display()})
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
    # Imported here: the statistics stack (scipy, numba) costs a judge process a second or two
    # of CPU at start-up, and only this last step needs it.
    from ranking.warm import reports_warm

    reports_warm([run.study_id])  # the study's report, queued when it is large
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


def backoff_base() -> float:
    return float(os.environ.get("JUDGE_BACKOFF_BASE", getattr(settings, "JUDGE_BACKOFF_BASE", 1.0)))
