"""Organizer pages about one study: list, create, edit a draft, launch / pause / close (close
asks for confirmation), live progress and the crowd / public links. Organizers only, and only
their own studies."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from annotation import engine
from annotation.forms import StudyForm
from annotation.htmx import HtmxHttpRequest
from annotation.models import Study
from annotation.permissions import get_study_for_organizer, organizer_required, studies_for
from annotation.selectors import study_questions_without_criteria
from annotation.services import study_create, study_set_status, study_update

STATUS_ACTIONS = {
    "launch": Study.Status.LIVE,
    "pause": Study.Status.PAUSED,
    "close": Study.Status.CLOSED,
}


def study_links(request: HttpRequest, study: Study) -> dict[str, str]:
    """Entry URLs to hand out: Prolific and MTurk templates (the platforms fill the {{...}}
    placeholders or add the parameters themselves), the public page and the onsite start page."""
    base = request.build_absolute_uri(reverse("annotate:crowd", args=[study.public_id]))
    return {
        "onsite": request.build_absolute_uri(reverse("annotate:study", args=[study.public_id])),
        "prolific": base + "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
        "&SESSION_ID={{%SESSION_ID%}}",
        "mturk": base,
        "public": request.build_absolute_uri(reverse("annotate:join", args=[study.public_id])),
    }


@organizer_required
@require_GET
def study_list(request: HttpRequest) -> HttpResponse:
    studies = studies_for(request.user).select_related("dataset", "rubric")
    return render(request, "annotation/organizer/study_list.html", {"studies": studies})


def _add_service_errors(form: StudyForm, error: ValidationError) -> None:
    if hasattr(error, "error_dict"):
        for field, errs in error.message_dict.items():
            form.add_error(field if field in form.fields else None, errs)
    else:
        form.add_error(None, error.messages)


def _refresh_initial(post) -> dict:
    """The posted values as initial data: "Show this dataset's choices" redraws the form for
    another dataset without validating it (the no-JavaScript path of the pickers)."""
    initial = {k: v for k, v in post.items() if k not in ("csrfmiddlewaretoken", "refresh")}
    for key in ("task_types", "llms"):
        initial[key] = post.getlist(key)
    for key in ("admit_onsite", "admit_crowd", "admit_public"):
        initial[key] = key in post  # an unticked box is absent from the post
    return initial


def _study_form_page(request: HtmxHttpRequest, *, study: Study | None) -> HttpResponse:
    """Create (study None) or edit a draft: one form, one template, the same checks."""
    initial = StudyForm.initial_for(study) if study else {}
    for key in ("dataset", "rubric"):  # after an import, after a new rubric
        if request.GET.get(key):
            initial[key] = request.GET[key]
    refresh = request.method == "POST" and "refresh" in request.POST
    if refresh:
        form = StudyForm(initial=_refresh_initial(request.POST), user=request.user)
    else:
        form = StudyForm(request.POST or None, initial=initial, user=request.user)
    if request.method == "POST" and not refresh and form.is_valid():
        try:
            if study is None:
                study = study_create(owner=request.user, **form.service_kwargs())
            else:
                study = study_update(study=study, **form.service_kwargs())
        except ValidationError as e:
            _add_service_errors(form, e)
        else:
            messages.success(
                request, _("Study saved with %(n)d items.") % {"n": study.items.count()}
            )
            return redirect("organize:study", study_id=study.pk)
    template = "annotation/organizer/study_new.html"
    if request.htmx and request.method == "GET":
        template += "#pickers"
    return render(request, template, {"form": form, "study": study})


def _warn_questions_without_criteria(request: HttpRequest, study: Study) -> None:
    n, first = study_questions_without_criteria(study)
    if n:
        message = _(
            "%(n)d questions (first: %(ids)s) have no criterion in the rubric %(rubric)s: its "
            "criteria are for questions of another kind (LLMEval-2: objective or subjective), so "
            "annotators would see no stars for them and a judge cannot score them. Edit the "
            "study to choose a rubric for every question (e.g. LLMEval-1), or give the questions "
            "a kind in your file and import it again."
        )
        messages.warning(
            request,
            message % {"n": n, "ids": ", ".join(first), "rubric": study.rubric.display_name},
        )


@organizer_required
@require_http_methods(["GET", "POST"])
def study_new(request: HtmxHttpRequest) -> HttpResponse:
    return _study_form_page(request, study=None)


@organizer_required
@require_http_methods(["GET", "POST"])
def study_edit(request: HtmxHttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_organizer(request.user, study_id)
    if study.status != Study.Status.DRAFT:
        messages.error(
            request,
            _("Only a draft study can be edited; this one is %(status)s.")
            % {"status": study.get_status_display()},
        )
        return redirect("organize:study", study_id=study.pk)
    return _study_form_page(request, study=study)


@organizer_required
@require_GET
def study_detail(request: HtmxHttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_organizer(request.user, study_id)
    engine.assignments_expire(study=study)
    context = {
        "study": study,
        "progress": engine.study_progress(study=study),
        "links": study_links(request, study),
    }
    template = "annotation/organizer/study_detail.html"
    if request.htmx:
        template += "#progress"
    else:  # also right after saving: the form redirects here
        _warn_questions_without_criteria(request, study)
    return render(request, template, context)


def _close_confirm(request: HttpRequest, study: Study) -> HttpResponse:
    context = {"study": study, "progress": engine.study_progress(study=study)}
    return render(request, "annotation/organizer/study_close.html", context)


@organizer_required
@require_http_methods(["GET", "POST"])
def study_status(request: HttpRequest, study_id: int, action: str) -> HttpResponse:
    """Launch, pause or close. Closing cannot be undone, so it takes two steps: GET shows what
    closing means and a form; only a POST carrying ``confirm=close`` closes."""
    study = get_study_for_organizer(request.user, study_id)
    if action not in STATUS_ACTIONS:
        raise Http404
    confirming = action == "close" and request.POST.get("confirm") != "close"
    if request.method == "GET" or confirming:
        if action != "close":
            return redirect("organize:study", study_id=study.pk)
        return _close_confirm(request, study)
    try:
        study_set_status(study=study, status=STATUS_ACTIONS[action])
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
    else:
        messages.success(
            request, _("The study is now %(status)s.") % {"status": study.get_status_display()}
        )
    return redirect("organize:study", study_id=study.pk)
