"""Organizer pages for LLM judges: configurations, templates, starting runs, live progress,
cancel / resume / re-parse, failures with their raw output. Organizers only; runs only on
studies they own, judges only their own (superusers see all)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.htmx import HtmxHttpRequest
from annotation.models import Rubric
from annotation.permissions import get_study_for_organizer, organizer_required
from evaluation import launch, recording, safety, selectors, services
from evaluation.forms import JudgeConfigForm, PromptTemplateForm, RunStartForm
from evaluation.models import JudgeConfig, JudgeRun, PromptTemplate


def _errors_to_form(form, e: ValidationError) -> None:
    if hasattr(e, "error_dict"):
        for field, errs in e.message_dict.items():
            form.add_error(field if field in form.fields else None, errs)
    else:
        form.add_error(None, e.messages)


def _get_run(request: HttpRequest, run_id: int) -> JudgeRun:
    """The run, if it belongs to a study this organizer owns; anyone else's is a 404."""
    return get_object_or_404(selectors.runs_for(request.user), pk=run_id)


@organizer_required
@require_GET
def judge_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "evaluation/judge_list.html",
        {
            "judges": services.judges_for(request.user).annotate(
                has_runs=Exists(JudgeRun.objects.filter(judge=OuterRef("pk")))
            ),
            "runs": selectors.runs_for(request.user)[:50],
        },
    )


@organizer_required
@require_http_methods(["GET", "POST"])
def judge_new(request: HttpRequest) -> HttpResponse:
    # Owned before validation: the name is checked among this organizer's judges only.
    mine = JudgeConfig(owner_id=request.user.pk)
    return _judge_form(
        request,
        mine,
        lambda kwargs: services.judge_config_create(owner=request.user, **kwargs),
        _("Judge %(name)s created."),
    )


@organizer_required
@require_http_methods(["GET", "POST"])
def judge_edit(request: HttpRequest, judge_id: int) -> HttpResponse:
    judge = get_object_or_404(services.judges_for(request.user), pk=judge_id)
    if judge.runs.exists():
        messages.error(request, _("This judge has runs: create a new judge for other settings."))
        return redirect("judges:list")
    return _judge_form(
        request,
        judge,
        lambda kwargs: services.judge_config_update(judge=judge, **kwargs),
        _("Judge %(name)s saved."),
        {"judge": judge},
    )


def _judge_form(request, instance, save, done: str, extra: dict | None = None) -> HttpResponse:
    """The judge form (new or edit): ``save(form kwargs)`` through the service, then the list."""
    templates = services.templates_for(request.user)
    form = JudgeConfigForm(request.POST or None, templates=templates, instance=instance)
    if request.method == "POST" and form.is_valid():
        try:
            judge = save(form.service_kwargs())
        except ValidationError as e:
            _errors_to_form(form, e)
        else:
            messages.success(request, done % {"name": judge.name})
            return redirect("judges:list")
    key_envs = [(name, safety.key_is_set(name)) for name in safety.approved_key_envs()]
    context = {"form": form, "key_envs": key_envs, **(extra or {})}
    return render(request, "evaluation/judge_new.html", context)


@organizer_required
@require_http_methods(["GET", "POST"])
def template_list(request: HttpRequest) -> HttpResponse:
    form = PromptTemplateForm(
        request.POST or None, instance=PromptTemplate(owner_id=request.user.pk)
    )
    if request.method == "POST" and form.is_valid():
        try:
            services.prompt_template_create(owner=request.user, **form.cleaned_data)
        except ValidationError as e:
            _errors_to_form(form, e)
        else:
            messages.success(request, _("Template saved."))
            return redirect("judges:templates")
    return render(
        request,
        "evaluation/template_list.html",
        {"templates": services.templates_for(request.user), "form": form},
    )


@organizer_required
@require_http_methods(["GET", "POST"])
def run_start(request: HttpRequest, study_id: int) -> HttpResponse:
    """First POST: pre-flight and cost estimate, shown with a confirm button; the confirmed
    POST checks again and starts the run. Nothing is written until then."""
    study = get_study_for_organizer(request.user, study_id)
    judges = services.judges_for(request.user)
    pairwise = study.mode == Rubric.Mode.PAIRWISE
    form = RunStartForm(request.POST or None, judges=judges, pairwise=pairwise)
    estimate = None
    if request.method == "POST" and form.is_valid():
        options = form.run_options()
        try:
            if form.cleaned_data["confirmed"]:
                run, _estimate = launch.judge_run_start(
                    study=study,
                    created_by=request.user,
                    budget=form.cleaned_data["budget"],
                    **options,
                )
                messages.success(request, _("Judge run started."))
                return redirect("judges:run", run_id=run.pk)
            estimate = launch.judge_run_preflight(study=study, **options)
        except ValidationError as e:
            _errors_to_form(form, e)
        else:
            confirmed = dict(request.POST.items(), confirmed="on")
            form = RunStartForm(confirmed, judges=judges, pairwise=pairwise)
            form.is_valid()
    runs = selectors.runs_for(request.user).filter(study=study)
    context = {"study": study, "form": form, "runs": runs, "estimate": estimate}
    return render(request, "evaluation/run_start.html", context)


@organizer_required
@require_GET
def run_detail(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run = _get_run(request, run_id)
    failures = Paginator(selectors.run_failures(run), 25).get_page(request.GET.get("page"))
    context = {"run": run, "summary": selectors.run_summary(run), "failures": failures}
    template = "evaluation/run_detail.html"
    if request.htmx and request.GET.get("part") == "progress":
        # The failures list goes with the polled counts (swapped out of band by its id).
        progress = render_to_string(template + "#progress", context, request)
        listed = render_to_string(template + "#failures", context | {"failures_oob": True}, request)
        return HttpResponse(progress + listed)
    return render(request, template, context)


def _run_action(request: HttpRequest, run_id: int, action, done: str) -> HttpResponse:
    """Apply a service (cancel, resume) to the run; its refusal or `done` as the message."""
    run = _get_run(request, run_id)
    try:
        action(run=run)
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
    else:
        messages.success(request, done)
    return redirect("judges:run", run_id=run.pk)


@organizer_required
@require_POST
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    done = _("Cancel requested: calls in flight finish, nothing new starts.")
    return _run_action(request, run_id, services.judge_run_cancel, done)


@organizer_required
@require_POST
def run_resume(request: HttpRequest, run_id: int) -> HttpResponse:
    done = _("Run handed to the task queue; it continues where it stopped.")
    return _run_action(request, run_id, launch.judge_run_resume, done)


@organizer_required
@require_POST
def run_reparse(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _get_run(request, run_id)
    if run.is_active:
        messages.error(request, _("Wait for the run to finish (or cancel it) before re-parsing."))
    else:
        result = recording.judge_run_reparse(run=run)
        messages.success(
            request,
            _(
                "Re-parsed without calling the API: %(changed)d changed, %(ok)d parsed, "
                "%(failed)d parse failures."
            )
            % {"changed": result["changed"], "ok": result["ok"], "failed": result["parse_failed"]},
        )
    return redirect("judges:run", run_id=run.pk)
