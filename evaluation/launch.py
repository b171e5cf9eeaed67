"""Starting and resuming judge runs: the pre-flight that runs before any money is spent, the cost
estimate, and the services every interface (page, API, command) starts and resumes runs with.

Pre-flight (nothing is written when it fails): the study has items; the key variable is approved
and set in this process; the URL is allowed; the server lists the model on /v1/models (a server
without that endpoint, a 404, is tolerated). The estimate renders the run's real prompts for up
to ESTIMATE_SAMPLE items and scales to the whole run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any, Unpack

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from annotation.models import Assignment, Study
from evaluation import planning, safety, services
from evaluation.models import JudgeConfig, JudgeRun
from evaluation.services import RunOptions
from evaluation.tasks import judge_run_execute

ESTIMATE_SAMPLE = 300  # items whose prompts are rendered for the estimate
MODELS_TIMEOUT = 10.0  # seconds for the /v1/models look-up
MODEL_LIST_ABSENT = (404, 405, 501)  # the server has no model list: tolerated


@dataclass(frozen=True)
class Estimate:
    """What a run will cost, from its prompt sizes: input tokens estimated from characters (a
    tokenizer may count differently), output at most max_tokens per call."""

    items: int
    calls: int
    tokens_in: int
    max_tokens_out: int
    cost_in: Decimal
    cost_out_max: Decimal
    key_env: str
    key_set: bool
    model: str
    model_listed: bool | None  # None: the server offers no model list

    @property
    def total_max(self) -> Decimal:
        return self.cost_in + self.cost_out_max

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total_max": self.total_max}


def run_estimate(
    *, study: Study, judge: JudgeConfig, **options: Unpack[RunOptions]
) -> tuple[int, int, int]:
    """(items, calls, input tokens) of the run, from the prompts it would send."""
    # Judges never get hidden checks, nor items this judge already judged in another run.
    judged = Assignment.objects.filter(study=study, rater=judge.rater, is_repeat=False)
    n_items = study.items.filter(check_kind="").exclude(id__in=judged.values("item_id")).count()
    if limit := options.get("limit"):
        n_items = min(n_items, limit)
    sample = min(n_items, ESTIMATE_SAMPLE)
    if not sample:
        return 0, 0, 0
    # Never saved: judge_run_plan plans an unsaved run as a fresh one.
    draft = JudgeRun(study=study, judge=judge, **{**options, "limit": sample})
    services.judge_run_snapshot(draft)
    plan = planning.judge_run_plan(run=draft)
    tokens = sum(planning.prompt_tokens(job, plan.json_first) for job in plan.pending)
    scale = n_items / sample
    return n_items, round(len(plan.pending) * scale), round(tokens * scale)


def model_check(*, judge: JudgeConfig, key: str) -> tuple[bool | None, str]:
    """(listed, problem): whether /v1/models lists the judge's model (None when the server has
    no model list) and what went wrong, if anything, in words fit to show."""
    import httpx2
    import openai

    http = httpx2.Client(follow_redirects=False, timeout=MODELS_TIMEOUT)
    client = openai.OpenAI(
        base_url=judge.base_url,
        api_key=key,
        max_retries=0,
        timeout=MODELS_TIMEOUT,
        http_client=http,
    )
    try:
        ids = [str(m.id) for m in client.models.list()]
    except openai.APIStatusError as e:
        if e.status_code in MODEL_LIST_ABSENT:
            return None, ""
        if e.status_code in (401, 403):
            return False, _("The server refused the key in %(env)s (HTTP %(code)s).") % {
                "env": judge.api_key_env,
                "code": e.status_code,
            }
        detail = safety.short_error(e.message, secrets=(key,))
        return False, _("The server's model list failed: HTTP %(code)s: %(detail)s") % {
            "code": e.status_code,
            "detail": detail,
        }
    except openai.APIConnectionError as e:
        detail = safety.short_error(e.__cause__ or e, secrets=(key,))
        return False, _("Cannot reach %(url)s: %(detail)s") % {
            "url": judge.base_url,
            "detail": detail,
        }
    except (openai.APIError, ValueError, TypeError, AttributeError, RecursionError):
        # A 200 that is not a model list (or JSON nested deeper than the stack): the server
        # offers none we can read.
        return None, ""
    finally:
        client.close()
    if judge.model in ids:
        return True, ""
    offered = safety.short_error(", ".join(ids[:20]) or "-", limit=200)
    return False, _("The server does not offer the model %(model)s; it offers: %(offered)s") % {
        "model": judge.model,
        "offered": offered,
    }


def judge_run_preflight(
    *,
    study: Study,
    judge: JudgeConfig,
    **options: Unpack[RunOptions],
) -> Estimate:
    """Everything that must hold before a run may spend money, and an estimate of its cost
    (half price in Batch API mode). ValidationError (every problem found, by field) when
    anything is wrong."""
    from evaluation import batch  # openai: imported when a run is checked, not at start-up

    # The options first: an impossible limit or seed is refused before anything is estimated
    # or asked of the server.
    services.judge_run_options_check(study=study, **options)
    mode = options.get("mode", JudgeRun.Mode.LIVE)
    errors: dict[str, list[str]] = {}
    if not study.items.exists():
        errors.setdefault("study", []).append(_("The study has no items to judge."))
    key = ""
    try:
        key = safety.api_key(judge.api_key_env)
        safety.check_base_url(judge.base_url)
        safety.check_key_host(judge.api_key_env, judge.base_url)
    except ValidationError as e:
        errors.setdefault("judge", []).extend(e.messages)
    listed: bool | None = None
    if key and "judge" not in errors:
        listed, problem = model_check(judge=judge, key=key)
        if problem:
            errors.setdefault("judge", []).append(problem)
        elif mode == JudgeRun.Mode.BATCH and not batch.offered(
            base_url=judge.base_url, api_key=key
        ):
            errors.setdefault("mode", []).append(_("This server does not offer the Batch API."))
    if errors:
        raise ValidationError(errors)
    items, calls, tokens_in = run_estimate(study=study, judge=judge, **options)
    max_out = calls * judge.max_tokens
    price_in, price_out = services.run_prices(judge, mode)
    return Estimate(
        items=items,
        calls=calls,
        tokens_in=tokens_in,
        max_tokens_out=max_out,
        cost_in=services.cost_of(tokens_in, 0, price_in, price_out),
        cost_out_max=services.cost_of(0, max_out, price_in, price_out),
        key_env=judge.api_key_env,
        key_set=True,
        model=judge.model,
        model_listed=listed,
    )


def judge_run_start(
    *,
    study: Study,
    judge: JudgeConfig,
    created_by=None,
    budget: Decimal | None = None,
    enqueue: bool = True,
    **options: Unpack[RunOptions],
) -> tuple[JudgeRun, Estimate]:
    """Pre-flight, then the run row, then (unless the caller runs it itself) the queue job."""
    services.judge_run_options_check(study=study, budget=budget, **options)
    estimate = judge_run_preflight(study=study, judge=judge, **options)
    run = services.judge_run_create(
        study=study,
        judge=judge,
        created_by=created_by,
        budget=budget,
        cost_estimate=estimate.total_max,
        **options,
    )
    if enqueue:
        task_id = judge_run_execute.enqueue(run.pk).id
        JudgeRun.objects.filter(pk=run.pk).update(task_id=task_id)
        run.refresh_from_db()
    return run, estimate


def judge_run_resume(*, run: JudgeRun, force: bool = False) -> JudgeRun:
    """Hand an unfinished run to the queue again. A failed run becomes queued at once, so its
    page shows it as active (and keeps refreshing) until an executor claims it."""
    if run.status == JudgeRun.Status.STOPPED:
        raise ValidationError(
            _(
                "The run stopped at its budget; start a new run (with a higher budget) to judge the rest."
            )
        )
    if run.status in JudgeRun.FINISHED:
        raise ValidationError(_("This run is finished; start a new run to judge what is left."))
    try:
        safety.api_key(run.params.get("api_key_env", ""))
        safety.check_base_url(run.params.get("base_url", ""))
        safety.check_key_host(run.params.get("api_key_env", ""), run.params.get("base_url", ""))
    except ValidationError as e:
        raise ValidationError(e.messages) from None
    with transaction.atomic():
        locked = JudgeRun.objects.select_for_update().get(pk=run.pk)
        if locked.status == JudgeRun.Status.FAILED:
            # A failed run comes back only while no other run of its judge on its study is
            # active: both would send the same requests and pay for them twice.
            services.refuse_second_active_run(study=run.study, judge=run.judge, run=run)
            locked.status = JudgeRun.Status.QUEUED
            locked.save(update_fields=["status"])
    judge_run_execute.enqueue(run.pk, force=force)
    run.refresh_from_db()
    return run
