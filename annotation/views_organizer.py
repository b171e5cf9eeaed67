"""Organizer pages: study list, create a study, launch / pause / close, live progress, onsite
annotator accounts and the crowd / public links. Organizers only, and only their own studies."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import engine
from annotation.forms import AnnotatorCreateForm, StudyForm
from annotation.models import Rater, Study
from annotation.permissions import get_study_for_organizer, organizer_required, studies_for
from annotation.services import study_create, study_set_status

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


@transaction.atomic
def onsite_annotator_create(*, username: str, password: str, invited_by) -> tuple[Rater, str]:
    """An account for an onsite annotator. Without a password the account gets an unusable one
    and the invitation path (uid/token) to set it is returned."""
    user = get_user_model().objects.create_user(username=username, password=password or None)
    rater = Rater.objects.create(
        kind=Rater.Kind.HUMAN, pool=Rater.Pool.ONSITE, user=user, invited_by=invited_by
    )
    invite = ""
    if not password:
        uid = urlsafe_base64_encode(force_bytes(user.pk))
        invite = reverse("annotate:invite", args=[uid, default_token_generator.make_token(user)])
    return rater, invite


def onsite_annotators_for(user):
    qs = Rater.objects.filter(pool=Rater.Pool.ONSITE).select_related("user")
    return qs if user.is_superuser else qs.filter(invited_by=user)


@organizer_required
@require_GET
def study_list(request: HttpRequest) -> HttpResponse:
    studies = studies_for(request.user).select_related("dataset", "rubric")
    return render(request, "annotation/organizer/study_list.html", {"studies": studies})


@organizer_required
@require_http_methods(["GET", "POST"])
def study_new(request: HttpRequest) -> HttpResponse:
    form = StudyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            study = study_create(owner=request.user, **form.service_kwargs())
        except ValidationError as e:
            if hasattr(e, "error_dict"):
                for field, errs in e.message_dict.items():
                    form.add_error(field if field in form.fields else None, errs)
            else:
                form.add_error(None, e.messages)
        else:
            messages.success(
                request, _("Study created with %(n)d items.") % {"n": study.items.count()}
            )
            return redirect("organize:study", study_id=study.pk)
    return render(request, "annotation/organizer/study_new.html", {"form": form})


@organizer_required
@require_GET
def study_detail(request: HttpRequest, study_id: int) -> HttpResponse:
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
    return render(request, template, context)


@organizer_required
@require_POST
def study_status(request: HttpRequest, study_id: int, action: str) -> HttpResponse:
    study = get_study_for_organizer(request.user, study_id)
    if action not in STATUS_ACTIONS:
        return HttpResponse(status=404)
    try:
        study_set_status(study=study, status=STATUS_ACTIONS[action])
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
    else:
        messages.success(
            request, _("The study is now %(status)s.") % {"status": study.get_status_display()}
        )
    return redirect("organize:study", study_id=study.pk)


@organizer_required
@require_http_methods(["GET", "POST"])
def annotators(request: HttpRequest) -> HttpResponse:
    form = AnnotatorCreateForm(request.POST or None)
    invite_url = ""
    if request.method == "POST" and form.is_valid():
        rater, invite = onsite_annotator_create(
            username=form.cleaned_data["username"],
            password=form.cleaned_data["password"],
            invited_by=request.user,
        )
        if invite:
            invite_url = request.build_absolute_uri(invite)
            messages.success(request, _("Account created: send the invitation link below."))
        else:
            messages.success(request, _("Account created."))
        form = AnnotatorCreateForm()
    return render(
        request,
        "annotation/organizer/annotators.html",
        {"form": form, "raters": onsite_annotators_for(request.user), "invite_url": invite_url},
    )
