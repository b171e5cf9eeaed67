"""Onsite annotator accounts: create one or many, re-issue an invitation, deactivate or
reactivate. The page lists accounts by username (an organizer needs it to manage them) and never
shows the pseudonym that the study pages, reports and exports use: putting the two side by side
would undo the pseudonymisation."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from annotation.forms import AnnotatorCreateForm, BulkAnnotatorsForm
from annotation.permissions import organizer_required
from annotation.roster import (
    invite_reissue,
    onsite_annotator_create,
    onsite_annotator_set_active,
    onsite_annotators_bulk_create,
    onsite_annotators_for,
)


def _page(request: HttpRequest, **context) -> HttpResponse:
    context.setdefault("form", AnnotatorCreateForm())
    context.setdefault("bulk_form", BulkAnnotatorsForm())
    context["raters"] = onsite_annotators_for(request.user).order_by("user__username")
    return render(request, "annotation/organizer/annotators.html", context)


@never_cache
@organizer_required
@require_http_methods(["GET", "POST"])
def annotators(request: HttpRequest) -> HttpResponse:
    form = AnnotatorCreateForm(request.POST or None)
    invite_url = ""
    if request.method == "POST" and form.is_valid():
        _rater, invite = onsite_annotator_create(
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
    return _page(request, form=form, invite_url=invite_url)


@never_cache  # generated passwords are in this response and nowhere else
@organizer_required
@require_POST
def annotators_bulk(request: HttpRequest) -> HttpResponse:
    form = BulkAnnotatorsForm(request.POST)
    created = []
    if form.is_valid():
        try:
            created = onsite_annotators_bulk_create(
                text=form.cleaned_data["names"],
                invited_by=request.user,
                invite=form.cleaned_data["access"] == "invite",
            )
        except ValidationError as e:
            form.add_error("names", e.messages)
    if not created:
        return _page(request, bulk_form=form, bulk_open=True)
    accounts = [
        {
            "username": a.username,
            "password": a.password,
            "invite_url": request.build_absolute_uri(a.invite_path) if a.invite_path else "",
        }
        for a in created
    ]
    messages.success(request, _("%(n)d accounts created.") % {"n": len(created)})
    return _page(request, accounts=accounts)


def _own_rater(request: HttpRequest, rater_id: int):
    """Someone else's annotator is a 404, like someone else's study."""
    return get_object_or_404(onsite_annotators_for(request.user), pk=rater_id)


@never_cache
@organizer_required
@require_POST
def annotator_invite(request: HttpRequest, rater_id: int) -> HttpResponse:
    rater = _own_rater(request, rater_id)
    invite_url = request.build_absolute_uri(invite_reissue(rater=rater, by=request.user))
    messages.success(
        request,
        _("New invitation for %(name)s: earlier links and the old password no longer work.")
        % {"name": rater.user.get_username()},
    )
    return _page(request, invite_url=invite_url)


@organizer_required
@require_POST
def annotator_active(request: HttpRequest, rater_id: int) -> HttpResponse:
    rater = _own_rater(request, rater_id)
    active = request.POST.get("active") == "1"
    onsite_annotator_set_active(rater=rater, active=active, by=request.user)
    name = rater.user.get_username()
    if active:
        messages.success(request, _("%(name)s can sign in again.") % {"name": name})
    else:
        messages.success(request, _("%(name)s is deactivated.") % {"name": name})
    return redirect("organize:annotators")
